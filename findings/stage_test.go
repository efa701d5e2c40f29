package findings

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	stored "github.com/bomstream/bomstream/inventory/findings"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

var chat = schemas.Workload{Cluster: "prod", Namespace: "ml", APIVersion: "apps/v1", Kind: "Deployment", Name: "chat", UID: "u-1"}

// bomJSON is a BOM with one model (pinned or not) and one image without a
// digest.
func bomJSON(pinned bool) []byte {
	model := `{"bom-ref":"model:huggingface:org/m","type":"machine-learning-model","name":"org/m","properties":[{"name":"bomstream:model:location-kind","value":"huggingface"},{"name":"bomstream:model:unpinned","value":"true"}]}`
	if pinned {
		model = `{"bom-ref":"model:huggingface:org/m","type":"machine-learning-model","name":"org/m","version":"abc","properties":[{"name":"bomstream:model:location-kind","value":"huggingface"},{"name":"bomstream:model:revision","value":"abc"}]}`
	}
	image := `{"bom-ref":"container:docker.io/vllm/vllm-openai:v0.10.1","type":"container","name":"docker.io/vllm/vllm-openai","properties":[{"name":"bomstream:image:digest","value":"unresolved"}]}`
	return []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","components":[` + model + `,` + image + `]}`)
}

// publishBOM stores a version of w on BOMS through the codec.
func publishBOM(t testing.TB, bus *stream.Bus, w schemas.Workload, seq uint64, bom []byte, tombstone string) {
	t.Helper()
	m := schemas.BOMMessage{Workload: w, ChangeSeq: seq, Tombstone: tombstone, EventTime: time.Unix(int64(1000+seq), 0)}
	if tombstone == "" {
		m.BOM, m.BomHash, m.InputHash = bom, schemas.BomHash(bom), fmt.Sprintf("sha256:%d", seq)
	}
	h, body, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Writer().Publish(context.Background(), &nats.Msg{Subject: m.Subject(), Header: h, Data: body}, m.MsgID()); err != nil {
		t.Fatal(err)
	}
}

