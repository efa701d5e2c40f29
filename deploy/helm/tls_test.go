package helm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// apiSets turn the API on, with its token Secret.
var apiSets = []string{"api.enabled=true", "api.token.secretName=bomstream-api", "cluster=prod-eu"}

// certManagerSets take the API's certificate from a Certificate the chart
// renders.
var certManagerSets = []string{"api.tls.enabled=true", "api.tls.certManager.issuerRef.name=internal-ca",
	"api.tls.certManager.issuerRef.kind=ClusterIssuer", "api.tls.certManager.dnsNames={bomstream.example.com,localhost}",
	"api.tls.certManager.ipAddresses={127.0.0.1}"}

// With api.tls the API serves HTTPS: the serving pod mounts tls.crt and
// tls.key of the Secret (an existing one, or the Certificate's) read-only
// and passes them to --api-tls-cert and --api-tls-key, and the Service's
// port says appProtocol https, which makes kubectl bomstream go through
// the service proxy's https: scheme. The pods' probes stay on the http
// port (/healthz, /readyz), which serves no inventory. Without api.tls
// nothing of it renders.
func TestAPITLS(t *testing.T) {
	for shape, deploy := range map[string]string{"all-in-one": "bomstream", "distributed": "bomstream-sink"} {
		for _, c := range []struct {
			name   string
			sets   []string
			secret string // "" without TLS
		}{
			{"plain", nil, ""},
			{"existing secret", []string{"api.tls.enabled=true", "api.tls.secretName=api-cert"}, "api-cert"},
			{"cert-manager", certManagerSets, "bomstream-api-tls"},
		} {
			t.Run(shape+"/"+c.name, func(t *testing.T) {
				r := renderVariant(t, variant{}, append(append([]string{"shape=" + shape}, apiSets...), c.sets...)...)
				svc := convert[corev1.Service](t, r.one(t, "Service", "bomstream-api"))
				proto := svc.Spec.Ports[0].AppProtocol
				if (proto != nil && *proto == "https") != (c.secret != "") {
					t.Errorf("service port appProtocol %v", proto)
				}
				certs := r.of("Certificate")
				if c.name == "cert-manager" {
					if len(certs) != 1 {
						t.Fatalf("%d Certificates", len(certs))
					}
					checkCertificate(t, certs[0])
				} else if len(certs) > 0 {
					t.Errorf("a Certificate renders without certManager: %s", ref(certs[0]))
				}
				for _, o := range r.of("Deployment") {
					d := convert[appsv1.Deployment](t, o)
					ct := d.Spec.Template.Spec.Containers[0]
					files := mountedFiles(t, d.Spec.Template.Spec, ct)
					args := slices.Contains(ct.Args, "--api-tls-cert=/var/run/secrets/bomstream/api-tls/tls.crt") &&
						slices.Contains(ct.Args, "--api-tls-key=/var/run/secrets/bomstream/api-tls/tls.key")
					mounted := files["/var/run/secrets/bomstream/api-tls/tls.crt"] == c.secret+":tls.crt" &&
						files["/var/run/secrets/bomstream/api-tls/tls.key"] == c.secret+":tls.key"
					want := d.Name == deploy && c.secret != ""
					if args != want || want && !mounted || !want && files["/var/run/secrets/bomstream/api-tls/tls.crt"] != "" {
						t.Errorf("%s: TLS args %v, mounted %v (%v), want %v", d.Name, args, mounted, files, want)
					}
					for _, p := range []*corev1.Probe{ct.LivenessProbe, ct.ReadinessProbe, ct.StartupProbe} {
						if p.HTTPGet == nil || p.HTTPGet.Port.String() != "http" || p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP {
							t.Errorf("%s: probe %+v is not on the http port", d.Name, p.HTTPGet)
						}
					}
				}
				notes := strings.Contains(r.notes, "--api-ca ca.crt --api-server-name bomstream-api.bomstream.svc")
				if notes != (c.secret != "") {
					t.Errorf("NOTES about HTTPS: %v\n%s", notes, r.notes)
				}
			})
		}
	}
}

