package generic

// Walk copies v's lists ([]any) and maps (map[string]any, map[any]any) as
// hessian decodes them, recursively and bottom-up, and hands each copied
// map to fix, which returns what stands in its place: the same map changed
// (it is Walk's own copy), or another value. Other values are returned as
// they are. Generalize and the provider's argument conversion are walks.
func Walk(v any, fix func(m any) any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = Walk(x, fix)
		}
		return fix(m)
	case map[any]any:
		m := make(map[any]any, len(t))
		for k, x := range t {
			m[k] = Walk(x, fix)
		}
		return fix(m)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = Walk(x, fix)
		}
		return out
	}
	return v
}
