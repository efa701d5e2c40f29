package helm_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/bomstream/bomstream/collector"
)

// convert turns a rendered object into its typed form.
func convert[T any](t testing.TB, o *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
		t.Fatalf("%s: %v", ref(o), err)
	}
	return out
}

// The chart renders in both shapes and both RBAC modes; what renders is the
// documented set of objects, and nothing the footprint promises not to be
// there: no Secret, no webhook, no CRD, no Namespace, nothing cluster-scoped
// in the namespaced mode.
func TestChartRendersEveryVariant(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			r := renderVariant(t, v)
			var got []string
			for _, o := range r.objects {
				got = append(got, o.GetKind()+"/"+o.GetName())
				switch o.GetKind() {
				case "Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
					"ValidatingAdmissionPolicy", "CustomResourceDefinition", "Namespace":
					t.Errorf("the chart renders %s", ref(o))
				}
				// The store is the history: helm uninstall must leave it.
				if o.GetKind() == "PersistentVolumeClaim" && o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					t.Errorf("%s is not kept on helm uninstall (helm.sh/resource-policy: keep)", ref(o))
				}
				if isClusterScoped(t, o) {
					if v.mode == "namespaced" {
						t.Errorf("namespaced mode renders the cluster-scoped %s", ref(o))
					}
				} else if o.GetNamespace() == "" {
					t.Errorf("%s has no namespace: it would land wherever kubectl points", ref(o))
				}
			}
			want := map[string][]string{
				"all-in-one":  {"ConfigMap/bomstream", "Deployment/bomstream", "PersistentVolumeClaim/bomstream-data", "ServiceAccount/bomstream-collector"},
				"distributed": {"ConfigMap/bomstream", "Deployment/bomstream-collector", "Deployment/bomstream-sink", "Deployment/bomstream-transformer", "PersistentVolumeClaim/bomstream-boms", "Role/bomstream-collector-lease", "RoleBinding/bomstream-collector-lease", "ServiceAccount/bomstream-collector"},
			}[v.shape]
			if v.mode == "cluster" {
				want = append(want, "ClusterRole/bomstream-collector", "ClusterRoleBinding/bomstream-collector")
			} else {
				for range exampleNamespaces {
					want = append(want, "Role/bomstream-collector-read", "RoleBinding/bomstream-collector-read")
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("rendered\n  %v\nwant\n  %v", got, want)
			}
			if !strings.Contains(r.notes, v.shape+" shape, "+v.mode+" RBAC mode") {
				t.Errorf("NOTES: %s", r.notes)
			}
		})
	}
}

