package signing_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"syscall"
	"testing"
	"time"

	"github.com/bomstream/bomstream/signing"
	"github.com/bomstream/bomstream/signing/signingtest"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSign signs one AI-BOM statement per iteration: with an ECDSA
// P-256 key, and keyless against the in-memory Sigstore (a certificate
// for a new key, a transparency log entry with its inclusion proof and
// promise, and an RFC 3161 timestamp). It reports attestations per second
// and the process's CPU time per attestation; run it with -cpu 1 for one
// core.
func BenchmarkSign(b *testing.B) {
	st, err := signing.Statement(signing.Subject{Name: "reg.example/app", Digest: digest([]byte("image"))}, bom)
	if err != nil {
		b.Fatal(err)
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ss := signingtest.New(b)
	signers := map[string]func() (*signing.Signer, error){
		"key": func() (*signing.Signer, error) { return signing.New(signing.Config{KeyFile: writeKey(b, priv)}, nil) },
		"keyless": func() (*signing.Signer, error) {
			return signing.New(signing.Config{Keyless: &signing.Keyless{TokenFile: signingtest.TokenFile(b, identity, issuer)}}, nil, ss.Options()...)
		},
	}
	for _, name := range []string{"key", "keyless"} {
		b.Run(name, func(b *testing.B) {
			s, err := signers[name]()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := cpuTime(b)
			for range b.N {
				if _, err := s.Sign(context.Background(), st); err != nil {
					b.Fatal(err)
				}
			}
			used := cpuTime(b) - cpu
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "attestations/s")
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
