package runner

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/ledger"
)

// Applied is a sink ledger's record of one workload: the last version the
// sink applied, for checks that hold the ledger against BOMS.
type Applied struct {
	Key          string // "w.<cluster>.<uid>"
	Cluster, UID string
	ChangeSeq    uint64
	BomHash      string // "" for a tombstone
	Tombstone    string // the tombstone's reason
	StreamSeq    uint64 // where on BOMS the version was read
	Workload     string // cluster/namespace/kind/name
}

// ReadLedger returns every entry of sink's ledger. Keys and values it
// cannot read are listed in bad; the runner rewrites them when their
// workload next comes by.
func ReadLedger(ctx context.Context, bus *stream.Bus, sink string) (entries []Applied, bad []string, err error) {
	l, err := ledger.Open(ctx, bus, sink)
	if err != nil {
		return nil, nil, err
	}
	err = l.All(ctx, func(key string, value []byte, _ uint64) {
		a, ok := readEntry(key, value)
		if !ok {
			bad = append(bad, key)
			return
		}
		entries = append(entries, a)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sink %s: read ledger: %w", sink, err)
	}
	return entries, bad, nil
}

// LedgerEntry returns sink's ledger entry of w: the last version of w the
// sink applied, under the key the runner writes. ok is false when the sink
// applied none. Like ReadLedger it opens the ledger, creating its bucket
// when missing. An entry it cannot read is an error; the runner rewrites
// it when w next comes by.
func LedgerEntry(ctx context.Context, bus *stream.Bus, sink string, w schemas.Workload) (Applied, bool, error) {
	l, err := ledger.Open(ctx, bus, sink)
	if err != nil {
		return Applied{}, false, err
	}
	key := ledgerKey(w)
	value, _, ok, err := l.Get(ctx, key)
	if err != nil {
		return Applied{}, false, fmt.Errorf("sink %s: read ledger: %w", sink, err)
	}
	if !ok {
		return Applied{}, false, nil
	}
	a, ok := readEntry(key, value)
	if !ok {
		return Applied{}, false, fmt.Errorf("sink %s: ledger entry %s of %s: unreadable", sink, key, w)
	}
	return a, true, nil
}

// readEntry reads the ledger entry value under key.
func readEntry(key string, value []byte) (Applied, bool) {
	a, ok := parseLedgerKey(key)
	var e entry
	if !ok || json.Unmarshal(value, &e) != nil {
		return Applied{}, false
	}
	a.ChangeSeq, a.BomHash, a.Tombstone, a.StreamSeq, a.Workload = e.ChangeSeq, e.BomHash, e.Tombstone, e.StreamSeq, e.Workload
	return a, true
}

// parseLedgerKey reads what ledgerKey wrote.
func parseLedgerKey(key string) (Applied, bool) {
	rest, ok := strings.CutPrefix(key, "w.")
	cluster, uid, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(uid, ".") {
		return Applied{}, false
	}
	c, ok := keyTokenValue(cluster)
	u, ok2 := keyTokenValue(uid)
	return Applied{Key: key, Cluster: c, UID: u}, ok && ok2 && c != "" && u != ""
}

func keyTokenValue(tok string) (string, bool) {
	h, encoded := strings.CutPrefix(tok, "=")
	if !encoded {
		return tok, true
	}
	b, err := hex.DecodeString(h)
	return string(b), err == nil
}
