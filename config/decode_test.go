package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Replicas int           `yaml:"replicas"`
	Interval time.Duration `yaml:"interval"`
}

type shared struct {
	Level string `yaml:"level"`
}

type file struct {
	Name   string            `yaml:"name"`
	Stream inner             `yaml:"stream"`
	Items  []inner           `yaml:"items"`
	ByName map[string]inner  `yaml:"byName"`
	Block  map[string]any    `yaml:"block"`
	Raw    yaml.Node         `yaml:"raw"`
	Shared shared            `yaml:",inline"`
	Extra  *map[string]int64 `yaml:"extra"`
}

func TestDecode(t *testing.T) {
	var f file
	lines, err := Decode([]byte("name: a\nstream:\n  replicas: 3\n  interval: 30s\nitems:\n- {replicas: 1}\n- replicas: 2\nbyName: {x: {replicas: 4}}\nblock: {anything: [1]}\nraw: {whatever: 1}\nlevel: warn\n"), &f)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "a" || f.Stream.Replicas != 3 || f.Stream.Interval != 30*time.Second || len(f.Items) != 2 || f.Items[1].Replicas != 2 ||
		f.ByName["x"].Replicas != 4 || f.Block["anything"] == nil || f.Raw.Kind != yaml.MappingNode || f.Shared.Level != "warn" {
		t.Errorf("decoded %+v", f)
	}
	for path, want := range map[string]int{"name": 1, "stream.replicas": 3, "items[0]": 6, "items[1].replicas": 7, "byName.x.replicas": 8, "level": 11} {
		if lines[path] != want {
			t.Errorf("line of %s = %d, want %d", path, lines[path], want)
		}
	}
	// An empty document leaves the value as it was.
	f = file{Name: "kept"}
	if _, err := Decode(nil, &f); err != nil || f.Name != "kept" {
		t.Errorf("empty document: %+v, %v", f, err)
	}
}

// Every problem at once, each naming its line and path, in a user's words.
func TestDecodeErrors(t *testing.T) {
	var f file
	_, err := Decode([]byte("nmae: a\nstream:\n  replicas: three\n  intervall: 1s\nitems:\n- {replicas: x}\nbyName: {x: {replica: 1}}\n"), &f)
	if err == nil {
		t.Fatal("accepted")
	}
	got := err.Error()
	for _, want := range []string{
		"line 1: nmae: unknown key (known here: block, byName, extra, items, level, name, raw, stream)",
		"line 3: stream.replicas: cannot unmarshal the text `three` into int",
		"line 4: stream.intervall: unknown key (known here: interval, replicas)",
		"line 6: items[0].replicas: cannot unmarshal the text `x` into int",
		"line 7: byName.x.replica: unknown key (known here: interval, replicas)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("error\n%s\nlacks %q", got, want)
		}
	}
	if strings.Contains(got, "config.") {
		t.Errorf("error %q names a Go type", got)
	}
	// Several values on one line: the error names the one at fault; Go's
	// types are named in words.
	_, err = Decode([]byte("stream: {interval: 1s, replicas: x}\nitems: {replicas: 1}\nbyName: [x]\n"), &f)
	for _, want := range []string{
		"line 1: stream.replicas: cannot unmarshal the text `x` into int",
		"line 2: items: cannot unmarshal a mapping into a list",
		"line 3: byName: cannot unmarshal a list into a mapping",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%v\nlacks %q", err, want)
		}
	}
	if _, err := Decode([]byte("stream: [\n"), &f); err == nil || !strings.Contains(err.Error(), "line") {
		t.Errorf("not YAML: %v", err)
	}
}

func TestDecodeValue(t *testing.T) {
	var in inner
	if err := DecodeValue(map[string]any{"replicas": 2, "interval": "1m"}, &in); err != nil || in.Replicas != 2 || in.Interval != time.Minute {
		t.Fatalf("%+v, %v", in, err)
	}
	err := DecodeValue(map[string]any{"replicas": "x", "zeta": 1, "alpha": 2}, &in)
	want := "unknown key \"alpha\" (known: interval, replicas)\nunknown key \"zeta\" (known: interval, replicas)\nreplicas: cannot unmarshal the text `x` into int"
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	var f file
	if err := DecodeValue(map[string]any{"stream": map[string]any{"replica": 1}}, &f); err == nil || err.Error() != `stream: unknown key "replica" (known: interval, replicas)` {
		t.Errorf("nested: %v", err)
	}
	if err := DecodeValue(nil, &f); err != nil {
		t.Errorf("nil: %v", err)
	}
}
