package findings

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
	"github.com/bomstream/bomstream/stream/engine"
)

// findingsMsgs is the number of messages on FINDINGS.
func findingsMsgs(t testing.TB, bus *stream.Bus) uint64 {
	t.Helper()
	st, err := bus.Reader().State(context.Background(), schemas.StreamFindings)
	if err != nil {
		t.Fatal(err)
	}
	return st.Msgs
}

// oldEvent writes ev as the build before finding sets did: on the
// finding's own subject, after that subject's last sequence.
func oldEvent(t testing.TB, bus *stream.Bus, ev schemas.FindingEvent) {
	t.Helper()
	subj, body, err := ev.Encode()
	if err != nil {
		t.Fatal(err)
	}
	last, err := bus.Reader().LastMsg(context.Background(), schemas.StreamFindings, subj)
	if err != nil {
		t.Fatal(err)
	}
	var lastSeq uint64
	if last != nil {
		lastSeq = last.Sequence
	}
	if _, err := bus.Writer().PublishAfter(context.Background(), &nats.Msg{Subject: subj, Data: body}, schemas.FindingMsgID(subj, lastSeq), lastSeq); err != nil {
		t.Fatal(err)
	}
}

// bomWithImages is bomJSON with n more images without a digest: n more
// image-digest findings.
func bomWithImages(pinned bool, n int) []byte {
	bom := bomJSON(pinned)
	for i := range n {
		bom = append(bytes.TrimSuffix(bom, []byte(`]}`)), fmt.Sprintf(`,{"bom-ref":"container:docker.io/a/b%d:1","type":"container","name":"docker.io/a/b%d","properties":[{"name":"bomstream:image:digest","value":"unresolved"}]}]}`, i, i)...)
	}
	return bom
}

// A store written by the build before finding sets (one subject per
// finding, FINDINGS without the finding sets' subjects) is provisioned
// again with them; its findings read as before; the stage seeds a
// workload's first finding set from them, and the readers then prefer it.
func TestFindingOldLayoutReadAndSeeded(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	ctx := context.Background()
	s, err := bus.Stream(ctx, schemas.StreamFindings)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	cfg.Subjects = []string{schemas.SubjectFindingsPrefix + ">"}
	_, js := bus.Raw()
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	other := schemas.Workload{Cluster: "prod", Namespace: "web", APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "u-2"}
	at := time.Unix(1001, 0).UTC()
	for _, w := range []schemas.Workload{chat, other} {
		oldEvent(t, bus, schemas.FindingEvent{State: schemas.FindingOpened, Workload: w, Rule: "model-unpinned", Severity: "medium", Subject: "org/m", ChangeSeq: 1, Time: at})
		oldEvent(t, bus, schemas.FindingEvent{State: schemas.FindingOpened, Workload: w, Rule: "image-digest", Severity: "low", Subject: "docker.io/vllm/vllm-openai:v0.10.1", ChangeSeq: 1, Time: at})
	}
	oldEvent(t, bus, schemas.FindingEvent{State: schemas.FindingResolved, Workload: other, Rule: "model-unpinned", Severity: "medium", Subject: "org/m",
		ChangeSeq: 2, Time: at.Add(time.Second), OpenedAt: at, Reason: schemas.FindingFixed})
	if err := bus.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err = s.Info(ctx); err != nil || !slices.Contains(info.Config.Subjects, schemas.SubjectFindingSetPrefix+">") {
		t.Fatalf("FINDINGS provisioned again: %v %v", info.Config.Subjects, err)
	}
	// chat: 2 open; other: 1 open, 1 resolved.
	checkReaders(t, bus, []schemas.Workload{chat, other}, 3, 4)

	st := startStage(t, bus, nil)
	publishBOM(t, bus, chat, 5, bomJSON(true), "") // model pinned: resolved, the image still open
	publishBOM(t, bus, other, 1, bomJSON(false), "")
	bustest.Eventually(t, "two evaluations", 30*time.Second, func() bool { return st.Counts().Evaluated+st.Counts().Older >= 2 })
	if c := st.Counts(); c.Opened != 0 || c.Resolved != 1 || c.Older != 1 {
		t.Errorf("counts %+v: want the model of chat resolved and nothing opened again, the version 1 of other older than its findings", c)
	}
	got := events(t, bus)
	if len(got) != 6 || got[5] != "resolved model-unpinned org/m fixed" || findingsMsgs(t, bus) != 6 {
		t.Fatalf("events: %q", got)
	}
	wf, err := stored.OpenFor(ctx, bus.Reader(), []schemas.Workload{chat})
	if err != nil || len(wf[0].Findings) != 1 || wf[0].Findings[0].Rule != "image-digest" || !wf[0].Findings[0].Time.Equal(at) {
		t.Errorf("chat's open findings: %+v %v", wf, err)
	}
	checkReaders(t, bus, []schemas.Workload{chat, other}, 2, 4)
	if c, err := st.Replay(ctx, 0); err != nil || c.Opened+c.Resolved != 0 || findingsMsgs(t, bus) != 6 {
		t.Errorf("replay: %+v %v, %d messages", c, err, findingsMsgs(t, bus))
	}
}

