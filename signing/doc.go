// Package signing signs AI-BOMs as Sigstore attestations and verifies them,
// through sigstore-go, for the oci and gcs sinks and `bomstream verify`.
//
// A BOM becomes an in-toto statement (Statement): its subject is what the
// BOM describes, an image manifest digest (oci sink) or the BOM object
// itself (gcs sink), its predicate type https://cyclonedx.org/bom and its
// predicate the BOM. A Signer wraps the statement in a DSSE envelope, signs
// it and returns a Sigstore bundle v0.3 (JSON), the format cosign v3
// writes:
//
//   - with a key (Config.KeyFile or Config.KeyEnv: a PEM ECDSA P-256 or
//     Ed25519 private key, a mounted Secret's file or variable), read and
//     parsed once by New, so that a missing or unreadable key refuses the
//     start. Errors name the key (its file or variable), never its content,
//     and the Signer never formats it.
//   - keyless (Config.Keyless): for each signature a new key, certified by
//     Fulcio for the identity of an OIDC token (the pod's projected
//     service-account token, read again each time), the entry logged in
//     Rekor, and an RFC 3161 timestamp when a timestamp authority is set.
//     The URLs default to public-good Sigstore and may name a private
//     deployment. Options replace the three services; package signingtest
//     puts sigstore-go's in-memory VirtualSigstore behind them, offline.
//
// In a registry the bundle is an OCI 1.1 referrer of the image manifest in
// cosign v3's layout (Manifest): artifactType and layer media type
// application/vnd.dev.sigstore.bundle.v0.3+json, annotations
// dev.sigstore.bundle.content and dev.sigstore.bundle.predicateType, plus
// the BOM version it attests (Version: workload uid, change sequence,
// bomHash). Signatures are not deterministic, so a sink looks for a
// referrer with those annotations before it signs: one attestation per
// image digest and BOM version, and a replay pushes nothing.
//
// A Verifier checks a bundle against a Policy, a public key or a
// certificate identity and issuer with the Sigstore instance's trusted
// root, and returns the attested BOM (Verified). Keyless, it requires a
// transparency log entry (unless told not to) and an observer timestamp,
// and names the usual failure of a short-lived certificate: expired, with
// nothing in the bundle proving when it signed. Attachments lists the
// bundles attached to an image, bomstream's and cosign's, through the
// referrers API or the referrers tag schema.
package signing
