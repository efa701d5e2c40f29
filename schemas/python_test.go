package schemas

import (
	"reflect"
	"strings"
	"testing"
)

var downloadCalls = []string{"snapshot_download", "hf_hub_download"}

func TestPythonCalls(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []PythonCall
	}{
		{"keywords", `from huggingface_hub import snapshot_download
snapshot_download(repo_id="org/m", revision='abc123', local_dir="/models")`,
			[]PythonCall{{Name: "snapshot_download", Keywords: map[string]string{"repo_id": "org/m", "revision": "abc123", "local_dir": "/models"}}}},
		{"positional and keyword", `hf_hub_download("org/m", 'config.json', revision="v1")`,
			[]PythonCall{{Name: "hf_hub_download", Positional: []string{"org/m", "config.json"}, Keywords: map[string]string{"revision": "v1"}}}},
		{"nested parentheses", `snapshot_download(repo_id=os.getenv("REPO", "org/default"), revision=str(get(1, (2, 3))), local_dir="/m")`,
			[]PythonCall{{Name: "snapshot_download", Keywords: map[string]string{"local_dir": "/m"}}}},
		{"brackets and braces", `snapshot_download("org/m", allow_patterns=["*.json", "*.safetensors"], kwargs={"a": ("b", "c")}, revision="r")`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{"org/m"}, Keywords: map[string]string{"revision": "r"}}}},
		{"commas and parentheses in strings", `snapshot_download("org/m(1), x", local_dir='/a,b)(c', revision=")")`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{"org/m(1), x"}, Keywords: map[string]string{"local_dir": "/a,b)(c", "revision": ")"}}}},
		{"non-literal arguments", `snapshot_download(repo, "x", token=os.environ["T"], revision=rev, local_dir=f"/m/{name}")`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{"", "x"}, Keywords: map[string]string{}}}},
		{"prefixed strings", `snapshot_download(r'org/raw', b"org/bytes", u'org/uni', revision=R"v2", local_dir=rb'/m')`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{"org/raw", "org/bytes", "org/uni"}, Keywords: map[string]string{"revision": "v2", "local_dir": "/m"}}}},
		{"spaces around =, and ==", `snapshot_download( repo_id = "org/m" , revision == "x" )`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{""}, Keywords: map[string]string{"repo_id": "org/m"}}}},
		{"a qualified name", `import huggingface_hub; huggingface_hub.snapshot_download(repo_id="org/m")`,
			[]PythonCall{{Name: "snapshot_download", Keywords: map[string]string{"repo_id": "org/m"}}}},
		{"a name inside a longer identifier", `my_snapshot_download(repo_id="no"); snapshot_downloader("no"); xhf_hub_download("no")`,
			nil},
		{"the longer one first, then the call", `my_snapshot_download("no") + snapshot_download("yes")`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{"yes"}, Keywords: map[string]string{}}}},
		{"calls in order", `hf_hub_download("a", "f"); snapshot_download("b"); hf_hub_download("c", "g")`,
			[]PythonCall{
				{Name: "hf_hub_download", Positional: []string{"a", "f"}, Keywords: map[string]string{}},
				{Name: "snapshot_download", Positional: []string{"b"}, Keywords: map[string]string{}},
				{Name: "hf_hub_download", Positional: []string{"c", "g"}, Keywords: map[string]string{}},
			}},
		{"a call inside another's arguments is one argument", `snapshot_download(hf_hub_download("inner"), revision="v")`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{""}, Keywords: map[string]string{"revision": "v"}}}},
		{"unclosed: what came before is kept", `snapshot_download("a"); snapshot_download("b", revision="v"`,
			[]PythonCall{{Name: "snapshot_download", Positional: []string{"a"}, Keywords: map[string]string{}}}},
		{"an unterminated string", `snapshot_download("a)`, nil},
		{"no arguments", `snapshot_download()`, []PythonCall{{Name: "snapshot_download", Keywords: map[string]string{}}}},
		{"a mismatched bracket", `snapshot_download("a"]`, nil},
		{"no call", `print("hello")`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PythonCalls(tc.src, downloadCalls)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// An escaped quote does not end a string: the commas and parentheses
// after it are inside it, and the arguments that follow are read as they
// are.
func TestPythonCallsEscapedQuotes(t *testing.T) {
	got := PythonCalls(`snapshot_download(local_dir="a\",b)", repo_id='it\'s), x', revision="v1"); hf_hub_download("next")`, downloadCalls)
	if len(got) != 2 || got[1].Name != "hf_hub_download" || !reflect.DeepEqual(got[1].Positional, []string{"next"}) {
		t.Fatalf("got %#v", got)
	}
	c := got[0]
	if len(c.Positional) != 0 || len(c.Keywords) != 3 || c.Keywords["revision"] != "v1" {
		t.Errorf("got %#v", c)
	}
	for _, k := range []string{"local_dir", "repo_id"} {
		if v := c.Keywords[k]; v == "" || strings.Contains(v, "revision") {
			t.Errorf("%s = %q", k, v)
		}
	}
	// An escaped backslash before the closing quote ends the string.
	got = PythonCalls(`snapshot_download("a\\", revision="v2")`, downloadCalls)
	if len(got) != 1 || got[0].Keywords["revision"] != "v2" || len(got[0].Positional) != 1 {
		t.Errorf("escaped backslash: %#v", got)
	}
}

func TestPythonCallsOnlyNamesAsked(t *testing.T) {
	src := `hf_hub_download("a", "f"); snapshot_download("b")`
	got := PythonCalls(src, []string{"snapshot_download"})
	if len(got) != 1 || got[0].Name != "snapshot_download" || got[0].Positional[0] != "b" {
		t.Errorf("got %#v", got)
	}
	if got := PythonCalls(src, nil); got != nil {
		t.Errorf("no names: %#v", got)
	}
}

func TestPythonCallsSourceLimit(t *testing.T) {
	call := `snapshot_download("org/m")`
	pad := "#" + strings.Repeat("x", maxPythonSource) + "\n"
	if got := PythonCalls(pad+call, downloadCalls); got != nil {
		t.Errorf("a call past the limit was read: %#v", got)
	}
	within := strings.Repeat("#", maxPythonSource-len(call)) + call
	if got := PythonCalls(within, downloadCalls); len(got) != 1 || got[0].Positional[0] != "org/m" {
		t.Errorf("a call ending at the limit: %#v", got)
	}
}

func TestPythonCallArg(t *testing.T) {
	c := PythonCall{Name: "hf_hub_download", Positional: []string{"org/m", "", "f.json"}, Keywords: map[string]string{"revision": "v1", "repo_id": "org/kw"}}
	for _, tc := range []struct {
		keyword  string
		position int
		want     string
	}{
		{"repo_id", 0, "org/kw"}, // the keyword wins
		{"filename", 2, "f.json"},
		{"filename", 1, ""}, // not a literal
		{"revision", -1, "v1"},
		{"local_dir", -1, ""},
		{"local_dir", 3, ""},
	} {
		if got := c.Arg(tc.keyword, tc.position); got != tc.want {
			t.Errorf("Arg(%q, %d) = %q, want %q", tc.keyword, tc.position, got, tc.want)
		}
	}
	if got := (PythonCall{}).Arg("repo_id", 0); got != "" {
		t.Errorf("empty call: %q", got)
	}
}

func TestPythonCallsText(t *testing.T) {
	hf := "hf_" + strings.Repeat("aB3", 10)
	keep := []string{"repo_id", "revision", "local_dir"}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"keywords by allow-list, sorted", `snapshot_download(token="` + hf + `", revision="r1", repo_id="org/m", max_workers="8")`,
			`snapshot_download(repo_id="org/m", revision="r1")`},
		{"other statements dropped", `import os; login(token="` + hf + `"); x = 1; hf_hub_download("org/m", "config.json", local_dir="/m")`,
			`hf_hub_download("org/m", "config.json", local_dir="/m")`},
		{"values through RedactText", `snapshot_download("` + hf + `", local_dir="https://u:p@host/m?sig=1")`,
			`snapshot_download("REDACTED", local_dir="https://REDACTED@host/m")`},
		{"several calls", `snapshot_download("a"); snapshot_download(repo_id=x)`,
			`snapshot_download("a"); snapshot_download()`},
		{"none", `print(1)`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PythonCallsText(tc.src, downloadCalls, keep)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			// What it writes reads back as the same calls.
			if again := PythonCallsText(got, downloadCalls, keep); again != got {
				t.Errorf("not stable: %s -> %s", got, again)
			}
		})
	}
}

