package collector

import (
	"maps"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/bomstream/bomstream/schemas"
)

// configMapFields reads what the ConfigMaps mounted by a pod (volumes and
// projected volumes) say about the models it serves: the LoRA adapters they
// list, as fields named loraAdapter.
func (w walker) configMapFields(volumes path, from []step) []schemas.Field {
	if w.lookup == nil {
		return nil
	}
	var names []string
	for _, vm := range volumes.walk(w.root, from) {
		items, _ := vm.value().([]any)
		for _, item := range items {
			v, _ := item.(map[string]any)
			names = appendConfigMap(names, v)
			proj, _ := v["projected"].(map[string]any)
			srcs, _ := proj["sources"].([]any)
			for _, s := range srcs {
				sm, _ := s.(map[string]any)
				names = appendConfigMap(names, sm)
			}
		}
	}
	var out []schemas.Field
	for _, name := range dedupe(names) {
		cm, ok := w.lookup.Get("v1", "ConfigMap", w.ns, name)
		if !ok {
			continue
		}
		data, _ := cm["data"].(map[string]any)
		keys := slices.Sorted(maps.Keys(data))
		for _, k := range keys {
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

// appendConfigMap appends to names the ConfigMap a volume (or a projected
// volume's source) names, if it names one.
func appendConfigMap(names []string, src map[string]any) []string {
	cm, _ := src["configMap"].(map[string]any)
	if n, _ := cm["name"].(string); n != "" {
		names = append(names, n)
	}
	return names
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
