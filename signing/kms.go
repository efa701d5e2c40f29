package signing

import (
	"context"
	"crypto"
	"fmt"
	"time"

	sigkms "github.com/sigstore/sigstore/pkg/signature/kms"
	// The key management services attest.kmsKey may name, through
	// sigstore's KMS signers: Google Cloud KMS and HashiCorp Vault.
	_ "github.com/sigstore/sigstore/pkg/signature/kms/gcp"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault"
)

// kmsTimeout bounds reaching the service and reading the public key.
const kmsTimeout = 30 * time.Second

// kmsKeypair reaches the key named by uri through sigstore's KMS signers
// and wraps it as a keypair: its public key is read now (so a key that is
// missing, or that the identity may not use, refuses the start), and each
// signature is a call to the service.
func kmsKeypair(uri string) (*keypair, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kmsTimeout)
	defer cancel()
	sv, err := sigkms.Get(ctx, uri, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("reach the key management service: %w", err)
	}
	signer, _, err := sv.CryptoSigner(context.Background(), func(error) {})
	if err != nil {
		return nil, fmt.Errorf("signer of the key: %w", err)
	}
	if _, err := sv.PublicKey(); err != nil {
		return nil, fmt.Errorf("read the key's public key: %w", err)
	}
	return signerKeypair(signer)
}