// Defects found by the first tests of PythonCalls, each kept.
func TestPythonCallsFixes(t *testing.T) {
	// A positional that is no literal keeps its place in the text written
	// back, so the next one is not read as the first.
	text := PythonCallsText(`hf_hub_download(repo, "config.json")`, []string{"hf_hub_download"}, nil)
	calls := PythonCalls(text, []string{"hf_hub_download"})
	if len(calls) != 1 || calls[0].Arg("repo_id", 0) != "" || calls[0].Arg("", 1) != "config.json" {
		t.Errorf("written back as %q, read as %+v", text, calls)
	}
	// An expression that starts and ends with quotes is no literal.
	for _, src := range []string{`f("a" + name + "b")`, `f("a" "b")`, `f("x" if c else "y")`} {
		if c := PythonCalls(src, []string{"f"}); len(c) != 1 || c[0].Arg("", 0) != "" {
			t.Errorf("%s: read as %+v", src, c)
		}
	}
	// Escapes are decoded; raw strings keep them.
	for src, want := range map[string]string{`f('it\'s')`: "it's", `f("a\"b")`: `a"b`, `f(r'a\nb')`: `a\nb`, `f('a\\b')`: `a\b`} {
		if c := PythonCalls(src, []string{"f"}); len(c) != 1 || c[0].Arg("", 0) != want {
			t.Errorf("%s: read as %+v, want %q", src, c, want)
		}
	}
	// Written back, a value with quotes reads the same.
	text = PythonCallsText(`f(repo_id='a"b')`, []string{"f"}, []string{"repo_id"})
	if c := PythonCalls(text, []string{"f"}); len(c) != 1 || c[0].Arg("repo_id", -1) != `a"b` {
		t.Errorf("round trip of %q: %+v", text, c)
	}
}

