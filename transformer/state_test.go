package transformer

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/google/uuid"
)

// TestSerialNumber: serialNumber is uuid.NewSHA1's URN, short and long
// inputs alike.
func TestSerialNumber(t *testing.T) {
	for _, in := range [][2]string{{"", ""}, {"sha256:abc", "v1"}, {strings.Repeat("x", 300), "<v&1>é"}} {
		want := uuid.NewSHA1(uuid.NameSpaceURL, []byte("bomstream:"+in[0]+":"+in[1])).URN()
		if got := serialNumber(in[0], in[1]); got != want {
			t.Errorf("serialNumber(%q, %q) = %s, want %s", in[0], in[1], got, want)
		}
	}
}

// TestEnvTruthy: envTruthy is the lower-casing definition, for every rune
// that lowers to an ASCII letter put in each falsy word.
func TestEnvTruthy(t *testing.T) {
	lowering := func(v string) bool {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "", "0", "false", "no", "off":
			return false
		}
		return true
	}
	var odd []rune // runes but ASCII letters that lower to ASCII
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l < 0x80 && r != l && !('A' <= r && r <= 'Z') {
			odd = append(odd, r)
		}
	}
	vs := []string{"", " ", "0", "1", "false", "FALSE", " Off ", "no", "NO", "yes", "true", "offf", "of", "\tfalse\n"}
	for _, w := range []string{"0", "false", "no", "off"} {
		for i := range w {
			vs = append(vs, w[:i]+strings.ToUpper(w[i:i+1])+w[i+1:])
			for _, r := range odd {
				vs = append(vs, w[:i]+string(r)+w[i+1:])
			}
		}
	}
	for _, v := range vs {
		if got, want := envTruthy(v), lowering(v); got != want {
			t.Errorf("envTruthy(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestModelRefOf: the key of a model is kind:id, the id lower-cased for a
// Hugging Face one, and its bom-ref model:key.
func TestModelRefOf(t *testing.T) {
	for _, c := range []struct{ kind, id string }{
		{locHF, "Qwen/Qwen3-0.6B"}, {locHF, "meta-llama/Llama-3.1-405B-Instruct"}, {locHF, "ÉCOLE/Été"},
		{locPath, "/Models/X"}, {"s3", "s3://B/k"}, {locNIMImage, "Meta/Llama"},
	} {
		key := c.kind + ":" + c.id
		if c.kind == locHF {
			key = c.kind + ":" + strings.ToLower(c.id)
		}
		if got := modelRefOf(c.kind, c.id); got != "model:"+key {
			t.Errorf("modelRefOf(%q, %q) = %q, want %q", c.kind, c.id, got, "model:"+key)
		}
	}
}

// TestRenderStateReuse: a BOM rendered with a state another render used,
// or one shrunk to its limit, equals a fresh render's, and the Result holds
// no memory of the state.
func TestRenderStateReuse(t *testing.T) {
	r := newRenderer(t)
	a, b := event(t, dynamoDisagg()), event(t, lwsVLLM())
	wantA, err := newRenderer(t).Render(a)
	if err != nil {
		t.Fatal(err)
	}
	got1, err := r.Render(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Render(b); err != nil {
		t.Fatal(err)
	}
	got2, err := r.Render(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []Result{got1, got2} {
		if !bytes.Equal(got.BOM, wantA.BOM) {
			t.Fatalf("render after reuse differs\n got %s\nwant %s", got.BOM, wantA.BOM)
		}
	}
	if &got1.BOM[0] == &got2.BOM[0] {
		t.Error("two Results share their BOM bytes")
	}
}
