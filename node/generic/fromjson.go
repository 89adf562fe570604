package generic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	hessian "github.com/apache/dubbo-go-hessian2"
)

// ClassKey is the key that names a POJO's Java class in the generic map
// form (B.8), on the way in and in ToJSON's output.
const ClassKey = "class"

// FromJSON converts one JSON value to what dubbo-go-hessian2 encodes as
// javaType (see the package comment for the table). JSON null is a Java
// null except for primitives. Errors are *ArgError and match
// rpc.ErrBadRequest.
func FromJSON(javaType string, raw json.RawMessage) (any, error) {
	t, err := parseType(javaType)
	if err != nil {
		return nil, &ArgError{Msg: err.Error()}
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, &ArgError{Msg: fmt.Sprintf("malformed JSON for %s: %v", javaName(t.String()), err)}
	}
	return convert(t, v, "")
}

// decodeJSON decodes exactly one JSON value, keeping numbers as
// json.Number so that int and long keep every digit.
func decodeJSON(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty value (write null for a Java null)")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value (quote strings, e.g. \"world\")")
	}
	return v, nil
}

func want(path string, t typeName, v any, why string) error {
	msg := fmt.Sprintf("want %s, got %s", javaName(t.String()), snippet(v))
	if why != "" {
		msg += " (" + why + ")"
	}
	return &ArgError{Path: path, Msg: msg}
}

// snippet renders v as short JSON for error messages.
func snippet(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

func convert(t typeName, v any, path string) (any, error) {
	if t.dims > 0 {
		return convertArray(t, v, path)
	}
	k, known := conversions[t.name]
	if !known {
		k = convPOJO
	}
	if v == nil {
		if primitive[t.name] {
			return nil, want(path, t, v, "a primitive cannot be null")
		}
		return nil, nil
	}
	switch k {
	case convString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case convChar:
		if s, ok := v.(string); ok {
			if len(utf16.Encode([]rune(s))) != 1 {
				return nil, want(path, t, v, "a char is one UTF-16 unit")
			}
			return s, nil
		}
	case convInt, convShort, convByte, convLong:
		if n, ok := v.(json.Number); ok {
			return integer(t, k, n, path)
		}
	case convDouble, convFloat:
		if n, ok := v.(json.Number); ok {
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || k == convFloat && math.Abs(f) > math.MaxFloat32 {
				return nil, want(path, t, v, "out of range")
			}
			return f, nil
		}
	case convBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case convObject:
		return natural(v, path)
	case convDate:
		return date(t, v, path)
	case convMap:
		if m, ok := v.(map[string]any); ok {
			return convertMap(t, m, path)
		}
	case convList:
		if l, ok := v.([]any); ok {
			et, err := argType(t, 0, path)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(l))
			for i, e := range l {
				if out[i], err = convertOrNatural(et, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	case convPOJO:
		switch x := v.(type) {
		case map[string]any:
			return pojo(t, x, path)
		case string:
			// Generic calls carry enum constants as their names (B.8).
			return x, nil
		}
		return nil, want(path, t, v, "a JSON object of its properties")
	}
	return nil, want(path, t, v, "")
}

// argType parses the i-th type argument; ok false means "natural".
func argType(t typeName, i int, path string) (*typeName, error) {
	s := t.typeArg(i)
	if s == "" {
		return nil, nil
	}
	at, err := parseType(s)
	if err != nil {
		return nil, &ArgError{Path: path, Msg: err.Error()}
	}
	return &at, nil
}

func convertOrNatural(t *typeName, v any, path string) (any, error) {
	if t == nil {
		return natural(v, path)
	}
	return convert(*t, v, path)
}

var intRanges = map[conversion][2]int64{
	convByte:  {math.MinInt8, math.MaxInt8},
	convShort: {math.MinInt16, math.MaxInt16},
	convInt:   {math.MinInt32, math.MaxInt32},
	convLong:  {math.MinInt64, math.MaxInt64},
}

// integer accepts integral numbers in any JSON spelling (42, 4.2e1, 42.0)
// within the range of the Java type.
func integer(t typeName, k conversion, n json.Number, path string) (any, error) {
	r := intRanges[k]
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(n), 64)
		switch {
		case errors.Is(err, strconv.ErrRange) || ferr != nil:
			return nil, want(path, t, n, "out of range")
		case f != math.Trunc(f):
			return nil, want(path, t, n, "not an integer")
		case f < -(1<<63) || f >= 1<<63:
			return nil, want(path, t, n, "out of range")
		}
		i = int64(f)
	}
	if i < r[0] || i > r[1] {
		return nil, want(path, t, n, "out of range")
	}
	if k == convLong {
		return i, nil
	}
	return int32(i), nil
}

func date(t typeName, v any, path string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		ms, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return nil, want(path, t, v, "epoch milliseconds")
		}
		return time.UnixMilli(ms).UTC(), nil
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
			if tm, err := time.Parse(layout, x); err == nil {
				return tm, nil
			}
		}
	}
	return nil, want(path, t, v, "an RFC 3339 time or epoch milliseconds")
}

