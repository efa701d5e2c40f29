package helm_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// With api.enabled the pod serving the inventory API (all-in-one, or the
// sink Deployment) listens beyond loopback with the token from the
// Secret, and the Service kubectl bomstream finds by its labels selects
// that pod's API port; without the Secret the chart refuses.
func TestInventoryAPI(t *testing.T) {
	sets := []string{"api.enabled=true", "api.token.secretName=bomstream-api", "api.port=8181", "cluster=prod-eu"}
	for shape, deploy := range map[string]string{"all-in-one": "bomstream", "distributed": "bomstream-sink"} {
		r := renderVariant(t, variant{}, append(sets, "shape="+shape)...)
		svcs := r.of("Service")
		if len(svcs) != 1 {
			t.Fatalf("%s: %d Services", shape, len(svcs))
		}
		svc := convert[corev1.Service](t, svcs[0])
		if svc.Name != "bomstream-api" || svc.Labels["app.kubernetes.io/part-of"] != "bomstream" || svc.Labels["app.kubernetes.io/component"] != "api" {
			t.Errorf("%s: service %s labels %v", shape, svc.Name, svc.Labels)
		}
		if a := svc.Annotations; a["bomstream.dev/cluster"] != "prod-eu" || a["bomstream.dev/api-token-secret"] != "bomstream-api" || a["bomstream.dev/api-token-key"] != "token" {
			t.Errorf("%s: annotations %v", shape, a)
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "api" || svc.Spec.Ports[0].Port != 8181 || svc.Spec.Ports[0].TargetPort.String() != "api" {
			t.Errorf("%s: ports %+v", shape, svc.Spec.Ports)
		}
		var serving int
		for _, o := range r.of("Deployment") {
			d := convert[appsv1.Deployment](t, o)
			selected := true
			for k, v := range svc.Spec.Selector {
				selected = selected && d.Spec.Template.Labels[k] == v
			}
			c := d.Spec.Template.Spec.Containers[0]
			var apiPort int32
			for _, p := range c.Ports {
				if p.Name == "api" {
					apiPort = p.ContainerPort
				}
			}
			listens := slices.Contains(c.Args, "--api-listen=:8181")
			if d.Name != deploy {
				if selected || listens || apiPort != 0 {
					t.Errorf("%s: %s serves or is selected (selected %v, args %v, port %d)", shape, d.Name, selected, c.Args, apiPort)
				}
				continue
			}
			serving++
			if !selected || !listens || apiPort != 8181 {
				t.Errorf("%s: %s: selected %v, args %v, api port %d", shape, d.Name, selected, c.Args, apiPort)
			}
			files := mountedFiles(t, d.Spec.Template.Spec, c)
			if !slices.Contains(c.Args, "--api-token-file=/var/run/secrets/bomstream/api/token") || files["/var/run/secrets/bomstream/api/token"] != "bomstream-api:token" {
				t.Errorf("%s: token: args %v, files %v", shape, c.Args, files)
			}
		}
		if serving != 1 {
			t.Errorf("%s: %d Deployments named %s", shape, serving, deploy)
		}
	}
	if _, err := render(loadChart(t), releaseName, releaseNamespace, values(t, "api.enabled=true")); err == nil || !strings.Contains(err.Error(), "api.token.secretName") {
		t.Errorf("api.enabled without a token Secret: %v", err)
	}
}

// With the API and networkPolicy enabled, the serving pod's policy admits
// its http port from anywhere and the API port from networkPolicy.api.from;
// the other pods keep egress-only policies.
func TestNetworkPolicyAdmitsAPI(t *testing.T) {
	sets := []string{"api.enabled=true", "api.token.secretName=t", "networkPolicy.enabled=true", "networkPolicy.apiServer.cidrs={172.18.0.2/32}",
		"networkPolicy.api.from[0].ipBlock.cidr=10.0.0.0/8"}
	for shape, serving := range map[string]string{"all-in-one": "all-in-one", "distributed": "sink"} {
		r := renderVariant(t, variant{}, append(sets, "shape="+shape)...)
		for _, o := range r.of("NetworkPolicy") {
			np := convert[networkingv1.NetworkPolicy](t, o)
			component := np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"]
			if component != serving {
				if len(np.Spec.Ingress) > 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
					t.Errorf("%s %s: ingress %+v", shape, component, np.Spec.Ingress)
				}
				continue
			}
			var got []string
			for _, in := range np.Spec.Ingress {
				from := "anywhere"
				if len(in.From) > 0 && in.From[0].IPBlock != nil {
					from = in.From[0].IPBlock.CIDR
				}
				for _, p := range in.Ports {
					got = append(got, p.Port.String()+" from "+from)
				}
			}
			if want := []string{"9090 from anywhere", "8080 from 10.0.0.0/8"}; !slices.Equal(got, want) ||
				!slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || len(np.Spec.Egress) == 0 {
				t.Errorf("%s %s: ingress %v (want %v), types %v", shape, component, got, want, np.Spec.PolicyTypes)
			}
		}
	}
}
