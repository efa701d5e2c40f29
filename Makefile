GO       ?= go
BIN      ?= bin/bomstream
PKGS     ?= ./...
# FUZZTIME is a count of executions per target, not a duration: Go's fuzz
# coordinator can fail a duration budget whose deadline lands while a worker
# minimizes a new input ("context deadline exceeded", no input written), and
# a count has no deadline to race. New inputs are minimized for at most
# FUZZMINTIME, so a large cached corpus does not stall a run.
FUZZTIME    ?= 100000x
FUZZMINTIME ?= 2s
FUZZ         = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME)

.PHONY: build test lint golangci-lint bench bench-collector fuzz demo clean kube-bins soak soak-election soak-fleet image cosign corpus

# build: bin/bomstream, bin/bomstream-collector, the same without the
# cloud sinks (-tags nocloudsinks): a collector with half the memory, the
# binary of the bomstream-collector image; and bin/kubectl-bomstream, the
# kubectl plugin (put it on the PATH).
build:
	$(GO) build -o $(BIN) ./cmd/bomstream
	$(GO) build -tags nocloudsinks -o $(BIN)-collector ./cmd/bomstream
	$(GO) build -o $(dir $(BIN))kubectl-bomstream ./cmd/kubectl-bomstream

# test: everything CI runs: lint, the unit, integration and end-to-end tests,
# and a short fuzz. The integration tests need kube-apiserver and etcd: they
# are built first when KUBEBUILDER_ASSETS does not name them (see
# kube-bins; a few CPU-minutes the first time, seconds after). The
# external-server tests run bin/nats-server, built from the module cache.
test: lint
	@assets="$${KUBEBUILDER_ASSETS:-}"; \
	if [ -z "$$assets" ]; then assets="$$($(MAKE) --no-print-directory -s kube-bins | tail -n 1)"; fi; \
	natsbin="$${BOMSTREAM_NATS_SERVER_BIN:-$(CURDIR)/bin/nats-server}"; \
	[ -n "$${BOMSTREAM_NATS_SERVER_BIN:-}" ] || $(GO) build -o "$$natsbin" github.com/nats-io/nats-server/v2; \
	cosignbin="$${BOMSTREAM_COSIGN_BIN:-}"; \
	if [ -z "$$cosignbin" ]; then cosignbin="$$($(MAKE) --no-print-directory -s cosign | tail -n 1)"; fi; \
	echo "KUBEBUILDER_ASSETS=$$assets BOMSTREAM_NATS_SERVER_BIN=$$natsbin BOMSTREAM_COSIGN_BIN=$$cosignbin $(GO) test -count=1 -timeout 45m $(PKGS)"; \
	KUBEBUILDER_ASSETS="$$assets" BOMSTREAM_NATS_SERVER_BIN="$$natsbin" BOMSTREAM_COSIGN_BIN="$$cosignbin" $(GO) test -count=1 -timeout 45m $(PKGS)
	$(MAKE) fuzz

# corpus: render every corpus (../shared/fixtures/realworld with its
# index.json, ../shared/fixtures/upstream with transformer/testdata/
# upstream.yaml, and the project's own transformer/testdata/manifests) and
# print per corpus the serving precision and recall and the accuracy of
# runtime, version, models, revision and roles; it fails when a case
# misses that transformer/corpus/known.yaml does not list with its reason.
corpus:
	$(GO) test -count=1 -v -run '^TestCorpus$$' ./transformer/corpus/ -args -corpus.report

# kube-bins: kube-apiserver and etcd for the integration tests (envtest),
# built from the Go module proxy by .ci/kube-bins.sh into KUBE_BINS_DIR,
# outside the repository. A few CPU-minutes cold; seconds from Go's build
# cache. Use the directory as KUBEBUILDER_ASSETS.
KUBE_VERSION  ?= v1.37.2
ETCD_VERSION  ?= v3.7.0
KUBE_BINS_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/bomstream/kube-bins/$(KUBE_VERSION)
kube-bins:
	KUBE_VERSION=$(KUBE_VERSION) ETCD_VERSION=$(ETCD_VERSION) KUBE_BINS_DIR=$(KUBE_BINS_DIR) GO=$(GO) ./.ci/kube-bins.sh