// events reads FINDINGS in order, as "state rule subject reason": per
// finding set, what it opened then what it resolved; per event of the
// per-finding layout, the event.
func events(t testing.TB, bus *stream.Bus) []string {
	t.Helper()
	var out []string
	line := func(ev schemas.FindingEvent) string {
		return strings.TrimSpace(ev.State + " " + ev.Rule + " " + ev.Subject + " " + ev.Reason)
	}
	err := bus.Reader().Messages(context.Background(), schemas.StreamFindings, "", 0, func(m *jetstream.RawStreamMsg) error {
		if !strings.HasPrefix(m.Subject, schemas.SubjectFindingSetPrefix) {
			ev, err := schemas.DecodeFindingEvent(m.Subject, m.Data)
			out = append(out, line(ev))
			return err
		}
		set, err := schemas.DecodeFindingSet(m.Subject, m.Data)
		for _, i := range append(slices.Clone(set.Opened), set.Resolved...) {
			out = append(out, line(set.Event(i)))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func testRules(t testing.TB) *Rules {
	r, err := ParseRules("test", []byte(`rules:
  - {id: model-unpinned, check: model-unpinned, severity: medium}
  - {id: image-digest, check: image-digest, severity: low}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startInline runs a stage inline (RunInline) until the test ends.
func startInline(t *testing.T, bus *stream.Bus) *Stage {
	t.Helper()
	st, err := New(bus, testRules(t), Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = st.RunInline(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return st
}

func startStage(t *testing.T, bus *stream.Bus, reg prometheus.Registerer) *Stage {
	t.Helper()
	st, _ := startStoppableStage(t, bus, reg)
	return st
}

// startStoppableStage is startStage with a stop function, for a test that
// restarts the stage: stop returns once Run has.
func startStoppableStage(t *testing.T, bus *stream.Bus, reg prometheus.Registerer) (*Stage, func()) {
	t.Helper()
	st, err := New(bus, testRules(t), Config{}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = st.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return st, stop
}

// A finding opened by one BOM version is resolved by the next; replaying
// BOMS twice writes nothing; a tombstone resolves what is open; the gauge
// follows.
func TestFindingLifecycle(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	reg := prometheus.NewRegistry()
	st := startStage(t, bus, reg)
	gauge := func(rule, sev string) float64 {
		return testutil.ToFloat64(st.tally.g.WithLabelValues(rule, sev, "prod", "ml"))
	}
	evaluated := func(n uint64) {
		bustest.Eventually(t, fmt.Sprintf("%d evaluations", n), 30*time.Second, func() bool { return st.Counts().Evaluated >= n })
	}

	publishBOM(t, bus, chat, 1, bomJSON(false), "")
	evaluated(1)
	want := []string{"opened image-digest docker.io/vllm/vllm-openai:v0.10.1", "opened model-unpinned org/m"}
	if got := events(t, bus); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after v1:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if gauge("model-unpinned", "medium") != 1 || gauge("image-digest", "low") != 1 {
		t.Errorf("gauge after v1: %v %v", gauge("model-unpinned", "medium"), gauge("image-digest", "low"))
	}

	publishBOM(t, bus, chat, 2, bomJSON(true), "")
	evaluated(2)
	want = append(want, "resolved model-unpinned org/m fixed")
	if got := events(t, bus); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after v2:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if gauge("model-unpinned", "medium") != 0 || gauge("image-digest", "low") != 1 {
		t.Errorf("gauge after v2: %v %v", gauge("model-unpinned", "medium"), gauge("image-digest", "low"))
	}

	for i := range 2 {
		c, err := st.Replay(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.Opened+c.Resolved != 0 || c.Older != 1 || c.Evaluated != 1 {
			t.Errorf("replay %d: %+v, want v1 skipped as older, v2 evaluated, nothing written", i+1, c)
		}
	}
	if got := events(t, bus); len(got) != len(want) {
		t.Fatalf("replays wrote findings again:\n%s", strings.Join(got, "\n"))
	}

	publishBOM(t, bus, chat, 3, nil, schemas.TombstoneDeleted)
	evaluated(3)
	want = append(want, "resolved image-digest docker.io/vllm/vllm-openai:v0.10.1 deleted")
	if got := events(t, bus); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the tombstone:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if gauge("image-digest", "low") != 0 {
		t.Errorf("gauge after the tombstone: %v", gauge("image-digest", "low"))
	}
	if c, _ := st.Replay(context.Background(), 0); c.Opened+c.Resolved != 0 {
		t.Errorf("replay after the tombstone wrote %+v", c)
	}
	if got := events(t, bus); len(got) != len(want) {
		t.Fatalf("replay after the tombstone:\n%s", strings.Join(got, "\n"))
	}

	open, err := stored.List(context.Background(), bus.Reader(), stored.Filter{})
	if err != nil || len(open) != 0 {
		t.Errorf("open findings: %v %v", open, err)
	}
	all, err := stored.List(context.Background(), bus.Reader(), stored.Filter{State: stored.StateAll})
	if err != nil || len(all) != 2 || all[0].OpenedAt.IsZero() {
		t.Errorf("all findings: %+v %v", all, err)
	}
}

// A new stage process reads the open findings for its gauge, and a
// consumer created again over BOMS (from the first message) writes nothing.
func TestFindingRestartCountsOpenFindings(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	other := schemas.Workload{Cluster: "prod", Namespace: "web", APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "u-2"}
	st, stop := startStoppableStage(t, bus, nil)
	publishBOM(t, bus, chat, 1, bomJSON(false), "")
	publishBOM(t, bus, other, 2, bomJSON(true), "")
	bustest.Eventually(t, "two evaluations", 30*time.Second, func() bool { return st.Counts().Evaluated == 2 })
	before := events(t, bus)
	if len(before) != 3 {
		t.Fatalf("events: %q", before)
	}
	// The first stage stops before its consumer goes: left running, it
	// would create the durable again and, pinned to it, take every message
	// the second one waits for (a race this test lost about once in 40).
	stop()

	s, err := bus.Stream(context.Background(), schemas.StreamBOMs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConsumer(context.Background(), st.Durable()); err != nil {
		t.Fatal(err)
	}
	st2 := startStage(t, bus, prometheus.NewRegistry())
	bustest.Eventually(t, "the second stage", 30*time.Second, func() bool { return st2.Counts().Evaluated+st2.Counts().Older >= 2 })
	if got := events(t, bus); len(got) != len(before) {
		t.Errorf("a consumer created again wrote findings again: %q", got)
	}
	if v := testutil.ToFloat64(st2.tally.g.WithLabelValues("image-digest", "low", "prod", "web")); v != 1 {
		t.Errorf("gauge of the new stage for web: %v", v)
	}
	wf, err := stored.OpenFor(context.Background(), bus.Reader(), []schemas.Workload{chat, other})
	if err != nil || len(wf) != 2 || len(wf[0].Findings) != 2 || len(wf[1].Findings) != 1 {
		t.Errorf("OpenFor: %+v %v", wf, err)
	}
}

func TestFindingHandler(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st := startStage(t, bus, nil)
	publishBOM(t, bus, chat, 1, bomJSON(false), "")
	bustest.Eventually(t, "an evaluation", 30*time.Second, func() bool { return st.Counts().Evaluated == 1 })
	ix := stored.NewIndex()
	if err := ix.Load(context.Background(), bus.Reader()); err != nil {
		t.Fatal(err)
	}
	for name, ix := range map[string]*stored.Index{"from the stream": nil, "from the index": ix} {
		t.Run(name, func(t *testing.T) { testHandler(t, httptest.NewServer(stored.Handler(bus.Reader(), ix))) })
	}
}

func testHandler(t *testing.T, srv *httptest.Server) {
	defer srv.Close()
	get := func(q string) (int, stored.Page, string) {
		resp, err := http.Get(srv.URL + "/api/v1/findings" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var p stored.Page
		_ = json.Unmarshal(b, &p)
		return resp.StatusCode, p, string(b)
	}
	code, p, body := get("?limit=1")
	if code != 200 || p.Total != 2 || len(p.Items) != 1 || p.Next != "1" || p.Items[0].Rule != "image-digest" {
		t.Errorf("first page: %d %s", code, body)
	}
	code, p, body = get("?limit=1&page=" + p.Next)
	if code != 200 || len(p.Items) != 1 || p.Next != "" || p.Items[0].Rule != "model-unpinned" {
		t.Errorf("second page: %d %s", code, body)
	}
	if code, p, body = get("?severity=medium&namespace=ml&cluster=prod"); code != 200 || p.Total != 1 {
		t.Errorf("filtered: %d %s", code, body)
	}
	for q, want := range map[string]string{"?state=closed": `state: \"closed\"`, "?colour=red": `query parameter \"colour\" is unknown`, "?limit=0": "limit", "?page=x": "page"} {
		if code, _, body := get(q); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s, want 400 naming %s", q, code, body, want)
		}
	}
}

// Inline (Follow, as the transformer of the process calls it): the same
// lifecycle as through the consumer; following a version again, and a
// second process consuming BOMS (a replica in consumer mode), write
// nothing twice.
func TestFindingFollowInline(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st := startInline(t, bus)

	follow := func(seq uint64, bom []byte, tombstone string) {
		t.Helper()
		publishBOM(t, bus, chat, seq, bom, tombstone)
		m, err := bus.Reader().LastMsg(context.Background(), schemas.StreamBOMs, schemas.BOMsSubject(chat))
		if err != nil {
			t.Fatal(err)
		}
		bm, err := schemas.DecodeBOMMessage(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second as after a crash before the ack
			if err := st.Follow(context.Background(), &bm); err != nil {
				t.Fatalf("follow version %d: %v", seq, err)
			}
		}
	}
	follow(1, bomJSON(false), "")
	follow(2, bomJSON(true), "")
	follow(3, nil, schemas.TombstoneDeleted)
	want := []string{
		"opened image-digest docker.io/vllm/vllm-openai:v0.10.1", "opened model-unpinned org/m",
		"resolved model-unpinned org/m fixed",
		"resolved image-digest docker.io/vllm/vllm-openai:v0.10.1 deleted",
	}
	if got := events(t, bus); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("inline:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := st.Counts(); c.Opened != 2 || c.Resolved != 2 {
		t.Errorf("counts %+v, want 2 opened and 2 resolved", c)
	}
	cs, err := bus.Durables().List(context.Background(), schemas.StreamBOMs)
	if err != nil || len(cs) != 0 {
		t.Errorf("consumers of BOMS with the stage inline: %+v %v, want none", cs, err)
	}

	replica := startStage(t, bus, nil)
	bustest.Eventually(t, "the replica read BOMS", 30*time.Second, func() bool {
		c := replica.Counts()
		return c.Evaluated+c.Older >= 3
	})
	if got := events(t, bus); len(got) != len(want) {
		t.Fatalf("a consuming replica wrote findings again:\n%s", strings.Join(got, "\n"))
	}
}

// The next set is the merge of the set read and the findings wanted: an
// open finding still wanted is kept as it was, one no longer wanted
// resolves, a resolved one wanted again opens again, a new one opens, and
// a resolved one not wanted stays as it was; the set stays sorted.
func TestFindingApplyMerges(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st, err := New(bus, testRules(t), Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	at, then := time.Unix(2000, 0).UTC(), time.Unix(1000, 0).UTC()
	was := func(state, rule, subject string) schemas.SetFinding {
		return schemas.SetFinding{State: state, Rule: rule, Severity: "low", Subject: subject, Message: "old", ChangeSeq: 1, Time: then}
	}
	old := stored.State{Set: schemas.FindingSet{Workload: chat, ChangeSeq: 1, Findings: []schemas.SetFinding{
		was(schemas.FindingOpened, "image-digest", "a"),     // not wanted: resolves
		was(schemas.FindingResolved, "image-digest", "b"),   // wanted again: opens
		was(schemas.FindingOpened, "model-unpinned", "c"),   // still wanted: kept
		was(schemas.FindingResolved, "model-unpinned", "e"), // not wanted, resolved: kept
	}}}
	want := []Finding{
		{Rule: "image-digest", Severity: "low", Subject: "b", Message: "new"},
		{Rule: "model-unpinned", Severity: "medium", Subject: "c", Message: "new"},
		{Rule: "model-unpinned", Severity: "medium", Subject: "d", Message: "new"},
	}
	if err := st.apply(context.Background(), schemas.BOMMessage{Workload: chat, ChangeSeq: 2}, at, want, old, &st.n); err != nil {
		t.Fatal(err)
	}
	raw, err := bus.Reader().LastMsg(context.Background(), schemas.StreamFindings, schemas.FindingSetSubject(chat))
	if err != nil || raw == nil {
		t.Fatalf("no finding set written: %v", err)
	}
	set, err := schemas.DecodeFindingSet(raw.Subject, raw.Data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range set.Findings {
		got = append(got, fmt.Sprintf("%s %s %s %s seq=%d", f.State, f.Rule, f.Subject, f.Message, f.ChangeSeq))
	}
	wantSet := []string{
		"resolved image-digest a old seq=2", "opened image-digest b new seq=2", "opened model-unpinned c old seq=1",
		"opened model-unpinned d new seq=2", "resolved model-unpinned e old seq=1",
	}
	if strings.Join(got, "\n") != strings.Join(wantSet, "\n") {
		t.Errorf("next set:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantSet, "\n"))
	}
	if !slices.Equal(set.Opened, []int{1, 3}) || !slices.Equal(set.Resolved, []int{0}) {
		t.Errorf("opened %v resolved %v, want [1 3] and [0]", set.Opened, set.Resolved)
	}
	if r := set.Findings[0]; r.Reason != schemas.FindingFixed || !r.OpenedAt.Equal(then) || !r.Time.Equal(at) {
		t.Errorf("resolved finding %+v: want reason fixed, opened at %v, resolved at %v", r, then, at)
	}

	// Nothing opens or resolves: nothing is written.
	before := raw.Sequence
	if err := st.apply(context.Background(), schemas.BOMMessage{Workload: chat, ChangeSeq: 3}, at, want, stored.State{Set: set, Seq: raw.Sequence}, &st.n); err != nil {
		t.Fatal(err)
	}
	if raw, _ := bus.Reader().LastMsg(context.Background(), schemas.StreamFindings, schemas.FindingSetSubject(chat)); raw.Sequence != before {
		t.Errorf("a version that changes nothing wrote a set (seq %d after %d)", raw.Sequence, before)
	}
}

// Sets written from four goroutines at once, each of a workload of its
// own with its own number of findings (one with more than a lent room
// keeps), hold each exactly what its workload's facts open: the scratch
// space lent between evaluations carries nothing from one to another.
func TestFindingFollowKeepsNothingBetweenSets(t *testing.T) {
	bus := bustest.Open(t, stream.Config{})
	st := startInline(t, bus)
	bustest.Eventually(t, "the stage read FINDINGS", 30*time.Second, st.tally.loaded.Load)

	const n = 200
	models := func(i int) int {
		if i == 77 {
			return maxRoomFindings + 10
		}
		return i%5 + 1
	}
	msgs := make([]schemas.BOMMessage, n)
	for i := range msgs {
		var comps []string
		for k := range models(i) {
			name := fmt.Sprintf("org-%d/model-%d-%s", i, k, strings.Repeat("x", i%7*40))
			comps = append(comps, `{"bom-ref":"model:huggingface:`+name+`","type":"machine-learning-model","name":"`+name+`","properties":[{"name":"bomstream:model:location-kind","value":"huggingface"},{"name":"bomstream:model:unpinned","value":"true"}]}`)
		}
		if i%2 == 0 {
			comps = append(comps, fmt.Sprintf(`{"bom-ref":"container:docker.io/x/img-%d:v1","type":"container","name":"docker.io/x/img-%d","properties":[{"name":"bomstream:image:digest","value":"unresolved"}]}`, i, i))
		}
		f, err := ReadFacts([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","components":[` + strings.Join(comps, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		w := schemas.Workload{Cluster: "prod", Namespace: "ns", APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("w-%d", i), UID: fmt.Sprintf("u-%d", i)}
		msgs[i] = schemas.BOMMessage{Workload: w, ChangeSeq: uint64(100 + i), EventTime: time.Unix(int64(5000+i), 0).UTC(), BomHash: "h", BOM: []byte("{}"), Facts: &f}
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := n - 1 - g; i >= 0; i -= 4 {
				if err := st.Follow(context.Background(), &msgs[i]); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range msgs {
		m := &msgs[i]
		want := schemas.FindingSet{Workload: m.Workload, ChangeSeq: m.ChangeSeq, Time: m.EventTime, Findings: []schemas.SetFinding{}}
		for k, f := range st.rules.Evaluate(*m.Facts) {
			want.Findings = append(want.Findings, schemas.SetFinding{State: schemas.FindingOpened, Rule: f.Rule, Severity: f.Severity,
				Subject: f.Subject, Message: f.Message, ChangeSeq: m.ChangeSeq, Time: m.EventTime})
			want.Opened = append(want.Opened, k)
		}
		if got := len(want.Findings); got != models(i)+1-i%2 {
			t.Fatalf("workload %d: %d findings evaluated, want %d", i, got, models(i)+1-i%2)
		}
		_, body, err := want.Encode()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := bus.Reader().LastMsg(context.Background(), schemas.StreamFindings, schemas.FindingSetSubject(m.Workload))
		if err != nil || raw == nil {
			t.Fatalf("workload %d: no set: %v", i, err)
		}
		if string(raw.Data) != string(body) {
			t.Fatalf("workload %d:\n got %s\nwant %s", i, raw.Data, body)
		}
	}
}
