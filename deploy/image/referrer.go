package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// emptyConfig is the config of an artifact manifest: the empty JSON object of
// the image-spec's empty descriptor, typed with the artifact type as the oci
// sink does (sinks/oci, artifactConfig): OCI 1.1 clients and registries read
// the type from artifactType, and those that take it from config.mediaType
// (pre-1.1 ones, go-containerregistry's registry) agree with them.
var emptyConfig = []byte("{}")

// newReferrer makes an OCI 1.1 artifact manifest: artifactType, the empty
// config (see emptyConfig), blob as its one layer (named title), and subject, so that the
// referrers API (or an OCI layout reader such as oras) lists it for the
// subject. It is a v1.Image so that go-containerregistry writes and pushes
// it as it does any image.
func newReferrer(subject v1.Descriptor, artifactType string, blob []byte, title string, created time.Time) (v1.Image, error) {
	layer := static.NewLayer(blob, types.MediaType(artifactType))
	ld, err := layer.Digest()
	if err != nil {
		return nil, err
	}
	cd, _, err := v1.SHA256(bytes.NewReader(emptyConfig))
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  artifactType,
		Config:        v1.Descriptor{MediaType: types.MediaType(artifactType), Size: int64(len(emptyConfig)), Digest: cd},
		Layers: []v1.Descriptor{{
			MediaType:   types.MediaType(artifactType),
			Size:        int64(len(blob)),
			Digest:      ld,
			Annotations: map[string]string{annTitle: title},
		}},
		Subject:     &v1.Descriptor{MediaType: subject.MediaType, Size: subject.Size, Digest: subject.Digest},
		Annotations: map[string]string{annCreated: created.UTC().Format(time.RFC3339)},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&referrer{manifest: raw, layer: layer, layerDigest: ld, configType: types.MediaType(artifactType)})
}

// referrer is the partial.CompressedImageCore of an artifact manifest.
type referrer struct {
	manifest    []byte
	layer       v1.Layer
	layerDigest v1.Hash
	configType  types.MediaType
}

func (r *referrer) RawConfigFile() ([]byte, error)      { return emptyConfig, nil }
func (r *referrer) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (r *referrer) RawManifest() ([]byte, error)        { return r.manifest, nil }

func (r *referrer) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if h == r.layerDigest {
		return r.layer, nil
	}
	if cd, _, _ := v1.SHA256(bytes.NewReader(emptyConfig)); h == cd {
		return static.NewLayer(emptyConfig, r.configType), nil
	}
	return nil, fmt.Errorf("artifact has no blob %s", h)
}
