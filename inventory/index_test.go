package inventory

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bomstream/bomstream/inventory/follow"
	"github.com/bomstream/bomstream/schemas"
	"github.com/bomstream/bomstream/stream"
	"github.com/bomstream/bomstream/stream/bustest"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) // a Monday

var (
	old    = spec{ns: "ml", name: "old-vllm", image: "vllm/vllm-openai:v0.8.4", model: "meta-llama/Llama-3.1-70B-Instruct", declared: true}
	pinned = spec{ns: "ml", name: "pinned-vllm", image: "vllm/vllm-openai:v0.9.0-cu126", model: "meta-llama/Llama-3.1-8B",
		revision: "0123456789abcdef0123456789abcdef01234567", digest: digestOf(7), declared: true}
	sgl    = spec{ns: "ml", name: "sgl", image: "lmsysorg/sglang:v0.4.6.post1-cu124", model: "Qwen/Qwen2.5-7B"}
	latest = spec{ns: "team", name: "latest-vllm", image: "vllm/vllm-openai:latest", model: "org/m", declared: true}
	tgi    = spec{ns: "team", name: "tgi", image: "ghcr.io/huggingface/text-generation-inference:2.4.0-rocm", model: "org/m"}
)

func fleetBus(t *testing.T) (*stream.Bus, *fleet) {
	bus := bustest.Open(t, stream.Config{})
	f := newFleet(t, bus)
	for i, s := range []spec{old, pinned, sgl, latest, tgi} {
		f.serve(s, t0.Add(time.Duration(i)*time.Hour))
	}
	return bus, f
}

func TestInventoryFind(t *testing.T) {
	bus, _ := fleetBus(t)
	ix := load(t, bus)
	now := t0.Add(24 * time.Hour)
	for _, tc := range []struct {
		fields map[string][]string
		want   []string
	}{
		{q(), []string{"old-vllm", "pinned-vllm", "sgl", "latest-vllm", "tgi"}},
		{q("runtime", "vllm<0.8.5"), []string{"old-vllm"}}, // latest is not below 0.8.5: nobody knows
		{q("runtime", "vllm"), []string{"old-vllm", "pinned-vllm", "latest-vllm"}},
		{q("runtime", "vllm>=0.9"), []string{"pinned-vllm"}},
		{q("runtime", "sglang>=0.4,<0.5"), []string{"sgl"}},
		{q("runtime", "sglang>=0.4,<0.5", "runtime", "vllm<0.8.5"), []string{"old-vllm", "sgl"}},
		{q("model", "meta-llama/Llama-3.1-70B-Instruct"), []string{"old-vllm"}},
		{q("model", "meta-llama/*"), []string{"old-vllm", "pinned-vllm"}},
		{q("model", "*llama-3.1-70b*"), []string{"old-vllm"}},
		{q("unpinned", "true"), []string{"old-vllm", "sgl", "latest-vllm", "tgi"}},
		{q("unpinned", "true", "runtime", "vllm"), []string{"old-vllm", "latest-vllm"}},
		{q("inferred-only", ""), []string{"sgl", "tgi"}},
		{q("digest", digestOf(7)), []string{"pinned-vllm"}},
		{q("digest", strings.TrimPrefix(digestOf(7), "sha256:")[50:]), nil},
		{q("digest", "sha256:"+strings.Repeat("0", 40)), []string{"pinned-vllm"}}, // a prefix
		{q("image", "vllm/vllm-openai"), []string{"old-vllm", "pinned-vllm", "latest-vllm"}},
		{q("image", "docker.io/vllm/vllm-openai:v0.8.4"), []string{"old-vllm"}},
		{q("image", "*sglang*"), []string{"sgl"}},
		{q("namespace", "team"), []string{"latest-vllm", "tgi"}},
		{q("namespace", "team", "model", "org/m", "runtime", "tgi"), []string{"tgi"}},
		{q("cluster", "c2"), nil},
		{q("kind", "deployment", "namespace", "ml"), []string{"old-vllm", "pinned-vllm", "sgl"}},
		{q("kind", "StatefulSet"), nil},
		{q("changed-since", t0.Add(3*time.Hour).Format(time.RFC3339)), []string{"latest-vllm", "tgi"}},
		{q("changed-since", "21h"), []string{"latest-vllm", "tgi"}}, // now - 21h = t0+3h
	} {
		got := find(t, ix, now, tc.fields)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("find %v = %v, want %v", tc.fields, got, want)
		}
	}
}

// Each query field's bad value gets an error naming the field and value.
func TestInventoryQueryErrors(t *testing.T) {
	for _, tc := range []struct {
		fields map[string][]string
		names  []string
	}{
		{q("modle", "x"), []string{`unknown field "modle"`, "known: at,"}},
		{q("runtime", "vllm<<0.8"), []string{"runtime", `"vllm<<0.8"`, `"<<0.8"`}},
		{q("runtime", "vllm<latest"), []string{"runtime", `"latest"`}},
		{q("at", "yesterday"), []string{"at", `"yesterday"`, "RFC 3339"}},
		{q("changed-since", "2026-13-01"), []string{"changed-since", `"2026-13-01"`}},
		{q("digest", "abc"), []string{"digest", `"abc"`}},
		{q("unpinned", "maybe"), []string{"unpinned", `"maybe"`}},
		{q("state", "running"), []string{"state", `"running"`}},
		{q("image", "not an image"), []string{"image", `"not an image"`}},
		{q("model", ""), []string{"model", "empty"}},
	} {
		_, err := ParseQuery(tc.fields, t0)
		if err == nil {
			t.Errorf("ParseQuery(%v): no error", tc.fields)
			continue
		}
		for _, n := range tc.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("ParseQuery(%v) = %q, want it to name %s", tc.fields, err, n)
			}
		}
	}
}

