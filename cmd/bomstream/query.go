package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/inventory/report"
	"github.com/bomstream/bomstream/process"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
)

// bomVersion is one message of a workload's history on BOMS.
type bomVersion struct {
	// Time is when the change was observed (the event's time), or when it
	// was stored for messages older than the event-time header.
	Time      time.Time
	StreamSeq uint64
	ChangeSeq uint64
	InputHash string
	BomHash   string
	// Tombstone is "" for a BOM, else why the workload has none: "deleted"
	// or "not-serving".
	Tombstone string
	Body      []byte
}

// findWorkload resolves NAMESPACE/KIND/NAME to the workload's identity
// (subjects carry uids, not names) through the stream's name index.
func findWorkload(ctx context.Context, bus *stream.Bus, cluster, key string) (schemas.Workload, error) {
	ns, kind, name, err := schemas.ParseKey(key)
	if err != nil {
		return schemas.Workload{}, err
	}
	w, err := bus.FindWorkload(ctx, cluster, ns, kind, name)
	if errors.Is(err, stream.ErrNoWorkload) {
		return w, fmt.Errorf("workload %s not found in cluster %s", key, cluster)
	}
	return w, err
}

// history lists every BOM version and tombstone of a workload, oldest first.
func history(ctx context.Context, bus *stream.Bus, w schemas.Workload) ([]bomVersion, error) {
	var out []bomVersion
	err := bus.Messages(ctx, schemas.StreamBOMs, schemas.BOMsSubject(w), 0, func(m *jetstream.RawStreamMsg) error {
		bm, _ := schemas.DecodeBOMMessage("", m.Header, m.Data) // what can be read of a malformed one
		v := bomVersion{Time: m.Time, StreamSeq: m.Sequence, Body: m.Data, ChangeSeq: bm.ChangeSeq,
			InputHash: bm.InputHash, BomHash: bm.BomHash, Tombstone: bm.Tombstone}
		if !bm.EventTime.IsZero() {
			v.Time = bm.EventTime
		}
		out = append(out, v)
		return nil
	})
	return byChange(out), err
}

// withHistory opens the stream (quietly), finds the workload named by key and
// calls fn with its history.
func withHistory(cmd *cobra.Command, e *env, c *common, key string, fn func(schemas.Workload, []bomVersion) error) error {
	cfg, err := c.load(cmd, e.getenv, nil)
	if err != nil {
		return err
	}
	cfg.Log.Level = orDefault(cfg.Log.Level, "warn")
	return withProcess(cmd, e, cfg, process.Parts{Attach: true}, func(ctx context.Context, p *process.Pipeline) error {
		w, err := findWorkload(ctx, p.Bus(), cfg.Cluster, key)
		if err != nil {
			return err
		}
		vs, err := history(ctx, p.Bus(), w)
		if err != nil {
			return err
		}
		return fn(w, vs)
	})
}

func historyCmd(e *env) *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "history NAMESPACE/KIND/NAME",
		Short: "List every BOM version of a workload: when, inputHash, bomHash, runtime, models",
		Example: `  bomstream history ml/Deployment/chat
  bomstream history ml/Deployment/chat --nats-url nats://nats:4222`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withHistory(cmd, e, &c, args[0], func(w schemas.Workload, vs []bomVersion) error {
				return printHistory(cmd.OutOrStdout(), w, vs)
			})
		},
	}
	c.bind(cmd.Flags())
	return cmd
}

// printHistory prints vs as report.History does for the kubectl plugin,
// reading each BOM's facts as the inventory index does.
func printHistory(out io.Writer, w schemas.Workload, vs []bomVersion) error {
	ivs := make([]inventory.Version, 0, len(vs))
	for _, v := range vs {
		iv := inventory.Version{Time: v.Time, StreamSeq: v.StreamSeq, ChangeSeq: v.ChangeSeq, Tombstone: v.Tombstone, BomHash: v.BomHash, InputHash: v.InputHash}
		if v.Tombstone == "" {
			f, err := inventory.ReadFacts(v.Body)
			if err != nil {
				iv.Unreadable = err.Error()
			}
			iv.Facts = f
		}
		ivs = append(ivs, iv)
	}
	return report.History(out, w, ivs)
}

// stamp, tombstoneText and short print as the inventory's reports do
// (package inventory/report).
func stamp(t time.Time) string { return report.Stamp(t) }

func tombstoneText(reason string) string { return report.Tombstone(reason) }

func short(h string) string { return report.Short(h) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func getCmd(e *env) *cobra.Command {
	var (
		c  common
		at string
	)
	cmd := &cobra.Command{
		Use:   "get [--at TIME] NAMESPACE/KIND/NAME",
		Short: "Print the BOM a workload had at a point in time (default: now)",
		Example: `  bomstream get ml/Deployment/chat
  bomstream get --at 72h ml/Deployment/chat
  bomstream get --at 2026-11-01T12:00:00Z ml/Deployment/chat`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var when time.Time // zero: the current version
			if at != "" {
				var err error
				if when, err = parseTime(at); err != nil {
					return fmt.Errorf("--at: %w", err)
				}
			}
			return withHistory(cmd, e, &c, args[0], func(_ schemas.Workload, vs []bomVersion) error {
				v, err := versionAt(vs, when)
				if err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				_, err = cmd.OutOrStdout().Write(append(v.Body, '\n'))
				return err
			})
		},
	}
	c.bind(cmd.Flags())
	cmd.Flags().StringVar(&at, "at", "", "point in time (RFC 3339, a date, or a duration ago such as 72h)")
	return cmd
}

// versionAt is the version in effect at t: the last one observed at or
// before t. Versions are in change order; one whose observation time is
// earlier than its predecessor's (clocks, file times) takes effect with it.
// A zero t means the current version.
func versionAt(vs []bomVersion, t time.Time) (bomVersion, error) {
	i := len(vs)
	if !t.IsZero() {
		var effective time.Time
		i = 0
		for _, v := range vs {
			if v.Time.After(effective) {
				effective = v.Time
			}
			if effective.After(t) {
				break
			}
			i++
		}
	}
	switch {
	case len(vs) == 0:
		return bomVersion{}, errors.New("no BOM: it serves no model, or the store lost its BOMs (`bomstream check` tells which)")
	case i == 0:
		return bomVersion{}, fmt.Errorf("no BOM at %s (the first is from %s)", stamp(t), firstTime(vs))
	}
	v := vs[i-1]
	switch v.Tombstone {
	case "":
		return v, nil
	case schemas.TombstoneNotServing:
		return bomVersion{}, errors.New("not serving since " + stamp(v.Time))
	default:
		return bomVersion{}, errors.New(tombstoneText(v.Tombstone) + " at " + stamp(v.Time))
	}
}

func firstTime(vs []bomVersion) string {
	if len(vs) == 0 {
		return "never"
	}
	return stamp(vs[0].Time)
}