// FuzzPythonCalls: what the collector keeps of a python -c script never
// panics, reads back as the same calls (names, and the literal values
// kept), and a second pass changes nothing.
func FuzzPythonCalls(f *testing.F) {
	for _, s := range []string{
		"", "snapshot_download(", `snapshot_download(repo_id="org/x", revision='abc', local_dir="/m", token="hf_` + strings.Repeat("x", 30) + `")`,
		`hf_hub_download(repo, "f.json")`, `snapshot_download(r'a\nb', "x" + y)`, `snapshot_download("a\"b", ("c", "d"))`,
		`x=snapshot_download(repo_id="o/n");snapshot_download(**kw)`,
	} {
		f.Add(s)
	}
	names, keep := []string{"snapshot_download", "hf_hub_download"}, []string{"repo_id", "revision", "local_dir"}
	f.Fuzz(func(t *testing.T, src string) {
		text := PythonCallsText(src, names, keep)
		if again := PythonCallsText(text, names, keep); again != text {
			t.Fatalf("not stable: %q -> %q -> %q", src, text, again)
		}
		if got, want := len(PythonCalls(text, names)), len(PythonCalls(src, names)); got != want {
			t.Fatalf("%q keeps %d calls of %d: %q", src, got, want, text)
		}
	})
}