# cosign: the cosign CLI the signing interoperability tests run (and
# make image signs with), built from the Go module proxy into COSIGN_DIR,
# outside the repository; a few CPU-minutes cold, seconds from Go's build
# cache. Prints the binary's path.
COSIGN_VERSION ?= v3.1.3
COSIGN_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/bomstream/cosign/$(COSIGN_VERSION)
cosign:
	@test -x $(COSIGN_DIR)/cosign || GOBIN=$(COSIGN_DIR) GOFLAGS=-mod=mod $(GO) install github.com/sigstore/cosign/v3/cmd/cosign@$(COSIGN_VERSION)
	@echo $(COSIGN_DIR)/cosign

# golangci-lint: the linter `make lint` runs with .golangci.yml (the
# layering rules), built from the Go module proxy into GOLANGCI_DIR, outside
# the repository; a few CPU-minutes cold, seconds from Go's build cache.
# Prints the binary's path.
GOLANGCI_VERSION ?= v2.15.0
GOLANGCI_DIR     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/bomstream/golangci-lint/$(GOLANGCI_VERSION)
golangci-lint:
	@test -x $(GOLANGCI_DIR)/golangci-lint || GOBIN=$(GOLANGCI_DIR) GOFLAGS=-mod=mod $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	@echo $(GOLANGCI_DIR)/golangci-lint

# lint: gofmt, go vet, the size limits (.ci/sizes.go) and golangci-lint
# with the house's layering rules (.golangci.yml).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags soak ./cmd/bomstream/
	$(GO) vet -tags nocloudsinks ./cmd/... ./sinks/...
	$(GO) run .ci/sizes.go .
	@lint=$$($(MAKE) --no-print-directory -s golangci-lint | tail -n 1) && $$lint run ./...

fuzz:
	$(FUZZ) -fuzz '^FuzzParseImage$$' ./transformer/
	$(FUZZ) -fuzz '^FuzzParseArgs$$' ./schemas/cmdline/
	$(FUZZ) -fuzz '^FuzzParse$$' ./collector/manifest/
	$(FUZZ) -fuzz '^FuzzRedactCommand$$' ./collector/
	$(FUZZ) -fuzz '^FuzzRedactText$$' ./schemas/
	$(FUZZ) -fuzz '^FuzzPythonCalls$$' ./schemas/
	$(FUZZ) -fuzz '^FuzzRead$$' ./inventory/bomview/

# bench: every benchmark; the pipeline ones on BENCH_N workloads (the issue's
# full size is BENCH_N=100000, about ten minutes on two cores).
BENCH_N ?= 20000
bench:
	BOMSTREAM_BENCH_N=$(BENCH_N) $(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./cmd/bomstream/
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v /cmd/)

# bench-collector: the cluster collector on 1,000 and 10,000 Deployments in a
# real API server; prints time to the last BOM, RSS, idle requests and
# writes. It measures the build the bomstream-collector image ships
# (BENCH_TAGS=nocloudsinks); BENCH_TAGS= measures the full binary.
BENCH_COLLECTOR ?= 1000,10000
BENCH_IDLE      ?= 5m
BENCH_TAGS      ?= nocloudsinks
bench-collector: kube-bins
	KUBEBUILDER_ASSETS=$(KUBE_BINS_DIR) BOMSTREAM_BENCH_COLLECTOR=$(BENCH_COLLECTOR) BOMSTREAM_BENCH_IDLE=$(BENCH_IDLE) BOMSTREAM_BENCH_TAGS=$(BENCH_TAGS) \
	  $(GO) test -run '^$$' -bench Collector -benchtime 1x -timeout 60m ./cmd/bomstream/

# soak: SOAK_DURATION (default 30m) of changes with kill -9 every 20-60 s and
# read-only periods of the sink (needs root to mount a tmpfs); not in CI.
SOAK_DURATION ?= 30m
soak:
	BOMSTREAM_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -tags soak -run '^TestSoak$$' -v -timeout 0 ./cmd/bomstream/

# soak-election: issue 30's leader stop at its size, not in CI (CI runs 3
# runs over 600 workloads): ELECTION_RUNS runs of `run --once` over
# ELECTION_WORKLOADS workloads on three nats-server processes (R3), the
# server leading CHANGES stopped at a random point of each; every run must
# exit 0 with every workload exported once. Prints each run's rc and time.
ELECTION_RUNS      ?= 10
ELECTION_WORKLOADS ?= 3000
soak-election:
	BOMSTREAM_ELECTION_RUNS=$(ELECTION_RUNS) BOMSTREAM_ELECTION_WORKLOADS=$(ELECTION_WORKLOADS) \
	  $(GO) test -run '^TestRunOnceThroughLeaderStop$$' -count=1 -v -timeout 0 ./cmd/bomstream/

