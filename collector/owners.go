package collector

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bomstream/bomstream/schemas"
)

// Object is what the roll-up knows of one cluster object: its identity and
// its controller owner reference.
type Object struct {
	APIVersion, Kind, Namespace, Name, UID string
	// Owner is the controller owner reference; nil when none.
	Owner *OwnerRef
	// Generic: the object is the owner an owner reference names, of a kind
	// no profile describes; it is known only through that reference (see
	// Normalizer.Generic).
	Generic bool
}

// OwnerRef is a controller owner reference.
type OwnerRef struct {
	APIVersion, Kind, Name, UID string
}

func (o Object) String() string { return o.Namespace + "/" + o.Kind + "/" + o.Name }

// ErrOwnerCycle is wrapped by RollUp when owner references loop.
var ErrOwnerCycle = errors.New("owner references form a cycle")

// ErrOwnerUnseen is wrapped by RollUp when an object is controlled by a known
// owner kind that the lookup does not have (not watched, not synced yet, or
// gone): the object belongs to a workload that cannot be named.
var ErrOwnerUnseen = errors.New("owner not seen")

// UnseenOwnerError is RollUp's error when an owner of a known owner kind
// is not in the lookup (not watched, not synced yet, or gone): Owner is
// the reference that names it. It wraps ErrOwnerUnseen.
type UnseenOwnerError struct {
	Object Object
	Owner  OwnerRef
}

func (e *UnseenOwnerError) Error() string {
	return fmt.Sprintf("roll up %s: %s: %s %s %s", e.Object, ErrOwnerUnseen, e.Owner.APIVersion, e.Owner.Kind, e.Owner.Name)
}

func (e *UnseenOwnerError) Unwrap() error { return ErrOwnerUnseen }

// maxOwnerDepth bounds the walk up; real chains (Pod, ReplicaSet,
// Deployment, DynamoComponentDeployment, DynamoGraphDeployment) are shorter.
const maxOwnerDepth = 16

// RollUp returns the top-level object o belongs to, following controller
// references upward while the owner's kind is a known owner (profile
// owner: true), as docs/KINDS.md describes: a Pod to its ReplicaSet to its
// Deployment, a StatefulSet to its LeaderWorkerSet, Grove objects and
// DynamoComponentDeployments to their DynamoGraphDeployment. An object with
// no controller, or one whose controller's profile rolls up nothing (a
// Node), is its own top. A controller of a kind no profile describes is
// the top, Generic, named by its owner reference alone: no serving pod is
// lost because its operator is unknown. lookup finds an object by uid.
func (n *Normalizer) RollUp(o Object, lookup func(uid string) (Object, bool)) (Object, error) {
	seen := map[string]bool{o.UID: true}
	cur := o
	for range maxOwnerDepth {
		ref := cur.Owner
		if ref == nil {
			return cur, nil
		}
		group, _ := splitAPIVersion(ref.APIVersion)
		p := n.profiles[gk{group, ref.Kind}]
		if p == nil {
			return Object{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: cur.Namespace, Name: ref.Name, UID: ref.UID, Generic: true}, nil
		}
		if !p.owner {
			return cur, nil
		}
		if seen[ref.UID] {
			return Object{}, fmt.Errorf("roll up %s: %w at %s %s", o, ErrOwnerCycle, ref.Kind, ref.Name)
		}
		seen[ref.UID] = true
		next, ok := lookup(ref.UID)
		if !ok {
			return Object{}, &UnseenOwnerError{Object: o, Owner: *ref}
		}
		cur = next
	}
	return Object{}, fmt.Errorf("roll up %s: %w (deeper than %d)", o, ErrOwnerCycle, maxOwnerDepth)
}

// PodImage is what a pod reports about one container: its name, the image of
// its spec, and status.containerStatuses[].imageID.
type PodImage struct {
	Container, Image, ImageID string
}

// DigestOf returns "sha256:<hex>" from an imageID such as
// "docker-pullable://repo@sha256:<hex>" or "repo@sha256:<hex>". An imageID
// without a repository digest (empty, or an image config id) gives false.
func DigestOf(imageID string) (string, bool) {
	i := strings.LastIndexByte(imageID, '@')
	if i < 0 {
		return "", false
	}
	d := imageID[i+1:]
	if len(d) != len("sha256:")+64 || !strings.HasPrefix(d, "sha256:") {
		return "", false
	}
	for _, c := range d[len("sha256:"):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return d, true
}

// Digests is the digest set of a workload: for each container of in that
// running pods report, the sorted distinct set of digests they run, located
// at the container. Images no pod reports keep their digests from retained
// (the last published set) while the workload still names the image, so a
// pod that is deleted and recreated, or a workload scaled to zero, publishes
// nothing. A reported image that no container of in names (one an operator
// or webhook added) is kept without a locator.
func Digests(in *schemas.Inputs, reported []PodImage, retained []schemas.ImageDigest) []schemas.ImageDigest {
	type key struct{ image, digest, locator string }
	set := map[key]bool{}
	reportedImage := map[string]bool{}
	containers := map[string][]*schemas.Container{} // image -> containers naming it
	for ci := range in.Components {
		for k := range in.Components[ci].Containers {
			c := &in.Components[ci].Containers[k]
			if c.Image != "" {
				containers[c.Image] = append(containers[c.Image], c)
			}
		}
	}
	for _, r := range reported {
		d, ok := DigestOf(r.ImageID)
		if !ok || r.Image == "" {
			continue
		}
		reportedImage[r.Image] = true
		cs := containers[r.Image]
		if len(cs) == 0 {
			set[key{r.Image, d, ""}] = true
			continue
		}
		// The containers of that name, else every container with the image.
		named := false
		for _, c := range cs {
			if c.Name == r.Container {
				set[key{r.Image, d, c.Locator}] = true
				named = true
			}
		}
		if !named {
			for _, c := range cs {
				set[key{r.Image, d, c.Locator}] = true
			}
		}
	}
	for _, d := range retained {
		if reportedImage[d.Image] || len(containers[d.Image]) == 0 {
			continue
		}
		set[key{d.Image, d.Digest, d.Locator}] = true
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]schemas.ImageDigest, 0, len(set))
	for k := range set {
		out = append(out, schemas.ImageDigest{Image: k.image, Digest: k.digest, Locator: k.locator})
	}
	slices.SortFunc(out, func(a, b schemas.ImageDigest) int {
		if c := strings.Compare(a.Locator, b.Locator); c != 0 {
			return c
		}
		if c := strings.Compare(a.Image, b.Image); c != 0 {
			return c
		}
		return strings.Compare(a.Digest, b.Digest)
	})
	return out
}
