package provider

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dubbo-lab/dubbo/node/generic"
)

// Values arrive as dubbo-go-hessian2 decodes them (int32 for Java int,
// int64 for long, map[any]any for maps, map[string]any with "_class" for
// objects of unknown classes) and generic calls may send any number type
// for any numeric parameter. toJava converts an argument to what a Go
// service expects for the declared Java type, as Java's PojoUtils.realize
// does for generic calls; returnValue converts a Go return value to what
// the Java caller declared (a Go int for "int" must go out as a hessian
// int, not a long).

// toJava converts v to the Go value of javaType.
func toJava(v any, javaType string) (any, error) {
	if v == nil {
		return zeroOf(javaType), nil
	}
	switch javaType {
	case "int", "java.lang.Integer":
		n, err := toInt(v, math.MinInt32, math.MaxInt32)
		return int32(n), err
	case "long", "java.lang.Long":
		n, err := toInt(v, math.MinInt64, math.MaxInt64)
		return n, err
	case "short", "java.lang.Short":
		n, err := toInt(v, math.MinInt16, math.MaxInt16)
		return int16(n), err
	case "byte", "java.lang.Byte":
		n, err := toInt(v, math.MinInt8, math.MaxInt8)
		return int8(n), err
	case "double", "java.lang.Double":
		return toFloat(v)
	case "float", "java.lang.Float":
		f, err := toFloat(v)
		return float32(f), err
	case "boolean", "java.lang.Boolean":
		switch b := v.(type) {
		case bool:
			return b, nil
		case string:
			return strconv.ParseBool(b)
		}
		return nil, fmt.Errorf("%T is not a %s", v, javaType)
	case "java.lang.String":
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		}
		return nil, fmt.Errorf("%T is not a %s", v, javaType)
	}
	return plain(v), nil
}

// zeroOf is what Java passes for a null argument: the zero of a primitive,
// else null.
func zeroOf(javaType string) any {
	switch javaType {
	case "int":
		return int32(0)
	case "long":
		return int64(0)
	case "short":
		return int16(0)
	case "byte":
		return int8(0)
	case "double":
		return float64(0)
	case "float":
		return float32(0)
	case "boolean":
		return false
	}
	return nil
}

// plain turns decoded maps whose keys are all strings into map[string]any
// (recursively), which is what Go services and JSON expect; generic POJOs
// keep their "class" key.
func plain(v any) any { return generic.Walk(v, stringKeys) }

// stringKeys makes a map[any]any whose keys are all strings a
// map[string]any.
func stringKeys(m any) any {
	am, ok := m.(map[any]any)
	if !ok {
		return m
	}
	sm := make(map[string]any, len(am))
	for k, x := range am {
		s, ok := k.(string)
		if !ok {
			return am
		}
		sm[s] = x
	}
	return sm
}

// returnValue converts a service's return value to its declared Java type,
// keeping it unchanged when it does not convert.
func returnValue(v any, javaType string) any {
	switch javaType {
	case "void":
		return nil
	case "", "java.lang.Object", "java.lang.String":
		return v
	}
	if c, err := toJava(v, javaType); err == nil {
		return c
	}
	return v
}

func toInt(v any, lo, hi int64) (int64, error) {
	var n int64
	switch t := v.(type) {
	case int:
		n = int64(t)
	case int8:
		n = int64(t)
	case int16:
		n = int64(t)
	case int32:
		n = int64(t)
	case int64:
		n = t
	case uint8:
		n = int64(t)
	case uint16:
		n = int64(t)
	case uint32:
		n = int64(t)
	case uint64:
		if t > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range", t)
		}
		n = int64(t)
	case float32:
		return toInt(float64(t), lo, hi)
	case float64:
		if t != math.Trunc(t) || t < float64(lo) || t > float64(hi) {
			return 0, fmt.Errorf("%v is not an integer in range", t)
		}
		n = int64(t)
	case string:
		var err error
		if n, err = strconv.ParseInt(t, 10, 64); err != nil {
			return 0, fmt.Errorf("%q is not an integer", t)
		}
	default:
		return 0, fmt.Errorf("%T is not a number", v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range", n)
	}
	return n, nil
}

func toFloat(v any) (float64, error) {
	switch t := v.(type) {
	case float64:
		return t, nil
	case float32:
		return float64(t), nil
	case string:
		return strconv.ParseFloat(t, 64)
	}
	n, err := toInt(v, math.MinInt64, math.MaxInt64)
	return float64(n), err
}
