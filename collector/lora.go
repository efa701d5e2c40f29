package collector

import (
	"maps"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/bomstream/bomstream/schemas"
)

// loraFields are the LoRA adapters the ConfigMaps names (a pod's volumes
// and projected volumes) list, as fields named loraAdapter whose locators
// name the ConfigMap key and the place in its document.
func loraFields(names []string, v *configMapView) []schemas.Field {
	var out []schemas.Field
	for _, name := range names {
		data, ok := v.data(name)
		if !ok {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			text, _ := data[k].(string)
			var doc any
			if text == "" || yaml.Unmarshal([]byte(text), &doc) != nil {
				continue
			}
			loc := joinKey("ConfigMap/"+name+":data", k)
			for _, a := range loraAdapters(doc, "", false) {
				out = append(out, schemas.Field{Name: "loraAdapter", Value: schemas.RedactText(a.value), Locator: loc + ":" + a.path})
			}
		}
	}
	return out
}

type adapterRef struct{ value, path string }

// loraAdapters finds the adapters a configuration document lists: the
// entries of a list under a key naming LoRA adapters (lora, adapters,
// loraAdapters, ensureExist.models of the LoRA syncer, lora_modules, ...),
// each a string or a map with a source, path, repo or model key.
func loraAdapters(v any, loc string, inList bool) []adapterRef {
	var out []adapterRef
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range keys {
			lower := strings.ToLower(k)
			list := inList || strings.Contains(lower, "lora") || strings.Contains(lower, "adapter") || lower == "ensureexist"
			out = append(out, loraAdapters(x[k], joinKey(loc, k), list)...)
		}
	case []any:
		if !inList {
			for i, item := range x {
				out = append(out, loraAdapters(item, joinIndex(loc, i), false)...)
			}
			return out
		}
		for i, item := range x {
			iloc := joinIndex(loc, i)
			switch it := item.(type) {
			case string:
				val := it
				if _, p, ok := strings.Cut(it, "="); ok {
					val = p
				}
				if val != "" {
					out = append(out, adapterRef{value: val, path: iloc})
				}
			case map[string]any:
				for _, k := range []string{"source", "path", "lora_path", "repo", "model", "uri"} {
					if s, ok := it[k].(string); ok && s != "" {
						out = append(out, adapterRef{value: s, path: joinKey(iloc, k)})
						break
					}
				}
			}
		}
	}
	return out
}
