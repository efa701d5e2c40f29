GO       ?= go
BIN      ?= bin/bomstream
PKGS     ?= ./...
FUZZTIME ?= 10s

.PHONY: build test lint bench fuzz demo clean

build:
	$(GO) build -o $(BIN) ./cmd/bomstream

# test: everything CI runs: lint, the unit and end-to-end tests, and a short fuzz.
test: lint
	$(GO) test -count=1 $(PKGS)
	$(MAKE) fuzz

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseImage$$' -fuzztime $(FUZZTIME) ./transformer/
	$(GO) test -run '^$$' -fuzz '^FuzzParseArgs$$' -fuzztime $(FUZZTIME) ./transformer/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./collector/manifest/
	$(GO) test -run '^$$' -fuzz '^FuzzRedactCommand$$' -fuzztime $(FUZZTIME) ./collector/
	$(GO) test -run '^$$' -fuzz '^FuzzRedactText$$' -fuzztime $(FUZZTIME) ./schemas/

# bench: every benchmark; the pipeline ones on BENCH_N workloads (the issue's
# full size is BENCH_N=100000, about ten minutes on two cores).
BENCH_N ?= 20000
bench:
	BOMSTREAM_BENCH_N=$(BENCH_N) $(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./cmd/bomstream/
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v /cmd/)

clean:
	rm -rf bin

# demo: the whole pipeline on the bundled examples (embedded JetStream, file sink ./boms).
demo:
	$(GO) run ./cmd/bomstream run --manifests examples/ --once
