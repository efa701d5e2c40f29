package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream/streamtest"
)

// BenchmarkRawPublishConsume publishes b.N messages of about 2 KiB to CHANGES
// with msg ids (asynchronously, then waiting for every ack), then consumes and
// acks them all through a durable pull consumer, on the embedded server with
// its file store. It reports end-to-end msgs/s.
func BenchmarkRawPublishConsume(b *testing.B) {
	bus := openEmbedded(b, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	payload := make([]byte, 2048)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	cons, err := bus.js.CreateOrUpdateConsumer(ctx, schemas.StreamChanges, jetstream.ConsumerConfig{
		Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	start := time.Now()

	msgs := make([]*nats.Msg, b.N)
	for i := range b.N {
		m := nats.NewMsg(fmt.Sprintf("%sbench.u%d", schemas.SubjectChangesPrefix, i%64))
		m.Data = payload
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("bench:%d", i))
		msgs[i] = m
	}
	if err := streamtest.PublishConsume(ctx, bus.js, cons, msgs); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
