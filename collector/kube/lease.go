package kube

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// elect campaigns for the Lease and runs a session while it holds it. When
// the Lease is lost, the session stops (nothing more is published) and the
// replica campaigns again. The Lease is the only object the collector ever
// writes.
func (c *Collector) elect(ctx context.Context) error {
	le := c.cfg.LeaderElection
	ns := le.Namespace
	if ns == "" {
		ns = os.Getenv("POD_NAMESPACE")
	}
	if ns == "" {
		ns = inClusterNamespace(c.cfg.Kubeconfig, c.cfg.Context)
	}
	if ns == "" {
		ns = "default"
	}
	id := le.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "-" + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 36)
	}
	kc, err := kubernetes.NewForConfig(c.rest)
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, le.Name, nil, kc.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	log := c.log.With(zap.String("lease", ns+"/"+le.Name), zap.String("identity", id))
	for ctx.Err() == nil {
		done := make(chan struct{})
		var led atomic.Bool
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   le.LeaseDuration,
			RenewDeadline:   le.RenewDeadline,
			RetryPeriod:     le.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            le.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					led.Store(true)
					defer close(done)
					log.Info("leading: this replica publishes")
					for lctx.Err() == nil {
						if err := c.lead(lctx); err != nil && lctx.Err() == nil {
							log.Error("collector session ended; starting again", zap.Error(err))
							sleep(lctx, 5*time.Second)
						}
					}
				},
				OnStoppedLeading: func() { log.Info("not leading") },
				OnNewLeader: func(identity string) {
					if identity != id {
						log.Info("another replica leads", zap.String("leader", identity))
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		elector.Run(ctx)
		// Run returns when the Lease is lost or ctx is done; the session
		// it started stops publishing before this replica campaigns again.
		if led.Load() {
			<-done
		}
	}
	return nil
}
