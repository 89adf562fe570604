package generic

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// InferTypes guesses Java parameter types from JSON arguments, for calls
// whose types neither registry metadata nor the user supplied. Strings are
// java.lang.String, true/false boolean, objects java.util.Map (or the class
// named by their "class" key), arrays java.util.List, null
// java.lang.Object. Integers are int when they fit in 32 bits, else long;
// other numbers double. Primitives rather than boxes because Java methods
// declare them far more often (the example service's add(int, int) and
// sleep(int) among them); a provider matches the method by these names, so
// when the guess is wrong the call fails with "method not found" and the
// user passes --types (or ?types=) instead.
func InferTypes(args []json.RawMessage) []string {
	out := make([]string, len(args))
	for i, raw := range args {
		out[i] = inferType(raw)
	}
	return out
}

func inferType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "java.lang.Object"
	}
	switch c := raw[0]; {
	case c == '"':
		return "java.lang.String"
	case c == 't' || c == 'f':
		return "boolean"
	case c == '[':
		return "java.util.List"
	case c == '{':
		var probe struct {
			Class any `json:"class"`
		}
		if json.Unmarshal(raw, &probe) == nil {
			if s, ok := probe.Class.(string); ok && s != "" {
				if _, err := parseType(s); err == nil {
					return s
				}
			}
		}
		return "java.util.Map"
	case c == '-' || c >= '0' && c <= '9':
		s := string(raw)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			if i >= math.MinInt32 && i <= math.MaxInt32 {
				return "int"
			}
			return "long"
		}
		return "double"
	}
	return "java.lang.Object"
}