// A values file with a key the chart does not know fails the install, as
// does a value of the wrong kind; the error names the key. The same file
// spelled right installs.
func TestValuesSchemaRejectsUnknownKeys(t *testing.T) {
	ch := loadChart(t)
	dir := t.TempDir()
	install := func(text string) error {
		file := filepath.Join(dir, "values.yaml")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		vals, err := chartutil.ReadValuesFile(file) // helm install -f
		if err != nil {
			t.Fatal(err)
		}
		_, err = render(ch, releaseName, releaseNamespace, vals)
		return err
	}
	good := "shape: distributed\nwatch:\n  mode: namespaced\n  namespaces: [ml]\nsinks:\n  gcs:\n    enabled: true\n    bucket: boms\n"
	if err := install(good); err != nil {
		t.Fatalf("the values spelled right: %v", err)
	}
	for _, c := range []struct{ name, text, names string }{
		{"nested typo", strings.Replace(good, "mode:", "mod:", 1), "mod"},
		{"top-level typo", good + "serviceMonitr:\n  enabled: true\n", "serviceMonitr"},
		{"sink key typo", strings.Replace(good, "bucket:", "bukket:", 1), "bukket"},
		{"a secret inlined", good + "  dependencytrack:\n    apiKey:\n      value: odt_0123456789\n", "value"},
		{"unknown shape", strings.Replace(good, "distributed", "single", 1), "shape"},
		{"unknown RBAC mode", strings.Replace(good, "namespaced", "namespace", 1), "mode"},
		{"Secrets in extraRules", good + "rbac:\n  extraRules:\n  - {apiGroups: [''], resources: [secrets]}\n", "extraRules"},
		{"bad namespace", strings.Replace(good, "[ml]", "[ML]", 1), "namespaces"},
		{"bad duration", good + "stream:\n  maxAge: 30days\n", "maxAge"},
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
	// What the schema cannot say, the templates refuse.
	for _, c := range []struct{ name, text, want string }{
		{"namespaced without namespaces", "watch:\n  mode: namespaced\n", "watch.namespaces"},
		{"no sink", "sinks:\n  file:\n    enabled: false\n", "enable at least one sink"},
		{"gcs without bucket", "sinks:\n  gcs:\n    enabled: true\n", "sinks.gcs.bucket"},
		{"dtrack without key", "sinks:\n  dependencytrack:\n    enabled: true\n    url: https://dt.example.com\n", "apiKey.secretName"},
		{"network policy without the API server", "networkPolicy:\n  enabled: true\n", "networkPolicy.apiServer.cidrs"},
		{"nats creds and nkey", "nats:\n  auth:\n    secretName: nats-creds\n    credsKey: u.creds\n    nkeyKey: u.nk\n", "nats.auth.credsKey and nats.auth.nkeyKey"},
	} {
		if err := install(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// readRule is a rule as a set of (group, resource) with its verbs.
type grant struct{ group, resource string }

func grants(rules []rbacv1.PolicyRule) map[grant][]string {
	out := map[grant][]string{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out[grant{g, res}] = append(out[grant{g, res}], r.Verbs...)
			}
		}
	}
	return out
}

// The RBAC is read-only and covers exactly the kinds the collector watches:
// every workload and owner kind of collector/profiles.yaml and ConfigMaps,
// plus Namespaces and CRDs cluster-wide. No Secrets, no wildcard, no write
// verb but the Lease's, and the Lease rights only on the collector's own
// Lease.
func TestRBACIsReadOnly(t *testing.T) {
	norm, err := collector.NewNormalizer(collector.Config{Cluster: "x"})
	if err != nil {
		t.Fatal(err)
	}
	watched := map[grant]bool{{"", "configmaps"}: true}
	namespacedKinds := map[grant]bool{{"", "configmaps"}: true}
	for _, k := range norm.Kinds() {
		res, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: k.Group, Version: "v1", Kind: k.Kind})
		watched[grant{k.Group, res.Resource}] = true
		if !k.ClusterScoped {
			namespacedKinds[grant{k.Group, res.Resource}] = true
		}
	}
	readOnly := func(t *testing.T, what string, rules []rbacv1.PolicyRule, want map[grant]bool) {
		t.Helper()
		got := grants(rules)
		for g, verbs := range got {
			slices.Sort(verbs)
			if !slices.Equal(slices.Compact(verbs), []string{"get", "list", "watch"}) {
				t.Errorf("%s: %s/%s: verbs %v, want get, list, watch", what, g.group, g.resource, verbs)
			}
			if g.resource == "secrets" || g.resource == "*" || g.group == "*" {
				t.Errorf("%s grants %s/%s", what, g.group, g.resource)
			}
			if !want[g] {
				t.Errorf("%s grants %s/%s, which the collector does not watch", what, g.group, g.resource)
			}
		}
		for g := range want {
			if _, ok := got[g]; !ok {
				t.Errorf("%s lacks %s/%s, which the collector watches", what, g.group, g.resource)
			}
		}
	}
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			r := renderVariant(t, v)
			if v.mode == "cluster" {
				want := map[grant]bool{{"", "namespaces"}: true, {"apiextensions.k8s.io", "customresourcedefinitions"}: true}
				for g := range watched {
					want[g] = true
				}
				cr := convert[rbacv1.ClusterRole](t, r.one(t, "ClusterRole", "bomstream-collector"))
				readOnly(t, "ClusterRole", cr.Rules, want)
				crb := convert[rbacv1.ClusterRoleBinding](t, r.one(t, "ClusterRoleBinding", "bomstream-collector"))
				checkSubject(t, crb.Subjects)
			}
			var readNS []string
			for _, o := range r.of("Role") {
				role := convert[rbacv1.Role](t, o)
				if role.Name == "bomstream-collector-lease" {
					checkLeaseRole(t, role)
					continue
				}
				readNS = append(readNS, role.Namespace)
				readOnly(t, "Role "+role.Namespace+"/"+role.Name, role.Rules, namespacedKinds)
			}
			for _, o := range r.of("RoleBinding") {
				checkSubject(t, convert[rbacv1.RoleBinding](t, o).Subjects)
			}
			if v.mode == "namespaced" && !slices.Equal(readNS, exampleNamespaces) {
				t.Errorf("read Roles in %v, want one in each of %v", readNS, exampleNamespaces)
			}
			if v.mode == "cluster" && len(readNS) > 0 {
				t.Errorf("cluster mode renders read Roles in %v", readNS)
			}
			if got := len(r.of("Role")) - len(readNS); (v.shape == "distributed") != (got == 1) {
				t.Errorf("%d Lease Roles in the %s shape (leader election runs in the distributed shape only)", got, v.shape)
			}
		})
	}
	// Kinds added through a profile file get their read rule, and only read.
	r := renderVariant(t, variants[3], "rbac.extraRules[0].apiGroups={example.com}", "rbac.extraRules[0].resources={modelservers}")
	for _, o := range r.of("Role") {
		if o.GetName() == "bomstream-collector-read" {
			if verbs := grants(convert[rbacv1.Role](t, o).Rules)[grant{"example.com", "modelservers"}]; !slices.Equal(verbs, []string{"get", "list", "watch"}) {
				t.Errorf("extra rule in %s: verbs %v", o.GetNamespace(), verbs)
			}
		}
	}
}

