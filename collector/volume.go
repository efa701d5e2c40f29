package collector

import (
	"slices"

	"github.com/bomstream/bomstream/schemas"
)

// Volumes that can carry a model: an image volume (a model packaged as an
// OCI image or artifact, mounted read-only), or a volume that more than
// one container of a pod mounts (an init container downloads the model,
// the server reads it). Only these, and the containers' mounts of them,
// are inputs; a volume one container keeps to itself (a /dev/shm) changes
// nothing a BOM shows.

// volumes reads a pod's volumes at p: names, image references and claims.
func (w walker) volumes(p path, from []step) ([]schemas.Volume, error) {
	var out []schemas.Volume
	for _, vm := range p.walk(w.root, from) {
		items, ok := vm.value().([]any)
		if !ok {
			return nil, w.errorf(vm.locator(), "expected a list of volumes, found %s", describe(vm.value()))
		}
		for i, item := range items {
			obj, ok := item.(map[string]any)
			if !ok {
				continue
			}
			loc := joinIndex(vm.locator(), i)
			name, _, err := w.scalar(obj["name"], loc+".name")
			if err != nil {
				return nil, err
			}
			v := schemas.Volume{Name: schemas.RedactText(name), Locator: loc}
			if img, ok := obj["image"].(map[string]any); ok {
				ref, _, err := w.scalar(img["reference"], loc+".image.reference")
				if err != nil {
					return nil, err
				}
				v.Image = schemas.RedactText(ref)
			}
			if pvc, ok := obj["persistentVolumeClaim"].(map[string]any); ok {
				claim, _, err := w.scalar(pvc["claimName"], loc+".persistentVolumeClaim.claimName")
				if err != nil {
					return nil, err
				}
				v.Claim = schemas.RedactText(claim)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// mounts reads a container's volumeMounts.
func (w walker) mounts(v any, loc string) ([]schemas.Mount, error) {
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, w.errorf(loc, "expected a list of volume mounts, found %s", describe(v))
	}
	var out []schemas.Mount
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			continue
		}
		iloc := joinIndex(loc, i)
		name, _, err := w.scalar(obj["name"], iloc+".name")
		if err != nil {
			return nil, err
		}
		mp, _, err := w.scalar(obj["mountPath"], iloc+".mountPath")
		if err != nil {
			return nil, err
		}
		sub, _, err := w.scalar(obj["subPath"], iloc+".subPath")
		if err != nil {
			return nil, err
		}
		if name == "" || mp == "" {
			continue
		}
		out = append(out, schemas.Mount{Volume: schemas.RedactText(name), Path: schemas.RedactText(mp), SubPath: schemas.RedactText(sub)})
	}
	return out, nil
}

// keepVolumes keeps the volumes that can carry a model (image volumes, and
// volumes mounted by more than one container), and in each container only
// the mounts of those.
func keepVolumes(vols []schemas.Volume, cs []schemas.Container) []schemas.Volume {
	users := map[string]int{}
	for _, c := range cs {
		seen := map[string]bool{}
		for _, m := range c.Mounts {
			if !seen[m.Volume] {
				seen[m.Volume] = true
				users[m.Volume]++
			}
		}
	}
	kept := map[string]bool{}
	var out []schemas.Volume
	for _, v := range vols {
		if v.Name == "" || kept[v.Name] {
			continue
		}
		if v.Image != "" || users[v.Name] > 1 {
			kept[v.Name] = true
			out = append(out, v)
		}
	}
	for i := range cs {
		cs[i].Mounts = slices.DeleteFunc(cs[i].Mounts, func(m schemas.Mount) bool { return !kept[m.Volume] })
		if len(cs[i].Mounts) == 0 {
			cs[i].Mounts = nil
		}
	}
	return out
}
