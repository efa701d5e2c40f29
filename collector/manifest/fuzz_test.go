package manifest

import "testing"

func FuzzParse(f *testing.F) {
	seeds := []string{
		"kind: A\nmetadata: {name: a}\n",
		"---\n--- {a: 1}\n...\n%YAML 1.2\n---\nkind: List\nitems: [{kind: B}, 1]\n",
		"a: &x [*x]\n",
		"k: <<\n<<: [*a]\n",
		"{\"kind\": \"A\", \"items\": []}",
		"kind: DeploymentList\nitems:\n- kind: Deployment\n  metadata: {name: x}\n",
		"\t- broken\n: :\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := Parse("fuzz.yaml", data)
		for _, o := range objs {
			if o.Obj == nil {
				t.Fatalf("nil object at line %d", o.Line)
			}
			if o.Line < 1 {
				t.Fatalf("line %d < 1", o.Line)
			}
		}
	})
}