func checkSubject(t *testing.T, subjects []rbacv1.Subject) {
	t.Helper()
	if len(subjects) != 1 || subjects[0].Kind != "ServiceAccount" || subjects[0].Name != "bomstream-collector" || subjects[0].Namespace != releaseNamespace {
		t.Errorf("subjects %+v, want the ServiceAccount %s/bomstream-collector only", subjects, releaseNamespace)
	}
}

func checkLeaseRole(t *testing.T, role *rbacv1.Role) {
	t.Helper()
	if role.Namespace != releaseNamespace {
		t.Errorf("the Lease Role is in %s, want the release namespace", role.Namespace)
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"bomstream-collector-default"}, Verbs: []string{"get", "update"}},
	}
	if len(role.Rules) != len(want) {
		t.Fatalf("Lease Role rules %+v", role.Rules)
	}
	for i := range want {
		g, w := role.Rules[i], want[i]
		if !slices.Equal(g.APIGroups, w.APIGroups) || !slices.Equal(g.Resources, w.Resources) || !slices.Equal(g.ResourceNames, w.ResourceNames) || !slices.Equal(g.Verbs, w.Verbs) {
			t.Errorf("Lease Role rule %d = %+v, want %+v", i, g, w)
		}
	}
}

// Every pod runs as non-root on a read-only root filesystem with no
// capabilities, is probed on /healthz and /readyz at the port --http-listen
// binds, asks for resources, and gets an API token only where the collector
// runs. Every path bomstream writes (the store, the file sink) is on a
// writable volume.
func TestPodsAreHardened(t *testing.T) {
	for _, v := range variants {
		t.Run(v.String(), func(t *testing.T) {
			r := renderVariant(t, v)
			cfg := configOf(t, r)
			for _, o := range r.of("Deployment") {
				d := convert[appsv1.Deployment](t, o)
				component := d.Spec.Template.Labels["app.kubernetes.io/component"]
				ps := d.Spec.Template.Spec
				if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot ||
					ps.SecurityContext.RunAsUser == nil || *ps.SecurityContext.RunAsUser == 0 ||
					ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("%s: pod securityContext %+v", d.Name, ps.SecurityContext)
				}
				token := component == "collector" || component == "all-in-one"
				if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken != token {
					t.Errorf("%s: automountServiceAccountToken %v, want %v", d.Name, ps.AutomountServiceAccountToken, token)
				}
				if len(ps.Containers) != 1 || len(ps.InitContainers) != 0 {
					t.Fatalf("%s: %d containers, %d init containers", d.Name, len(ps.Containers), len(ps.InitContainers))
				}
				c := ps.Containers[0]
				sc := c.SecurityContext
				if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
					sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
					t.Errorf("%s: container securityContext %+v", d.Name, sc)
				}
				wantImage := "ghcr.io/bomstream/bomstream:" + loadChart(t).Metadata.AppVersion
				if component == "collector" {
					wantImage = "ghcr.io/bomstream/bomstream-collector:" + loadChart(t).Metadata.AppVersion
				}
				if c.Image != wantImage {
					t.Errorf("%s: image %s, want %s", d.Name, c.Image, wantImage)
				}
				wantArg := map[string]string{"all-in-one": "run", "collector": "collector", "transformer": "transformer", "sink": "sink"}[component]
				if len(c.Args) == 0 || c.Args[0] != wantArg || !slices.Contains(c.Args, "--http-listen=:9090") {
					t.Errorf("%s: args %v, want %s ... --http-listen=:9090", d.Name, c.Args, wantArg)
				}
				if component == "all-in-one" && !slices.Contains(c.Args, "--in-cluster") {
					t.Errorf("%s: run without --in-cluster reads no cluster: %v", d.Name, c.Args)
				}
				if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 9090 {
					t.Errorf("%s: ports %+v", d.Name, c.Ports)
				}
				for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz", c.StartupProbe: "/healthz"} {
					if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "http" {
						t.Errorf("%s: probe %+v, want GET %s on http", d.Name, probe, path)
					}
				}
				if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
					t.Errorf("%s: resources %+v", d.Name, c.Resources)
				}
				if !hasEnv(c, "BOMSTREAM_CONFIG", "/etc/bomstream/bomstream.yaml") {
					t.Errorf("%s: BOMSTREAM_CONFIG does not name the mounted config file", d.Name)
				}
				writable := writablePaths(ps, c)
				if !writable["/tmp"] {
					t.Errorf("%s: /tmp is not a writable volume", d.Name)
				}
				var mustWrite []string
				if component == "all-in-one" {
					mustWrite = append(mustWrite, cfg.Stream.DataDir)
					if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
						t.Errorf("%s: two pods could share the store: strategy %s, replicas %v", d.Name, d.Spec.Strategy.Type, d.Spec.Replicas)
					}
				}
				if component == "all-in-one" || component == "sink" {
					for _, s := range cfg.Sinks {
						if s.Type == "file" {
							mustWrite = append(mustWrite, s.Config["dir"].(string))
						}
					}
				}
				for _, p := range mustWrite {
					if !underWritable(p, writable) {
						t.Errorf("%s: %s is written but is on no writable volume (%v)", d.Name, p, writable)
					}
				}
			}
		})
	}
}

