package protocol

import (
	"fmt"

	hessian "github.com/apache/dubbo-go-hessian2"
)

// Fields reads a decoded hessian object or map as string-keyed entries,
// without hessian's class key: the form Java objects the node does not
// model (a URL, a MetadataInfo) arrive in, as map[string]any with the class
// key, map[any]any or map[string]string. Entries whose key is not a string
// are left out. ok is false when v is none of these.
func Fields(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			if k != hessian.ClassKey {
				out[k] = x
			}
		}
		return out, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			if ks, ok := k.(string); ok && ks != hessian.ClassKey {
				out[ks] = x
			}
		}
		return out, true
	case map[string]string:
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[k] = x
		}
		return out, true
	}
	return nil, false
}

// Attachments reads a decoded hessian value as a call's attachments: a map
// whose keys are strings, or nil for none.
func Attachments(v any) (map[string]any, error) {
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("an attachment key is a %T, want a string", k)
			}
			out[ks] = v
		}
		return out, nil
	case map[string]any:
		return m, nil
	}
	return nil, fmt.Errorf("attachments: want a map, got %T", v)
}
