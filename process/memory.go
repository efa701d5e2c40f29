package process

import (
	"runtime/debug"

	"go.uber.org/zap"
)

// releaseMemory is called by the collector once the cluster is listed and
// reconciled. The initial list is the peak of its life: the Go heap grew to
// twice what it had to decode, and starting touched the package
// initialisers of everything linked into the binary (the sinks, the cloud
// clients, the embedded server), which the collector never runs. Both stay
// resident unless given back: the heap by debug.FreeOSMemory, the pages of
// the executable by releaseStartupPages.
func releaseMemory(log *zap.Logger, pages bool) {
	debug.FreeOSMemory()
	if !pages {
		return
	}
	n, err := releaseStartupPages()
	if err != nil {
		log.Debug("executable pages not released", zap.Error(err))
		return
	}
	log.Debug("executable pages released", zap.Int("bytes", n))
}