func hasEnv(c corev1.Container, name, value string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

// writablePaths are the mount paths of c that are writable volumes.
func writablePaths(ps corev1.PodSpec, c corev1.Container) map[string]bool {
	kinds := map[string]bool{}
	for _, v := range ps.Volumes {
		kinds[v.Name] = v.EmptyDir != nil || v.PersistentVolumeClaim != nil
	}
	out := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly && kinds[m.Name] {
			out[m.MountPath] = true
		}
	}
	return out
}

func underWritable(p string, writable map[string]bool) bool {
	for m := range writable {
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

// configFile is the part of bomstream's configuration file the tests read
// (the whole file is checked by bomstream itself, in TestConfigFileLoads).
type configFile struct {
	Cluster string `yaml:"cluster"`
	Stream  struct {
		URL       string `yaml:"url"`
		DataDir   string `yaml:"dataDir"`
		CredsFile string `yaml:"credsFile"`
		NKeyFile  string `yaml:"nkeyFile"`
		TLSCA     string `yaml:"tlsCA"`
		TLSCert   string `yaml:"tlsCert"`
		TLSKey    string `yaml:"tlsKey"`
	} `yaml:"stream"`
	Collector struct {
		ProfilesFile string `yaml:"profilesFile"`
	} `yaml:"collector"`
	Kubernetes map[string]any `yaml:"kubernetes"`
	Sinks      []struct {
		Name   string         `yaml:"name"`
		Type   string         `yaml:"type"`
		Config map[string]any `yaml:"config"`
	} `yaml:"sinks"`
}

// configOf reads the configuration file from the rendered ConfigMap.
func configOf(t testing.TB, r rendering) configFile {
	t.Helper()
	cm := convert[corev1.ConfigMap](t, r.one(t, "ConfigMap", "bomstream"))
	var cfg configFile
	if err := yaml.Unmarshal([]byte(cm.Data["bomstream.yaml"]), &cfg); err != nil {
		t.Fatalf("bomstream.yaml: %v", err)
	}
	return cfg
}

// allSinks are assignments enabling every sink, with every credential
// referenced by Secret (or ConfigMap) name and key.
var allSinks = []string{
	"sinks.stdout.enabled=true",
	"sinks.gcs.enabled=true", "sinks.gcs.bucket=acme-ai-boms", "sinks.gcs.prefix=prod", "sinks.gcs.credentials.secretName=gcs-key",
	"sinks.dependencytrack.enabled=true", "sinks.dependencytrack.url=https://dtrack-api.example.com",
	"sinks.dependencytrack.apiKey.secretName=dtrack", "sinks.dependencytrack.ca.configMapName=private-ca",
	"sinks.dependencytrack.tags={ai,prod}", "sinks.dependencytrack.onTombstone=delete", "sinks.dependencytrack.processingTimeout=10m",
	"sinks.oci.enabled=true", "sinks.oci.dockerConfig.secretName=registry", "sinks.oci.repository=registry.example.com/platform/ai-boms",
}

// natsAuth references every NATS credential by Secret name and key (a
// .creds file or an nkey seed: one of them; natsNKey is the other).
var natsAuth = []string{
	"nats.auth.secretName=nats-creds", "nats.auth.credsKey=user.creds",
	"nats.auth.userKey=user", "nats.auth.passwordKey=password", "nats.auth.tokenKey=token",
	"nats.tls.secretName=nats-tls", "nats.tls.caKey=ca.crt", "nats.tls.certKey=tls.crt", "nats.tls.keyKey=tls.key",
}

// Credentials reach the pods by reference only: Secret volumes (read-only,
// only the keys named) for the files the sinks and NATS read, secretKeyRef
// for the NATS user, password and token. The configuration names the
// mounted files; the pods that need no credential mount none.
func TestSecretsByReferenceOnly(t *testing.T) {
	for _, tc := range []struct{ name, shape, natsKey string }{
		{"all-in-one", "all-in-one", ""}, {"distributed", "distributed", "credsKey"}, {"distributed-nkey", "distributed", "nkeyKey"},
	} {
		shape := tc.shape
		t.Run(tc.name, func(t *testing.T) {
			sets := append([]string{"shape=" + shape}, allSinks...)
			if tc.natsKey == "nkeyKey" {
				sets = append(append(sets, natsAuth[:1]...), "nats.auth.nkeyKey=user.nk")
				sets = append(sets, natsAuth[2:]...)
			} else if shape == "distributed" {
				sets = append(sets, natsAuth...)
			}
			r := renderVariant(t, variant{}, sets...)
			if len(r.of("Secret")) > 0 {
				t.Error("the chart renders a Secret")
			}
			cfg := configOf(t, r)
			files := map[string]string{} // path in the config -> Secret/ConfigMap:key
			for _, s := range cfg.Sinks {
				switch s.Type {
				case "gcs":
					files[s.Config["credentialsFile"].(string)] = "gcs-key:key.json"
				case "dependencytrack":
					files[s.Config["apiKeyFile"].(string)] = "dtrack:api-key"
					files[s.Config["caFile"].(string)] = "configmap private-ca:ca.crt"
				case "oci":
					files[s.Config["dockerConfig"].(string)] = "registry:.dockerconfigjson"
				}
			}
			if len(files) != 4 {
				t.Fatalf("config names %d credential files: %v", len(files), files)
			}
			natsFiles := map[string]string{}
			if shape == "distributed" {
				natsFiles = map[string]string{
					cfg.Stream.TLSCA: "nats-tls:ca.crt", cfg.Stream.TLSCert: "nats-tls:tls.crt", cfg.Stream.TLSKey: "nats-tls:tls.key",
				}
				if tc.natsKey == "credsKey" {
					natsFiles[cfg.Stream.CredsFile] = "nats-creds:user.creds"
				} else {
					natsFiles[cfg.Stream.NKeyFile] = "nats-creds:user.nk"
				}
				if cfg.Stream.CredsFile != "" && cfg.Stream.NKeyFile != "" {
					t.Errorf("both a .creds file and an nkey seed configured: %s, %s", cfg.Stream.CredsFile, cfg.Stream.NKeyFile)
				}
			}
			for _, o := range r.of("Deployment") {
				d := convert[appsv1.Deployment](t, o)
				component := d.Spec.Template.Labels["app.kubernetes.io/component"]
				c := d.Spec.Template.Spec.Containers[0]
				mounted := mountedFiles(t, d.Spec.Template.Spec, c)
				want := map[string]string{}
				if component == "all-in-one" || component == "sink" {
					maps.Copy(want, files)
				}
				maps.Copy(want, natsFiles)
				for path, src := range want {
					if mounted[path] != src {
						t.Errorf("%s: %s is %q, want %s mounted read-only", d.Name, path, mounted[path], src)
					}
				}
				for path, src := range mounted {
					if _, ok := want[path]; !ok {
						t.Errorf("%s mounts %s (%s), which it does not need", d.Name, path, src)
					}
				}
				envs := map[string]string{}
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						envs[e.Name] = e.ValueFrom.SecretKeyRef.Name + ":" + e.ValueFrom.SecretKeyRef.Key
					} else if e.Name != "BOMSTREAM_CONFIG" && e.Name != "POD_NAMESPACE" {
						t.Errorf("%s: variable %s", d.Name, e.Name)
					}
				}
				wantEnv := map[string]string{}
				if shape == "distributed" {
					wantEnv = map[string]string{"BOMSTREAM_NATS_USER": "nats-creds:user", "BOMSTREAM_NATS_PASSWORD": "nats-creds:password", "BOMSTREAM_NATS_TOKEN": "nats-creds:token"}
				}
				if len(envs) != len(wantEnv) {
					t.Errorf("%s: secret variables %v, want %v", d.Name, envs, wantEnv)
				}
				for k, v := range wantEnv {
					if envs[k] != v {
						t.Errorf("%s: %s from %q, want %s", d.Name, k, envs[k], v)
					}
				}
			}
		})
	}
}