// checkReaders: List, ListPage, OpenFor and the index agree, with open
// findings open and all of them all.
func checkReaders(t *testing.T, bus *stream.Bus, ws []schemas.Workload, open, all int) {
	t.Helper()
	ctx := context.Background()
	ix := stored.NewIndex()
	if err := ix.Load(ctx, bus.Reader()); err != nil {
		t.Fatal(err)
	}
	for state, n := range map[string]int{stored.StateOpen: open, stored.StateAll: all} {
		list, err := stored.List(ctx, bus.Reader(), stored.Filter{State: state})
		if err != nil || len(list) != n {
			t.Errorf("List %s: %d findings (%v), want %d", state, len(list), err, n)
		}
		page, err := stored.ListPage(ctx, bus.Reader(), stored.Filter{State: state}, "", 1000)
		if err != nil || !slices.Equal(page.Items, list) {
			t.Errorf("ListPage %s: %+v %v", state, page, err)
		}
		ipage, err := ix.Page(ctx, bus.Reader(), stored.Filter{State: state}, "", 1000)
		if err != nil || !slices.Equal(ipage.Items, list) {
			t.Errorf("the index's page %s: %+v %v\nList: %+v", state, ipage.Items, err, list)
		}
	}
	wfs, err := stored.OpenFor(ctx, bus.Reader(), ws)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, wf := range wfs {
		total += len(wf.Findings)
		if n := ix.OpenCount(wf.Workload.Cluster, wf.Workload.UID); n != len(wf.Findings) {
			t.Errorf("%s: OpenFor %d, the index %d", wf.Workload.Name, len(wf.Findings), n)
		}
	}
	if total != open {
		t.Errorf("OpenFor: %d open, want %d", total, open)
	}
}

// One message per BOM version that opens or resolves something, whatever
// the number of findings; none for a version that changes nothing.
func TestFindingOneWritePerVersion(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st := startStage(t, bus, nil)
	const n = 20
	ws := workloads(n)
	for i, w := range ws {
		publishBOM(t, bus, w, uint64(i+1), bomWithImages(false, 3), "") // 5 findings opened
	}
	bustest.Eventually(t, "the first versions", 30*time.Second, func() bool { return st.Counts().Evaluated >= n })
	if got := findingsMsgs(t, bus); got != n || st.Counts().Opened != 5*n {
		t.Fatalf("after %d versions of 5 findings: %d messages, %+v", n, got, st.Counts())
	}
	for i, w := range ws {
		publishBOM(t, bus, w, uint64(100+i), bomWithImages(false, 3), "") // the same findings: nothing to write
	}
	bustest.Eventually(t, "the second versions", 30*time.Second, func() bool { return st.Counts().Evaluated >= 2*n })
	for i, w := range ws {
		publishBOM(t, bus, w, uint64(200+i), bomWithImages(true, 1), "") // 1 opened? no: model and 2 images resolved
	}
	bustest.Eventually(t, "the third versions", 30*time.Second, func() bool { return st.Counts().Evaluated >= 3*n })
	if got, c := findingsMsgs(t, bus), st.Counts(); got != 2*n || c.Resolved != 3*n || c.Opened != 5*n {
		t.Fatalf("after the third versions: %d messages, %+v", got, c)
	}
	for i, w := range ws {
		publishBOM(t, bus, w, uint64(300+i), nil, schemas.TombstoneDeleted)
	}
	bustest.Eventually(t, "the tombstones", 30*time.Second, func() bool { return st.Counts().Evaluated >= 4*n })
	if got, c := findingsMsgs(t, bus), st.Counts(); got != 3*n || c.Resolved != 5*n {
		t.Fatalf("after the tombstones: %d messages, %+v", got, c)
	}
	checkReaders(t, bus, ws, 0, 5*n)
}

func workloads(n int) []schemas.Workload {
	ws := make([]schemas.Workload, n)
	for i := range ws {
		ws[i] = schemas.Workload{Cluster: []string{"prod", "dev"}[i%2], Namespace: fmt.Sprintf("ns-%d", i%3), APIVersion: "apps/v1",
			Kind: "Deployment", Name: fmt.Sprintf("w-%02d", i), UID: fmt.Sprintf("uid-%02d", i)}
	}
	return ws
}

