package oci

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/oci/ocitest"
	"github.com/bomstream/bomstream/sinks/sinktest"
)

// BenchmarkExport measures exports of a BOM with one image against each
// in-process registry. New pushes a new BOM per iteration (list the
// image's referrers, two blob checks, a blob upload, the manifest; with the
// tag schema also the referrers index, read, written and the old one
// deleted); every 50 exports it moves to a fresh registry, outside the
// timer, so that an image has at most 50 referrers, as a long-lived image
// with many BOM versions might. Again re-exports a BOM already there (one
// referrers listing; the subject is cached).
func BenchmarkExport(b *testing.B) {
	for _, k := range ocitest.Kinds {
		b.Run(string(k), func(b *testing.B) {
			ctx := context.Background()
			fresh := func() (*Sink, schemas.ImageDigest) {
				reg := ocitest.Start(b, k, ocitest.Options{})
				return newSink(b, reg, nil, sinks.Deps{}), reg.PushImage(b, "app", "v1")
			}
			b.Run("New", func(b *testing.B) {
				w := sinktest.Workload("bench")
				var s *Sink
				var img schemas.ImageDigest
				for i := 0; i < b.N; i++ {
					if i%50 == 0 {
						b.StopTimer()
						s, img = fresh()
						b.StartTimer()
					}
					if err := s.Export(ctx, withImages(sinktest.NewBOM(w, uint64(i+1)), img)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exports/s")
			})
			b.Run("Again", func(b *testing.B) {
				s, img := fresh()
				bom := withImages(sinktest.NewBOM(sinktest.Workload("again"), 1), img)
				if err := s.Export(ctx, bom); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.Export(ctx, bom); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "exports/s")
			})
		})
	}
}

// BenchmarkAttest exports a new BOM version per iteration with attest on
// (an ECDSA P-256 key) and the plain referrer off: list the image's
// attestations, sign, push the bundle and the manifest to an in-process
// registry, which runs in this process and is part of the figure. Every
// 50 exports it moves to a fresh registry, outside the timer. It reports
// attestations per second and the process's CPU time per attestation;
// run it with -cpu 1 for one core.
func BenchmarkAttest(b *testing.B) {
	for _, k := range []ocitest.Kind{ocitest.Olareg, ocitest.Distribution} {
		b.Run(string(k), func(b *testing.B) {
			keyFile, _ := newKey(b)
			w := sinktest.Workload("bench")
			var s *Sink
			var img schemas.ImageDigest
			cpu := -cpuTime(b)
			for i := 0; i < b.N; i++ {
				if i%50 == 0 {
					b.StopTimer()
					setup := cpuTime(b)
					reg := ocitest.Start(b, k, ocitest.Options{})
					s = newSink(b, reg, map[string]any{"attest": map[string]any{"keyFile": keyFile}, "plainReferrer": false}, sinks.Deps{})
					img = reg.PushImage(b, "app", "v1")
					cpu -= cpuTime(b) - setup
					b.StartTimer()
				}
				if err := s.Export(context.Background(), withImages(sinktest.NewBOM(w, uint64(i+1)), img)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu += cpuTime(b)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "attestations/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