// mountedFiles maps each file a container sees from a Secret or ConfigMap
// item to "secret:key" (or "configmap name:key"), for read-only mounts.
func mountedFiles(t *testing.T, ps corev1.PodSpec, c corev1.Container) map[string]string {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		v := vols[m.Name]
		var items []corev1.KeyToPath
		prefix := ""
		switch {
		case v.Secret != nil:
			items, prefix = v.Secret.Items, v.Secret.SecretName+":"
		case v.ConfigMap != nil && v.ConfigMap.Name != "bomstream":
			items, prefix = v.ConfigMap.Items, "configmap "+v.ConfigMap.Name+":"
		default:
			continue
		}
		if !m.ReadOnly {
			t.Errorf("%s is mounted writable", m.Name)
		}
		if len(items) == 0 {
			t.Errorf("volume %s mounts every key of its source, not the ones named", m.Name)
		}
		for _, it := range items {
			out[m.MountPath+"/"+it.Path] = prefix + it.Key
		}
	}
	return out
}

// With networkPolicy.enabled each pod may reach DNS and what it needs: the
// API server (collector), NATS (distributed), the enabled sinks' peers
// (the pod running the sinks), nothing else.
func TestNetworkPolicy(t *testing.T) {
	sets := []string{
		"networkPolicy.enabled=true", "networkPolicy.apiServer.cidrs={172.18.0.2/32}",
		"networkPolicy.nats.to[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=nats",
		"sinks.dependencytrack.enabled=true", "sinks.dependencytrack.url=https://dt.example.com", "sinks.dependencytrack.apiKey.secretName=dt",
		"sinks.dependencytrack.egress.to[0].ipBlock.cidr=10.20.0.0/16", "sinks.dependencytrack.egress.ports={8080}",
		"sinks.oci.enabled=true",
	}
	type rule struct{ to, ports string }
	dns := rule{"ns kube-system pods k8s-app=kube-dns", "53/TCP 53/UDP"}
	api := rule{"172.18.0.2/32", "443/TCP 6443/TCP"}
	nats := rule{"ns nats", "4222/TCP"}
	dt := rule{"10.20.0.0/16", "8080/TCP"}
	oci := rule{"anywhere", "443/TCP"}
	for shape, want := range map[string]map[string][]rule{
		"all-in-one":  {"all-in-one": {dns, api, dt, oci}},
		"distributed": {"collector": {dns, api, nats}, "transformer": {dns, nats}, "sink": {dns, nats, dt, oci}},
	} {
		r := renderVariant(t, variant{}, append(sets, "shape="+shape)...)
		got := map[string][]rule{}
		for _, o := range r.of("NetworkPolicy") {
			np := convert[networkingv1.NetworkPolicy](t, o)
			component := np.Spec.PodSelector.MatchLabels["app.kubernetes.io/component"]
			if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
				t.Errorf("%s: policy types %v", np.Name, np.Spec.PolicyTypes)
			}
			for _, e := range np.Spec.Egress {
				var rl rule
				var to, ports []string
				for _, p := range e.To {
					switch {
					case p.IPBlock != nil:
						to = append(to, p.IPBlock.CIDR)
					case p.NamespaceSelector != nil && p.PodSelector != nil:
						to = append(to, "ns "+p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]+" pods k8s-app="+p.PodSelector.MatchLabels["k8s-app"])
					case p.NamespaceSelector != nil:
						to = append(to, "ns "+p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"])
					}
				}
				if len(to) == 0 {
					to = []string{"anywhere"}
				}
				for _, p := range e.Ports {
					ports = append(ports, p.Port.String()+"/"+string(*p.Protocol))
				}
				rl.to, rl.ports = strings.Join(to, ","), strings.Join(ports, " ")
				got[component] = append(got[component], rl)
			}
		}
		for _, component := range sortedKeys(want) {
			if !slices.Equal(got[component], want[component]) {
				t.Errorf("%s %s egress\n  %v\nwant\n  %v", shape, component, got[component], want[component])
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: policies for %v", shape, sortedKeys(got))
		}
	}
}

