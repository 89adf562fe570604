package generic

import (
	"fmt"
	"reflect"

	hessian "github.com/apache/dubbo-go-hessian2"
)

// Unpack reads the arguments of $invoke(String method, String[] types,
// Object[] args) as they arrive decoded from Java, dubbo-go or our own
// Invocation: the lists may be []any or typed slices. types may be empty
// when the caller sent none.
func Unpack(args []any) (method string, types []string, values []any, err error) {
	if len(args) != 3 {
		return "", nil, nil, fmt.Errorf("$invoke takes (method, types, args), got %d arguments", len(args))
	}
	method, ok := args[0].(string)
	if !ok || method == "" {
		return "", nil, nil, fmt.Errorf("$invoke: the method name is %T, want a string", args[0])
	}
	if types, err = stringList(args[1]); err != nil {
		return "", nil, nil, fmt.Errorf("$invoke %s: parameter types: %w", method, err)
	}
	if values, err = anyList(args[2]); err != nil {
		return "", nil, nil, fmt.Errorf("$invoke %s: arguments: %w", method, err)
	}
	if len(types) != len(values) && len(types) != 0 {
		return "", nil, nil, fmt.Errorf("$invoke %s: %d parameter types for %d arguments", method, len(types), len(values))
	}
	return method, types, values, nil
}

// Generalize turns a result into what a generic caller gets, as Java's
// PojoUtils.generalize: POJOs that hessian left as maps keyed "_class"
// become maps keyed "class" (B.8), recursively.
func Generalize(v any) any { return Walk(v, generalizeMap) }

func generalizeMap(m any) any {
	if sm, ok := m.(map[string]any); ok {
		if c, ok := sm[hessian.ClassKey]; ok {
			delete(sm, hessian.ClassKey)
			sm[ClassKey] = c
		}
	}
	return m
}

// stringList reads a String[]: []string, or []any of strings.
func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case []string:
		return t, nil
	case []any:
		out := make([]string, len(t))
		for i, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, want a string", i, x)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a String[]", v)
}

// anyList reads an Object[], whatever typed slice the decoder made of it.
func anyList(v any) ([]any, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return t, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("%T is not an Object[]", v)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}
