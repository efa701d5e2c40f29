package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/schemas"
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
	cons, err := bus.JS.CreateOrUpdateConsumer(ctx, schemas.StreamChanges, jetstream.ConsumerConfig{
		Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	start := time.Now()

	const window = 1000 // outstanding async publishes
	pending := make([]jetstream.PubAckFuture, 0, window)
	flush := func() {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			case <-ctx.Done():
				b.Fatal(ctx.Err())
			}
		}
		pending = pending[:0]
	}
	for i := range b.N {
		subj := fmt.Sprintf("%sbench.u%d", schemas.SubjectChangesPrefix, i%64)
		f, err := bus.JS.PublishAsync(subj, payload, jetstream.WithMsgID(fmt.Sprintf("bench:%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, f); len(pending) == window {
			flush()
		}
	}
	flush()

	it, err := cons.Messages(jetstream.PullMaxMessages(500))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	for range b.N {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			b.Fatal(err)
		}
		if err := msg.Ack(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}