// The distributed collector runs the bomstream-collector image at the
// release's tag; a digest pins it, and an empty repository falls back to the
// release's image. The other Deployments keep the release's image.
func TestCollectorImage(t *testing.T) {
	const dig = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	distributed := variants[2]
	for _, tc := range []struct {
		sets              []string
		collector, others string
	}{
		{[]string{"image.tag=v9.1.0"}, "ghcr.io/bomstream/bomstream-collector:v9.1.0", "ghcr.io/bomstream/bomstream:v9.1.0"},
		{[]string{"image.tag=v9.1.0", "collector.image.digest=" + dig}, "ghcr.io/bomstream/bomstream-collector@" + dig, "ghcr.io/bomstream/bomstream:v9.1.0"},
		{[]string{"image.repository=registry.example/bs", "image.digest=" + dig, "collector.image.repository="}, "registry.example/bs@" + dig, "registry.example/bs@" + dig},
		{[]string{"image.tag=v9.1.0", "collector.image.repository=registry.example/bsc"}, "registry.example/bsc:v9.1.0", "ghcr.io/bomstream/bomstream:v9.1.0"},
	} {
		r := renderVariant(t, distributed, tc.sets...)
		deps := r.of("Deployment")
		if len(deps) != 3 {
			t.Fatalf("%v: %d Deployments", tc.sets, len(deps))
		}
		for _, o := range deps {
			d := convert[appsv1.Deployment](t, o)
			want := tc.others
			if d.Spec.Template.Labels["app.kubernetes.io/component"] == "collector" {
				want = tc.collector
			}
			if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
				t.Errorf("%v: %s runs %s, want %s", tc.sets, d.Name, got, want)
			}
		}
	}
	if _, err := render(loadChart(t), releaseName, releaseNamespace, values(t, "shape=distributed", "collector.image.digest=latest")); err == nil {
		t.Error("collector.image.digest=latest: accepted")
	}
}
