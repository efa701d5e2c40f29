package helm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The fleet values (docs/fleet.md) render a configuration bomstream
// accepts: a hub (distributed, R3, replicas of the stages, the edges it
// sources) and an edge (all-in-one, its JetStream domain, the leaf link to
// the hub with credentials and TLS from Secrets mounted where the
// configuration names them).
func TestFleetValues(t *testing.T) {
	bin := bomstreamBinary(t)
	cases := map[string]struct {
		sets   []string
		want   []string
		mounts []string
		args   string // the all-in-one container's command
	}{
		"hub": {
			sets: []string{"shape=distributed", "cluster=hub", "nats.url=nats://hub-1:4222\\,nats://hub-2:4222",
				"nats.streamReplicas=3", "transformer.replicas=2", "sink.replicas=2",
				"fleet.edges[0].domain=edge-a", "fleet.edges[0].cluster=a",
				"fleet.edges[1].domain=edge-b", "fleet.edges[1].cluster=b"},
			want: []string{"replicas: 3", "edges:", "domain: edge-a", "cluster: a", "domain: edge-b"},
		},
		"edge": {
			sets: []string{"shape=all-in-one", "cluster=a", "fleet.edge.domain=edge-a",
				"fleet.edge.hub.url=nats-leaf://hub.example:7422",
				"fleet.edge.hub.auth.secretName=edge-a-link", "fleet.edge.hub.auth.credsKey=edge.creds",
				"fleet.edge.hub.tls.secretName=hub-ca", "fleet.edge.hub.tls.caKey=ca.crt"},
			want:   []string{"domain: edge-a", "url: nats-leaf://hub.example:7422", "fleet-hub-auth/hub.creds", "fleet-hub-tls/ca.crt", "disabled: true"},
			mounts: []string{"fleet-hub-auth", "fleet-hub-tls"},
			args:   "collector",
		},
		"edge running the whole pipeline": {
			sets: []string{"shape=all-in-one", "cluster=a", "fleet.edge.domain=edge-a", "fleet.edge.collectorOnly=false",
				"fleet.edge.hub.url=nats-leaf://hub.example:7422"},
			want: []string{"domain: edge-a"},
			args: "run",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, releaseName, releaseNamespace, values(t, append(c.sets, "sinks.stdout.enabled=true")...))
			cm := convert[corev1.ConfigMap](t, r.one(t, "ConfigMap", "bomstream"))
			conf := cm.Data["bomstream.yaml"]
			for _, w := range c.want {
				if !strings.Contains(conf, w) {
					t.Errorf("bomstream.yaml lacks %q:\n%s", w, conf)
				}
			}
			if c.args != "" {
				d := convert[appsv1.Deployment](t, r.one(t, "Deployment", "bomstream"))
				if got := d.Spec.Template.Spec.Containers[0].Args; len(got) == 0 || got[0] != c.args {
					t.Errorf("the edge pod runs %v, want %s", got, c.args)
				}
			}
			if len(c.mounts) > 0 {
				d := convert[appsv1.Deployment](t, r.one(t, "Deployment", "bomstream"))
				names := map[string]bool{}
				for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
					names[m.Name] = true
				}
				vols := map[string]bool{}
				for _, v := range d.Spec.Template.Spec.Volumes {
					vols[v.Name] = v.Secret != nil
				}
				for _, m := range c.mounts {
					if !names[m] || !vols[m] {
						t.Errorf("%s is not mounted from a Secret: mounts %v, volumes %v", m, names, vols)
					}
				}
			}
			dir := t.TempDir()
			for key, text := range cm.Data {
				text = strings.ReplaceAll(text, "/etc/bomstream/", dir+"/")
				if err := os.WriteFile(filepath.Join(dir, key), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(bin, "sink", "check", "stdout", "--config", filepath.Join(dir, "bomstream.yaml"))
			cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "sink stdout (stdout) has no checks") {
				t.Errorf("bomstream refuses the rendered configuration: %v\n%s\n--- bomstream.yaml:\n%s", err, out, conf)
			}
		})
	}
	// An edge's NetworkPolicy lets its leaf-node link out, to the peers and
	// ports given; without the edge, no such rule.
	for _, edge := range []bool{true, false} {
		sets := []string{"shape=all-in-one", "networkPolicy.enabled=true", "networkPolicy.apiServer.cidrs={10.0.0.1/32}",
			"networkPolicy.hub.to[0].ipBlock.cidr=192.0.2.10/32", "networkPolicy.hub.ports={7422}"}
		if edge {
			sets = append(sets, "fleet.edge.domain=edge-a", "fleet.edge.hub.url=nats-leaf://hub.example:7422")
		}
		r := mustRender(t, releaseName, releaseNamespace, values(t, sets...))
		np := convert[networkingv1.NetworkPolicy](t, r.one(t, "NetworkPolicy", "bomstream-all-in-one"))
		found := false
		for _, e := range np.Spec.Egress {
			for _, to := range e.To {
				if to.IPBlock != nil && to.IPBlock.CIDR == "192.0.2.10/32" && len(e.Ports) == 1 && e.Ports[0].Port.IntValue() == 7422 {
					found = true
				}
			}
		}
		if found != edge {
			t.Errorf("edge %v: egress to the hub's leaf listener present %v: %+v", edge, found, np.Spec.Egress)
		}
	}
	// An edge domain that is no name fails the schema.
	if _, err := render(loadChart(t), releaseName, releaseNamespace, values(t, "fleet.edge.domain=not a name")); err == nil {
		t.Error("a bad fleet.edge.domain rendered")
	}
}