// checkCertificate holds the rendered Certificate to what the pod and
// the plugin need: the Secret the pod mounts, the Service's names and
// the extra ones, the issuer given, a server certificate with a key
// renewed at each issue.
func checkCertificate(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	str := func(path ...string) string {
		s, _, _ := unstructured.NestedString(spec, path...)
		return s
	}
	strs := func(path ...string) []string {
		s, _, _ := unstructured.NestedStringSlice(spec, path...)
		return s
	}
	if o.GetAPIVersion() != "cert-manager.io/v1" || o.GetName() != "bomstream-api" || o.GetNamespace() != releaseNamespace {
		t.Errorf("certificate %s %s", o.GetAPIVersion(), ref(o))
	}
	if got := str("secretName"); got != "bomstream-api-tls" {
		t.Errorf("secretName %q", got)
	}
	if got := str("issuerRef", "name") + " " + str("issuerRef", "kind") + " " + str("issuerRef", "group"); got != "internal-ca ClusterIssuer cert-manager.io" {
		t.Errorf("issuerRef %s", got)
	}
	if want := []string{"bomstream-api", "bomstream-api.bomstream", "bomstream-api.bomstream.svc", "bomstream.example.com", "localhost"}; !slices.Equal(strs("dnsNames"), want) {
		t.Errorf("dnsNames %v, want %v", strs("dnsNames"), want)
	}
	if got := strs("ipAddresses"); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("ipAddresses %v", got)
	}
	if !slices.Contains(strs("usages"), "server auth") || str("privateKey", "rotationPolicy") != "Always" {
		t.Errorf("usages %v, private key %v", strs("usages"), spec["privateKey"])
	}
	if str("duration") != "2160h" || str("renewBefore") != "360h" {
		t.Errorf("duration %q, renewBefore %q", str("duration"), str("renewBefore"))
	}
}

// The schema refuses what is misspelled or malformed in api.tls, naming
// the key; the templates refuse the combinations that make no sense, with
// what to set instead. The block spelled right installs.
func TestAPITLSValuesRefused(t *testing.T) {
	ch := loadChart(t)
	dir := t.TempDir()
	install := func(text string) error {
		file := filepath.Join(dir, "values.yaml")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		vals, err := chartutil.ReadValuesFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, err = render(ch, releaseName, releaseNamespace, vals)
		return err
	}
	const head = "api:\n  enabled: true\n  token:\n    secretName: t\n"
	const good = head + "  tls:\n    enabled: true\n    certManager:\n      issuerRef:\n        name: ca\n        kind: ClusterIssuer\n      duration: 720h\n      dnsNames: [api.example.com]\n"
	if err := install(good); err != nil {
		t.Fatalf("the values spelled right: %v", err)
	}
	if err := install(head + "  tls:\n    enabled: true\n    secretName: api-cert\n"); err != nil {
		t.Fatalf("an existing Secret: %v", err)
	}
	for _, c := range []struct{ name, text, names string }{
		{"key typo", strings.Replace(good, "issuerRef:", "issuerref:", 1), "issuerref"},
		{"a certificate inlined", head + "  tls:\n    enabled: true\n    cert: '-----BEGIN CERTIFICATE-----'\n", "cert"},
		{"kind in lower case", strings.Replace(good, "ClusterIssuer", "clusterissuer", 1), "kind"},
		{"duration in days", strings.Replace(good, "720h", "30d", 1), "duration"},
		{"bad DNS name", strings.Replace(good, "api.example.com", "API_host", 1), "dnsNames"},
		{"enabled as a string", strings.Replace(good, "enabled: true\n    certManager", "enabled: \"yes\"\n    certManager", 1), "enabled"},
	} {
		err := install(c.text)
		if err == nil {
			t.Errorf("%s: installed", c.name)
			continue
		}
		if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: the error does not name %q as a schema error: %v", c.name, c.names, err)
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"TLS without the API", "api:\n  tls:\n    enabled: true\n    secretName: api-cert\n", "api.tls.enabled: the API is off: set api.enabled=true"},
		{"no certificate", head + "  tls:\n    enabled: true\n", "api.tls: give the certificate: api.tls.secretName (an existing kubernetes.io/tls Secret) or api.tls.certManager.issuerRef.name"},
		{"both", good + "    secretName: api-cert\n", "api.tls.secretName (an existing Secret) and api.tls.certManager.issuerRef.name (a Certificate the chart renders) are alternatives: set one"},
		{"a Secret, TLS off", head + "  tls:\n    secretName: api-cert\n", "a certificate is given but api.tls.enabled is false, so the API would serve plain HTTP"},
		{"an issuer, TLS off", strings.Replace(good, "enabled: true\n    certManager", "enabled: false\n    certManager", 1), "api.tls.enabled is false"},
	} {
		if err := install(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// certificateCRD is a stand-in for cert-manager's Certificate CRD: the
// fields of cert-manager.io/v1 Certificate the chart renders, with their
// types, enums and required fields as upstream declares them, and nothing
// else, so that strict field validation rejects a field the chart
// misspells. (The upstream CRD is not vendored here.)
func certificateCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	strs := apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}}
	enum := func(vals ...string) apiextensionsv1.JSONSchemaProps {
		p := apiextensionsv1.JSONSchemaProps{Type: "string"}
		for _, v := range vals {
			p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))})
		}
		return p
	}
	usage := enum("signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
		"cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth")
	labels := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"issuerRef", "secretName"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"secretName":     str,
		"secretTemplate": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"labels": labels, "annotations": labels}},
		"issuerRef": {Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name": str, "kind": str, "group": str}},
		"dnsNames": strs, "ipAddresses": strs, "duration": str, "renewBefore": str,
		"usages": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &usage}},
		"privateKey": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"algorithm": enum("RSA", "ECDSA", "Ed25519"), "encoding": enum("PKCS1", "PKCS8"),
			"rotationPolicy": enum("Never", "Always"), "size": {Type: "integer"}}},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "certificates.cert-manager.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cert-manager.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "certificates", Singular: "certificate", Kind: "Certificate", ListKind: "CertificateList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
}

