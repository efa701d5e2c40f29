// Command image builds a bomstream container image without a Docker daemon
// and writes it as an OCI image layout: one multi-arch index (linux/amd64 and
// linux/arm64 by default), each platform image a single layer on scratch, and
// a CycloneDX SBOM of each platform image attached to it as an OCI 1.1
// referrer. Building twice from the same sources gives the same digests.
//
//	go run ./deploy/image [--out bin/image/oci-layout] [--push REF]
//	go run ./deploy/image --title bomstream-collector --tags nocloudsinks --out DIR
//
// The second is the bomstream-collector image: the same binary without the
// cloud sinks, which the chart's collector Deployment runs. `make image`
// builds both. With --sign-key (or --sign-key-env, --sign-kms-key, or
// --keyless in a CI with an OIDC token) each image and the index also get
// a signed CycloneDX SBOM attestation and a signed SLSA provenance
// attestation (sign.go). What goes into the images and why is told in
// docs/image.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Getenv)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stdout)
	var (
		cfg       Config
		platforms string
		epoch     string
		push      string
		insecure  bool
		skipBuild bool
		sf        signFlags
	)
	fs.StringVar(&cfg.Out, "out", "bin/image/oci-layout", "the OCI image layout `directory` to write (replaced)")
	fs.StringVar(&cfg.Package, "package", DefaultPackage, "the main `package` to build")
	fs.StringVar(&cfg.Tags, "tags", "", "comma-separated Go build `tags` of the binary (nocloudsinks: the bomstream-collector image)")
	fs.StringVar(&cfg.Title, "title", DefaultTitle, "org.opencontainers.image.title, and the image's name in its SBOM")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch `list`")
	fs.StringVar(&cfg.Version, "version", "", "org.opencontainers.image.version (default: the binary's module version, or \"dev\")")
	fs.StringVar(&cfg.Revision, "revision", "", "org.opencontainers.image.revision (default: the binary's vcs.revision)")
	fs.StringVar(&cfg.Source, "source", DefaultSource, "org.opencontainers.image.source")
	fs.StringVar(&cfg.Tag, "tag", "", "the tag the index carries in the layout (default: the version)")
	fs.StringVar(&epoch, "source-date-epoch", getenv("SOURCE_DATE_EPOCH"), "the fixed time of every timestamp, in `seconds` since 1970 (default: $SOURCE_DATE_EPOCH, else the binary's vcs.time, else 0)")
	fs.StringVar(&push, "push", "", "push the index and its SBOMs to this `reference` (registry/repository:tag) with the default keychain")
	fs.BoolVar(&insecure, "insecure", false, "with --push: plain HTTP to the registry")
	fs.BoolVar(&skipBuild, "skip-build", false, "with --push or signing: use the layout in --out as it is (to mirror or sign a copied layout)")
	sf.bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if skipBuild && push == "" && !sf.enabled() {
		return errors.New("--skip-build needs --push or a signing flag (--sign-key, --sign-key-env, --sign-kms-key, --keyless)")
	}
	// The signer is made first: a missing key or token refuses the start,
	// not the end of a build.
	signer, cleanup, err := sf.signer(getenv)
	if err != nil {
		return err
	}
	defer cleanup()
	if !skipBuild {
		ps, err := parsePlatforms(platforms)
		if err != nil {
			return err
		}
		cfg.Platforms = ps
		if epoch != "" {
			sec, err := strconv.ParseInt(epoch, 10, 64)
			if err != nil {
				return fmt.Errorf("source date epoch %q: %w", epoch, err)
			}
			cfg.Created = time.Unix(sec, 0).UTC()
		}
		res, err := Build(ctx, cfg)
		if err != nil {
			return err
		}
		res.Print(stdout)
	}
	if signer != nil {
		as, err := Sign(ctx, cfg.Out, SignOptions{Signer: signer, BuilderID: sf.builderID})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "signed %d attestations with %s in %s\n", len(as), signer, cfg.Out)
		PrintAttestations(stdout, as)
	}
	if push != "" {
		if err := Push(ctx, cfg.Out, push, PushOptions{Insecure: insecure, Log: stdout}); err != nil {
			return err
		}
	}
	return nil
}

func parsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for p := range strings.SplitSeq(s, ",") {
		goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos != "linux" || arch == "" {
			return nil, fmt.Errorf("platform %q: want linux/ARCH", p)
		}
		out = append(out, Platform{OS: goos, Arch: arch})
	}
	return out, nil
}