func convertMap(t typeName, m map[string]any, path string) (any, error) {
	kt, err := argType(t, 0, path)
	if err != nil {
		return nil, err
	}
	vt, err := argType(t, 1, path)
	if err != nil {
		return nil, err
	}
	out := make(map[any]any, len(m))
	// Sorted, so that the first error reported is always the same one.
	for _, key := range sortedKeys(m) {
		kpath := path + "." + key
		var k any = key
		if kt != nil && !keepsStringKey(*kt) {
			// JSON keys are strings; a Map<Integer,…> key is spelled "42".
			kv, err := decodeJSON([]byte(key))
			if err != nil {
				kv = key
			}
			if k, err = convert(*kt, kv, path+"{"+key+"}"); err != nil {
				return nil, err
			}
		}
		val, err := convertOrNatural(vt, m[key], kpath)
		if err != nil {
			return nil, err
		}
		out[k] = val
	}
	return out, nil
}

func keepsStringKey(t typeName) bool {
	k, known := conversions[t.name]
	return t.dims == 0 && known && (k == convString || k == convObject)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pojo builds the generic map form; an explicit "class" in the JSON wins,
// so callers can pass a subclass of the declared type.
func pojo(t typeName, m map[string]any, path string) (any, error) {
	out := make(map[any]any, len(m)+1)
	for _, key := range sortedKeys(m) {
		v, err := natural(m[key], path+"."+key)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	if c, ok := out[ClassKey]; !ok || c == nil {
		out[ClassKey] = t.name
	} else if _, ok := c.(string); !ok {
		return nil, &ArgError{Path: path + "." + ClassKey, Msg: fmt.Sprintf("want a class name string, got %s", snippet(m[ClassKey]))}
	}
	return out, nil
}

// natural converts a JSON value with no declared type (see package comment).
func natural(v any, path string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				if i >= math.MinInt32 && i <= math.MaxInt32 {
					return int32(i), nil
				}
				return i, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, &ArgError{Path: path, Msg: fmt.Sprintf("number %s is out of range for double", snippet(x))}
		}
		return f, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = natural(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[any]any, len(x))
		for _, key := range sortedKeys(x) {
			e, err := natural(x[key], path+"."+key)
			if err != nil {
				return nil, err
			}
			out[key] = e
		}
		return out, nil
	}
	return v, nil // string, bool, nil
}

// convertArray builds the slice type whose hessian list type Java reads as
// that array: primitives and String get typed lists ("[int", "[string"),
// anything else an Object[] ("[object") whose elements Java converts.
func convertArray(t typeName, v any, path string) (any, error) {
	et := t.elem()
	if v == nil {
		return nil, nil
	}
	if et.dims == 0 {
		switch et.name {
		case "byte":
			return byteArray(t, v, path)
		case "char":
			// hessian-lite writes char[] as a string.
			if s, ok := v.(string); ok {
				return s, nil
			}
			return nil, want(path, t, v, "a JSON string")
		}
	}
	l, ok := v.([]any)
	if !ok {
		return nil, want(path, t, v, "a JSON array")
	}
	elems := make([]any, len(l))
	for i, e := range l {
		var err error
		if elems[i], err = convert(et, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return nil, err
		}
	}
	if et.dims == 0 {
		switch et.name {
		case "int":
			return typed[int32](elems), nil
		case "short":
			out := make([]int16, len(elems))
			for i, e := range elems {
				out[i] = int16(e.(int32))
			}
			return out, nil
		case "long":
			return typed[int64](elems), nil
		case "double":
			return typed[float64](elems), nil
		case "float":
			out := make([]float32, len(elems))
			for i, e := range elems {
				out[i] = float32(e.(float64))
			}
			return out, nil
		case "boolean":
			return typed[bool](elems), nil
		case "java.lang.String", "String":
			if !slices.Contains(elems, nil) { // []string cannot hold a null
				return typed[string](elems), nil
			}
		}
	}
	out := make([]hessian.Object, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out, nil
}

func typed[T any](elems []any) []T {
	out := make([]T, len(elems))
	for i, e := range elems {
		out[i] = e.(T)
	}
	return out
}

// byteArray accepts base64 (how encoding/json writes []byte) or an array
// of numbers, signed as in Java or unsigned.
func byteArray(t typeName, v any, path string) (any, error) {
	switch x := v.(type) {
	case string:
		b, err := base64.StdEncoding.DecodeString(x)
		if err != nil {
			return nil, want(path, t, v, "base64: "+err.Error())
		}
		return b, nil
	case []any:
		out := make([]byte, len(x))
		for i, e := range x {
			n, ok := e.(json.Number)
			var iv int64
			var err error
			if ok {
				iv, err = strconv.ParseInt(string(n), 10, 64)
			}
			if !ok || err != nil || iv < math.MinInt8 || iv > math.MaxUint8 {
				return nil, want(fmt.Sprintf("%s[%d]", path, i), typeName{name: "byte"}, e, "-128…255")
			}
			out[i] = byte(iv)
		}
		return out, nil
	}
	return nil, want(path, t, v, "base64 string or array of numbers")
}