// The objects the chart renders with api.tls apply to a real API server
// with server-side apply and strict field validation, in both shapes,
// from an existing Secret and with the Certificate (against the stand-in
// CRD, which refuses a Certificate without its issuer); the pod templates
// stay within the "restricted" Pod Security Standard.
func TestAPITLSAppliesServerSide(t *testing.T) {
	e := apiServer(t)
	a := newApplier(t, e)
	ctx := context.Background()
	createCRD(t, e, certificateCRD())
	restricted := map[string]string{"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}

	// The control: the stand-in refuses a Certificate without issuerRef,
	// so an accepted one below was checked.
	namespace(t, e, "tls-control", nil)
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "no-issuer", "namespace": "tls-control"}, "spec": map[string]any{"secretName": "x", "privateKey": map[string]any{"rotationPolicy": "Sometimes"}}}}
	if _, err := a.apply(ctx, bad); err == nil || !strings.Contains(err.Error(), "issuerRef") || !strings.Contains(err.Error(), "rotationPolicy") {
		t.Fatalf("the stand-in CRD takes a Certificate without issuerRef: %v", err)
	}

	i := 0
	for _, shape := range []string{"all-in-one", "distributed"} {
		for name, sets := range map[string][]string{"secret": {"api.tls.enabled=true", "api.tls.secretName=api-cert"}, "cert-manager": certManagerSets} {
			t.Run(shape+"/"+name, func(t *testing.T) {
				ns := fmt.Sprintf("tls-%d", i)
				i++
				namespace(t, e, ns, restricted)
				a.warnings.take()
				all := append(append([]string{"shape=" + shape}, apiSets...), sets...)
				r := install(t, a, "tls", ns, all...)
				if w := a.warnings.take(); len(w) > 0 {
					t.Errorf("the API server warned:\n  %s", strings.Join(w, "\n  "))
				}
				if got := len(r.of("Certificate")); got != map[string]int{"secret": 0, "cert-manager": 1}[name] {
					t.Errorf("%d Certificates", got)
				}
				for _, o := range r.objects {
					if _, err := a.apply(ctx, o); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}