// Two replicas each evaluating every BOM (two durables: the worst case),
// then a replay of each, write every finding set once.
func TestFindingSecondReplicaWritesNothingTwice(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	a := startStage(t, bus, nil)
	b, err := New(bus, testRules(t), Config{Engine: engine.Config{Durable: "findings-b"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	const n = 10
	ws := workloads(n)
	for i, w := range ws {
		publishBOM(t, bus, w, uint64(i+1), bomWithImages(false, 2), "")
		publishBOM(t, bus, w, uint64(100+i), bomWithImages(true, 2), "")
	}
	for _, st := range []*Stage{a, b} {
		bustest.Eventually(t, "every version by both", 60*time.Second, func() bool { return st.Counts().Evaluated+st.Counts().Older >= 2*n })
	}
	// v1 opens 4 findings, v2 resolves the model: 2 sets a workload, the
	// replica second to a version finding it written (each replica reads
	// a workload's versions in order).
	got := findingsMsgs(t, bus)
	if got != 2*n {
		t.Fatalf("%d messages for %d workloads of 2 versions", got, n)
	}
	if c := add(a.Counts(), b.Counts()); c.Opened != 4*n || c.Resolved != n {
		t.Errorf("both replicas: %+v, %d messages", c, got)
	}
	for _, st := range []*Stage{a, b} {
		if c, err := st.Replay(context.Background(), 0); err != nil || c.Opened+c.Resolved != 0 {
			t.Errorf("replay: %+v %v", c, err)
		}
	}
	if again := findingsMsgs(t, bus); again != got {
		t.Errorf("the replays wrote %d messages", again-got)
	}
	opened := map[string]int{}
	err = bus.Reader().Messages(context.Background(), schemas.StreamFindings, "", 0, func(m *jetstream.RawStreamMsg) error {
		set, err := schemas.DecodeFindingSet(m.Subject, m.Data)
		for _, i := range set.Opened {
			opened[m.Subject+" "+set.Findings[i].Rule+" "+set.Findings[i].Subject]++
		}
		return err
	})
	for k, c := range opened {
		if c != 1 {
			t.Errorf("opened %d times: %s", c, k)
		}
	}
	if err != nil || len(opened) != 4*n {
		t.Errorf("%d findings opened (%v), want %d", len(opened), err, 4*n)
	}
	checkReaders(t, bus, ws, 3*n, 4*n)
}

func add(a, b Counts) Counts {
	return Counts{Evaluated: a.Evaluated + b.Evaluated, Older: a.Older + b.Older, Opened: a.Opened + b.Opened, Resolved: a.Resolved + b.Resolved}
}

// A stage that takes a workload it knows no findings of to have none
// (no read) is corrected by the server: another writer's set, written
// after the stage started, makes its append fail, and it reads and
// decides again (here: its version is older, skipped).
func TestFindingStaleKnowledgeReadAgain(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st := startStage(t, bus, nil)
	bustest.Eventually(t, "the stage's first read", 30*time.Second, func() bool { return st.tally.loaded.Load() })
	at := time.Unix(1005, 0).UTC()
	set := schemas.FindingSet{Workload: chat, ChangeSeq: 5, Time: at, Findings: []schemas.SetFinding{
		{State: schemas.FindingOpened, Rule: "model-unpinned", Severity: "medium", Subject: "org/m", ChangeSeq: 5, Time: at}}, Opened: []int{0}}
	subj, body, err := set.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Writer().PublishAfter(context.Background(), &nats.Msg{Subject: subj, Data: body}, "", 0); err != nil {
		t.Fatal(err)
	}
	publishBOM(t, bus, chat, 3, bomJSON(false), "")
	bustest.Eventually(t, "the version", 30*time.Second, func() bool { return st.Counts().Evaluated+st.Counts().Older >= 1 })
	if c := st.Counts(); c.Older != 1 || c.Opened != 0 || findingsMsgs(t, bus) != 1 {
		t.Errorf("counts %+v, %d messages: want version 3 skipped as older than the set of version 5", c, findingsMsgs(t, bus))
	}
	publishBOM(t, bus, chat, 6, bomJSON(false), "") // the image opens; the model stays open
	bustest.Eventually(t, "version 6", 30*time.Second, func() bool { return st.Counts().Evaluated >= 1 })
	if got := events(t, bus); len(got) != 2 || got[1] != "opened image-digest docker.io/vllm/vllm-openai:v0.10.1" {
		t.Errorf("events: %q", got)
	}
}
