package gcs

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/bomstream/bomstream/sinks"
	"github.com/bomstream/bomstream/sinks/gcs/gcstest"
)

// A template in the old form and the same in the new one name the same
// objects; the old one's new form is the new one.
func TestPathTemplateForms(t *testing.T) {
	vals := map[string]string{"prefix": "pre", "cluster": "dev", "namespace": "ml", "kind": "Deployment", "name": "chat", "uid": "u-1", "bomHash": "abc"}
	for old, want := range map[string]string{
		"{prefix}/{cluster}/{namespace}/{kind}/{name}/{bomHash}.cdx.json": DefaultPathTemplate,
		"by-uid/{cluster}/{uid}/bom-{bomHash}.json":                       "by-uid/{{ .Cluster }}/{{ .UID }}/bom-{{ .BOMHash }}.json",
		"{cluster}-{namespace}/{kind}.{name}/{bomHash}":                   "{{ .Cluster }}-{{ .Namespace }}/{{ .Kind }}.{{ .Name }}/{{ .BOMHash }}",
	} {
		o, err := parseTemplate(old)
		if err != nil {
			t.Fatal(err)
		}
		n, err := parseTemplate(want)
		if err != nil {
			t.Fatal(err)
		}
		if !o.old || n.old || o.newForm() != want || n.newForm() != want {
			t.Errorf("%s: old %v, new %v, new forms %q and %q, want %q", old, o.old, n.old, o.newForm(), n.newForm(), want)
		}
		if !reflect.DeepEqual(o.dir, n.dir) || !reflect.DeepEqual(o.file, n.file) {
			t.Errorf("%s and %s parse apart", old, want)
		}
		if a, b := render(o.dir, vals)+"/"+render(o.file, vals), render(n.dir, vals)+"/"+render(n.file, vals); a != b {
			t.Errorf("%s names %s, %s names %s", old, a, want, b)
		}
	}
	// The braces may hold spaces or none, as in Go templates.
	if _, err := parseTemplate("{{.Cluster}}/{{ .UID}}/{{.BOMHash }}"); err != nil {
		t.Error(err)
	}
	for tmpl, want := range map[string]string{
		"{{ .UID }}/{{ .Hash }}.json":                                     `unknown field {{ .Hash }} (known: {{ .BOMHash }}, {{ .Cluster }}, {{ .Kind }}, {{ .Name }}, {{ .Namespace }}, {{ .Prefix }}, {{ .UID }}`,
		"{{ .UID }}/{{ .BOMHash | upper }}":                               `unknown field {{ .BOMHash | upper }}`,
		"{{ .Cluster }}/{{ .Namespace }}/{{ .Kind }}/{{ .Name }}/x.json":  "the last segment must hold {{ .BOMHash }}",
		"{{ .Cluster }}/{{ .Namespace }}/{{ .Name }}/{{ .BOMHash }}.json": "the folder part lacks {{ .Kind }}",
		"{{ .UID }}/{{ .BOMHash }}/{{ .BOMHash }}":                        "{{ .BOMHash }} may only appear in the last segment",
		"{{ .UID }}/{{ .BOMHash }":                                        "unclosed {{",
		"{{ .UID }}}/{{ .BOMHash }}":                                      "stray { or }",
	} {
		if _, err := parseTemplate(tmpl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tmpl, err, want)
		}
	}
}

// A sink whose template is in the old form warns once, naming the new
// form; one in the new form does not.
func TestPathTemplateOldFormWarns(t *testing.T) {
	srv := gcstest.Start(t, "boms")
	reg := sinks.Registry{Type: SinkType}
	for tmpl, want := range map[string]string{
		"{cluster}/{uid}/{bomHash}.json":                `pathTemplate "{cluster}/{uid}/{bomHash}.json" uses the old {name} form, read for one more release; write "{{ .Cluster }}/{{ .UID }}/{{ .BOMHash }}.json"`,
		"{{ .Cluster }}/{{ .UID }}/{{ .BOMHash }}.json": "",
		"": "",
	} {
		raw := srv.Config("")
		raw["pathTemplate"] = tmpl
		cfg, err := reg.Decode(Type, raw)
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zap.WarnLevel)
		s, err := reg.New(context.Background(), Type, "g", cfg, sinks.Deps{Log: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		var got []string
		for _, e := range logs.All() {
			got = append(got, e.Message)
		}
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
			t.Errorf("%q: warnings %q, want %q", tmpl, got, want)
		}
	}
}
