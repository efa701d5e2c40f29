package engine

import (
	"context"
	"testing"
	"time"

	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

func openEmbedded(t testing.TB, cfg stream.Config) *stream.Bus { return bustest.Open(t, cfg) }

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
