// Package imageref reads the two words every part of bomstream spells the
// same way: a container image reference and the release version its tag
// carries.
//
// [ParseImage] reads a reference with the grammar the registries use, and
// fills in docker.io and library/ as docker does. Anything that is not yet
// an image (empty, templated, malformed) is an error wrapping
// [ErrUnresolvedImage]. [Image.Name] is the string image rules match.
//
// [ParseVersion] splits a tag or a version field into the release as its
// project publishes it and the build variant: v0.4.6.post1-cu124 is
// 0.4.6.post1 built for cu124. [Version] keeps the release alone. Tags that
// are no release (latest, a date) give "".
//
// The transformer names images and runtime versions in a BOM with these
// functions. The read side (the inventory's image filters, its version
// ranges) reads them back the same way, without importing a stage.
package imageref