// A workload's history: --at finds the version in effect, tombstones end
// serving, first seen stays, and the index follows the stream.
func TestInventoryHistoryAtAndFollow(t *testing.T) {
	bus, f := fleetBus(t)
	up := old
	up.image = "vllm/vllm-openai:v0.9.1"
	f.serve(up, t0.Add(48*time.Hour))
	f.tombstone(tgi, schemas.TombstoneNotServing, t0.Add(49*time.Hour))
	f.tombstone(sgl, schemas.TombstoneDeleted, t0.Add(50*time.Hour))
	ix := load(t, bus)
	now := t0.Add(72 * time.Hour)
	check := func(fields map[string][]string, want ...string) {
		t.Helper()
		if got := find(t, ix, now, fields); !slices.Equal(got, want) {
			t.Errorf("find %v = %v, want %v", fields, got, want)
		}
	}
	check(q("runtime", "vllm<0.8.5"))
	check(q("runtime", "vllm<0.8.5", "at", t0.Add(47*time.Hour).Format(time.RFC3339)), "old-vllm")
	check(q("at", t0.Add(90*time.Minute).Format(time.RFC3339)), "old-vllm", "pinned-vllm")
	check(q("at", "2026-03-01")) // before anything
	check(q("state", "gone"), "sgl", "tgi")
	check(q("state", "deleted", "model", "Qwen/*"), "sgl") // the facts of its last BOM
	check(q("state", "not-serving", "namespace", "ml"))
	q0, _ := ParseQuery(q("model", "meta-llama/Llama-3.1-70B-Instruct"), now)
	e := ix.Find(q0)
	if len(e) != 1 || !e[0].FirstSeen.Equal(t0) || !e[0].LastChanged.Equal(t0.Add(48*time.Hour)) || e[0].Runtimes[0].Version != "0.9.1" {
		t.Fatalf("entry %+v", e)
	}
	if w, ok := ix.Workload("c1", "ml", "Deployment", "old-vllm"); !ok || len(w.Versions) != 2 {
		t.Fatalf("workload: %v %+v", ok, w)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go follow.New(bus.Reader(), schemas.StreamBOMs, ix).Run(ctx, func(err error) { t.Error(err) })
	f.serve(spec{ns: "new", name: "fresh", image: "vllm/vllm-openai:v0.8.0", model: "org/new", declared: true}, now)
	bustest.Eventually(t, "the index follows BOMS", 10*time.Second, func() bool {
		return slices.Equal(find(t, ix, now, q("runtime", "vllm<0.8.5")), []string{"fresh"})
	})
}

// A message stored twice (no dedupe id) is one version; one the codec
// refuses is counted, not indexed; an unreadable BOM is listed and
// matches no fact filter.
func TestInventorySkipsAndDuplicates(t *testing.T) {
	bus, f := fleetBus(t)
	raw := func(subject string, h nats.Header, body string) {
		m := nats.NewMsg(subject)
		m.Header, m.Data = h, []byte(body)
		if _, err := bus.Writer().Publish(context.Background(), m, ""); err != nil {
			t.Fatal(err)
		}
	}
	bm := schemas.BOMMessage{Workload: tgi.id(), ChangeSeq: f.seq[tgi.id().UID], Tombstone: schemas.TombstoneDeleted}
	h, body, _ := bm.Encode()
	delete(h, schemas.HeaderMsgID)
	raw(bm.Subject(), h, string(body)) // a tombstone with the change sequence of the BOM: a duplicate version
	odd := schemas.BOMMessage{Workload: spec{ns: "ml", name: "odd"}.id(), ChangeSeq: 1, BomHash: digestOf(1), InputHash: "x", BOM: []byte(`{"components":7}`)}
	h, body, _ = odd.Encode()
	raw(odd.Subject(), h, string(body))
	raw(odd.Subject(), nats.Header{schemas.HeaderChangeSeq: {"zero"}}, "{}")
	ix := load(t, bus)
	st := ix.Stats()
	if st.Workloads != 6 || st.Versions != 6 || st.Skipped != 1 || st.Unreadable != 1 || !strings.Contains(st.LastSkipped, schemas.HeaderChangeSeq) {
		t.Fatalf("stats %+v", st)
	}
	if got := find(t, ix, t0, q("namespace", "ml")); !slices.Equal(got, []string{"odd", "old-vllm", "pinned-vllm", "sgl"}) {
		t.Errorf("listing: %v", got)
	}
	if got := find(t, ix, t0, q("namespace", "ml", "model", "*")); slices.Contains(got, "odd") {
		t.Errorf("an unreadable BOM matched a model filter: %v", got)
	}
	if got := find(t, ix, t0, q("namespace", "team")); !slices.Equal(got, []string{"latest-vllm", "tgi"}) {
		t.Errorf("a duplicate version replaced the first: %v", got)
	}
}
