package inventory_test

import (
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bomstream/bomstream/collector"
	"github.com/bomstream/bomstream/collector/files"
	"github.com/bomstream/bomstream/collector/manifest"
	"github.com/bomstream/bomstream/inventory"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/transformer"
)

// Query the inventory: an Index takes BOMS messages (here rendered from the
// project's examples; in a process, inventory/follow feeds it from the
// stream) and finds workloads by the filters `bomstream find` takes.
func ExampleIndex_Find() {
	norm, err := collector.NewNormalizer(collector.Config{Cluster: "dev"})
	if err != nil {
		log.Fatal(err)
	}
	r, err := transformer.NewRenderer(transformer.Config{Version: "example"})
	if err != nil {
		log.Fatal(err)
	}
	dir := filepath.Join("..", "examples")
	var msgs []*jetstream.RawStreamMsg
	for _, ev := range files.LoadWith(dir, dir, norm, manifest.Limits{}).Events {
		res, err := r.Render(ev)
		if err != nil || res.BOM == nil {
			continue // no BOM: not a serving workload
		}
		m := schemas.BOMMessage{Workload: ev.Data.Workload, ChangeSeq: uint64(len(msgs) + 1), EventTime: ev.Time,
			BomHash: res.BomHash, InputHash: ev.Data.InputHash, BOM: res.BOM}
		h, body, err := m.Encode()
		if err != nil {
			log.Fatal(err)
		}
		msgs = append(msgs, &jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: m.ChangeSeq, Header: nats.Header(h), Data: body, Time: ev.Time})
	}
	ix := inventory.New()
	ix.Apply(msgs)
	ix.Settle()

	for _, filter := range []map[string][]string{{"runtime": {"vllm"}}, {"model": {"google-t5/*"}}} {
		q, err := inventory.ParseQuery(filter, time.Now())
		if err != nil {
			log.Fatal(err)
		}
		for _, e := range ix.Find(q) {
			fmt.Printf("%v: %s/%s/%s\n", filter, e.Namespace, e.Kind, e.Name)
		}
	}
	// Output:
	// map[runtime:[vllm]]: ml/Deployment/chat
	// map[runtime:[vllm]]: ml/DynamoGraphDeployment/qwen-disagg
	// map[runtime:[vllm]]: ml/InferenceService/summarizer
	// map[model:[google-t5/*]]: ml/InferenceService/summarizer
}
