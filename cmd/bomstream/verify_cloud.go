//go:build !nocloudsinks

package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/bomstream/bomstream/signing/verify"
)

// verifyCmd verifies the signed AI-BOM attestations of an image or a BOM
// file (package signing/verify).
func verifyCmd(e *env) *cobra.Command {
	var o verify.Options
	cmd := &cobra.Command{
		Use:   "verify IMAGE | --file BOM",
		Short: "Verify the signed AI-BOM attestations of an image (or of a BOM file) and print what they say",
		Example: `  bomstream verify --key cosign.pub registry.example.com/ml/chat:1.2
  bomstream verify --certificate-identity system:serviceaccount:bomstream:bomstream --certificate-oidc-issuer https://kubernetes.default.svc --trusted-root trusted_root.json registry.example.com/ml/chat:1.2
  bomstream verify --key cosign.pub --file boms/ml_Deployment_chat.cdx.json`,
		Long: `verify finds the Sigstore attestations attached to IMAGE (a tag or a digest;
referrers API or referrers tag schema), bomstream's and cosign's, and verifies
each against a public key (--key) or a certificate identity and OIDC issuer
with the Sigstore instance's trusted root (--trusted-root). It prints the
verified AI-BOMs (workload, when, runtimes, models) and exits non-zero with
the reasons when none verifies. With --file it verifies a BOM object read from
a bucket against its bundle (BOM.sigstore.json beside it). See docs/signing.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (o.File != "") {
				return errors.New("verify: name an IMAGE or --file, one of them")
			}
			var image string
			if len(args) == 1 {
				image = args[0]
			}
			return verify.Run(cmd.Context(), o, image, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Key, "key", "", "PEM public key the attestations are signed with")
	fl.StringVar(&o.Identity, "certificate-identity", "", "keyless: the signer's identity (certificate SAN), e.g. system:serviceaccount:bomstream:bomstream")
	fl.StringVar(&o.IdentityRe, "certificate-identity-regexp", "", "keyless: a regular expression the identity must match")
	fl.StringVar(&o.Issuer, "certificate-oidc-issuer", "", "keyless: the OIDC issuer of the identity")
	fl.StringVar(&o.IssuerRe, "certificate-oidc-issuer-regexp", "", "keyless: a regular expression the issuer must match")
	fl.StringVar(&o.TrustedRoot, "trusted-root", "", "keyless: the Sigstore instance's trusted_root.json (CAs, logs, timestamp authorities)")
	fl.BoolVar(&o.IgnoreTlog, "insecure-ignore-tlog", false, "keyless: accept attestations without a transparency log entry (a timestamp is still required)")
	fl.BoolVar(&o.PlainHTTP, "allow-http-registry", false, "talk HTTP to the registry (local test registries)")
	fl.StringVar(&o.DockerConfig, "docker-config", "", "docker config.json with the registry credentials (default: anonymous)")
	fl.StringVar(&o.File, "file", "", "verify a BOM file (a bucket object) instead of an image")
	fl.StringVar(&o.Bundle, "bundle", "", "the bundle of --file (default: the file's name + .sigstore.json)")
	fl.StringVarP(&o.Output, "output", "o", "text", "text or json")
	return cmd
}
