package config

// deepMerge returns over merged onto base: mappings merge recursively,
// lists and scalars in over replace those in base. The result shares
// nothing with its inputs, which are never changed.
func deepMerge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = deepCopy(v)
	}
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = deepMerge(bm, om)
		} else {
			out[k] = deepCopy(v)
		}
	}
	return out
}

// deepCopy copies the mappings and lists of a generic value.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

// copyMap deep-copies m, keeping nil as nil.
func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return deepCopy(m).(map[string]any)
}