# soak-fleet: the replicated hub at issue 19's size, not in CI (CI runs
# 2,000 changes): FLEET_WORKLOADS workloads changed four times (10,000
# changes) through two transformer and two sink processes (file, gcs,
# latest-only stdout) on a 3-node cluster whose CHANGES leader stops and
# comes back; every change exported once by every sink. About eleven
# minutes on an idle machine (the fake GCS slows as it fills).
FLEET_WORKLOADS ?= 2500
soak-fleet:
	BOMSTREAM_FLEET_WORKLOADS=$(FLEET_WORKLOADS) \
	  $(GO) test -run '^TestClusterLeaderStopTwoReplicasExactlyOnce$$' -count=1 -v -timeout 0 ./cmd/bomstream/

clean:
	rm -rf bin

# image: the container images (linux/amd64 and linux/arm64; static, non-root,
# one layer on scratch, its CycloneDX SBOM attached as an OCI referrer) as OCI
# image layouts, built by deploy/image without a Docker daemon; see
# docs/image.md. IMAGE_OUT holds bomstream, COLLECTOR_IMAGE_OUT
# bomstream-collector (the same built with -tags nocloudsinks, which the
# chart's collector Deployment runs). Reproducible: the timestamps are the
# last commit's time. IMAGE_PUSH and COLLECTOR_IMAGE_PUSH
# (registry/repository:tag) also push them (default keychain), IMAGE_VERSION
# sets the version label (default: the binary's). Signing (docs/image.md#signing):
# IMAGE_SIGN_KEY (a PEM private key file), IMAGE_SIGN_KEY_ENV (the variable
# holding one), IMAGE_SIGN_KMS_KEY (gcpkms://..., hashivault://...) or
# IMAGE_KEYLESS=1 (Fulcio and Rekor, the OIDC token in $SIGSTORE_ID_TOKEN)
# attach to both images and their indexes a signed CycloneDX SBOM and SLSA
# provenance attestation, pushed with them; IMAGE_SIGN_FLAGS adds flags
# (--builder-id, --fulcio-url, --rekor-url, --timestamp-url, --oidc-token-file).
IMAGE_OUT           ?= bin/image/oci-layout
COLLECTOR_IMAGE_OUT ?= bin/image/collector-oci-layout
IMAGE_PUSH          ?=
COLLECTOR_IMAGE_PUSH ?=
IMAGE_VERSION       ?=
IMAGE_REVISION      ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH   ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_SIGN_KEY      ?=
IMAGE_SIGN_KEY_ENV  ?=
IMAGE_SIGN_KMS_KEY  ?=
IMAGE_KEYLESS       ?=
IMAGE_SIGN_FLAGS    ?=
IMAGE_FLAGS = $(if $(IMAGE_REVISION),--revision $(IMAGE_REVISION)) $(if $(IMAGE_VERSION),--version $(IMAGE_VERSION)) \
  $(if $(IMAGE_SIGN_KEY),--sign-key $(IMAGE_SIGN_KEY)) $(if $(IMAGE_SIGN_KEY_ENV),--sign-key-env $(IMAGE_SIGN_KEY_ENV)) \
  $(if $(IMAGE_SIGN_KMS_KEY),--sign-kms-key $(IMAGE_SIGN_KMS_KEY)) $(if $(IMAGE_KEYLESS),--keyless) $(IMAGE_SIGN_FLAGS)
image:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./deploy/image --out $(IMAGE_OUT) $(IMAGE_FLAGS) \
	  $(if $(IMAGE_PUSH),--push $(IMAGE_PUSH))
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./deploy/image --out $(COLLECTOR_IMAGE_OUT) $(IMAGE_FLAGS) \
	  --title bomstream-collector --tags nocloudsinks $(if $(COLLECTOR_IMAGE_PUSH),--push $(COLLECTOR_IMAGE_PUSH))

# demo: the whole pipeline on the bundled examples (embedded JetStream, file sink ./boms).
demo:
	$(GO) run ./cmd/bomstream run --manifests examples/ --once
