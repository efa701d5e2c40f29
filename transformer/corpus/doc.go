// Package corpus holds bomstream to the manifests people really run.
//
// A corpus is a folder of manifests and a table of what a careful reader
// expects of each file or workload: whether it serves a model, with which
// engine and version, which models and revision, which roles. Three are
// read:
//
//   - realworld: ../shared/fixtures/realworld, manifests copied byte for
//     byte from public repositories, with index.json ([LoadRealworld]);
//   - upstream: ../shared/fixtures/upstream, 45 manifests with INDEX.md,
//     whose reading is transformer/testdata/upstream.yaml;
//   - own: transformer/testdata/manifests, written for this project in
//     the shapes upstream documents show, with transformer/testdata/expected.
//
// [Evaluate] renders every file the way `bomstream render -f FILE` does
// (the collector's manifest source, links between the documents of one
// file followed) and checks each case field by field. A table can be wrong
// (the realworld index was written by reading the files): known.yaml
// lists every case where bomstream and a table disagree, says which of the
// two is wrong and why. A case the table gets wrong counts right; a known
// miss of bomstream counts wrong but does not fail the run; any other
// failure does, and so does a known miss that passes (stale).
//
// [Report] prints, per corpus, serving precision and recall and the
// accuracy of runtime, version, models, revision and roles: `make corpus`.
package corpus
