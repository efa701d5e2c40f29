package helm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The signing values (docs/signing.md): the oci and gcs sinks' attest:
// blocks point at the key mounted from its Secret, a KMS URI, or a
// projected service-account token for keyless signing; bomstream accepts
// the configuration; attest without a way to sign does not render.
func TestSigningValues(t *testing.T) {
	bin := bomstreamBinary(t)
	base := []string{"sinks.oci.enabled=true", "sinks.oci.repository=registry.example/boms", "sinks.oci.attest=true",
		"sinks.gcs.enabled=true", "sinks.gcs.bucket=boms", "sinks.gcs.attest=true", "sinks.stdout.enabled=true"}
	for name, c := range map[string]struct {
		sets   []string
		want   []string
		volume func(corev1.Volume) bool
	}{
		"key": {
			sets: []string{"signing.key.secretName=bomstream-signing", "sinks.oci.plainReferrer=false"},
			want: []string{"keyFile: /var/run/secrets/bomstream/signing/signing.key", "plainReferrer: false"},
			volume: func(v corev1.Volume) bool {
				return v.Name == "signing-key" && v.Secret != nil && v.Secret.SecretName == "bomstream-signing" && v.Secret.Items[0].Key == "cosign.key"
			},
		},
		"kms": {
			sets: []string{"signing.kmsKey=gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k"},
			want: []string{"kmsKey: gcpkms://projects/p/locations/global/keyRings/r/cryptoKeys/k"},
		},
		"keyless": {
			sets: []string{"signing.keyless.enabled=true", "signing.keyless.fulcioURL=https://fulcio.internal", "signing.keyless.rekorURL=https://rekor.internal"},
			want: []string{"tokenFile: /var/run/secrets/tokens/sigstore", "fulcioURL: https://fulcio.internal", "rekorURL: https://rekor.internal"},
			volume: func(v corev1.Volume) bool {
				return v.Name == "sigstore-token" && v.Projected != nil && v.Projected.Sources[0].ServiceAccountToken.Audience == "sigstore"
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, releaseName, releaseNamespace, values(t, append(base, c.sets...)...))
			cm := convert[corev1.ConfigMap](t, r.one(t, "ConfigMap", "bomstream"))
			conf := cm.Data["bomstream.yaml"]
			for _, w := range c.want {
				if strings.Count(conf, w) < 1 {
					t.Errorf("bomstream.yaml lacks %q:\n%s", w, conf)
				}
			}
			if strings.Count(conf, "attest:") != 2 {
				t.Errorf("want an attest: block in the oci and the gcs sink:\n%s", conf)
			}
			d := convert[appsv1.Deployment](t, r.one(t, "Deployment", "bomstream"))
			if c.volume != nil {
				found := false
				for _, v := range d.Spec.Template.Spec.Volumes {
					found = found || c.volume(v)
				}
				mounted := false
				for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
					mounted = mounted || m.Name == "signing-key" || m.Name == "sigstore-token"
				}
				if !found || !mounted {
					t.Errorf("signing volume present %v, mounted %v: %+v", found, mounted, d.Spec.Template.Spec.Volumes)
				}
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bomstream.yaml"), []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "sink", "check", "stdout", "--config", filepath.Join(dir, "bomstream.yaml"))
			cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("bomstream refuses the rendered configuration: %v\n%s\n%s", err, out, conf)
			}
		})
	}
	_, err := render(loadChart(t), releaseName, releaseNamespace, values(t, base...))
	if err == nil || !strings.Contains(err.Error(), "needs signing.key.secretName, signing.kmsKey or signing.keyless.enabled") {
		t.Errorf("attest without a way to sign: %v", err)
	}
	// Without attest, nothing of signing is rendered.
	r := mustRender(t, releaseName, releaseNamespace, values(t, "sinks.oci.enabled=true", "sinks.oci.repository=registry.example/boms", "signing.key.secretName=s"))
	if conf := convert[corev1.ConfigMap](t, r.one(t, "ConfigMap", "bomstream")).Data["bomstream.yaml"]; strings.Contains(conf, "attest") {
		t.Errorf("attest rendered without sinks.oci.attest:\n%s", conf)
	}
}
