package sdk

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	hessian "github.com/apache/dubbo-go-hessian2"
)

// convert turns a hessian-decoded argument into a value of type t. It
// accepts what a Java caller may legitimately send for the Java type of t:
// any integer that fits for an integer, a Map for a map or a POJO, a List or
// array for a slice, null for anything nillable.
func convert(v any, t reflect.Type) (reflect.Value, error) {
	if v == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			return reflect.Zero(t), nil
		}
		return reflect.Value{}, fmt.Errorf("null where %s is required", describeType(t))
	}
	rv := reflect.ValueOf(v)
	if rv.Type() == t {
		return rv, nil
	}
	if t.Kind() == reflect.Interface {
		if rv.Type().Implements(t) {
			return rv.Convert(t), nil
		}
		return reflect.Value{}, mismatch(rv, t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if rv.Kind() == reflect.Pointer && rv.IsNil() {
			return reflect.Zero(t), nil
		}
		e, err := convert(v, t.Elem())
		if err != nil {
			return reflect.Value{}, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		return p, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := toInt(rv)
		if !ok {
			return reflect.Value{}, mismatch(rv, t)
		}
		out := reflect.New(t).Elem()
		if out.OverflowInt(n) {
			return reflect.Value{}, fmt.Errorf("%d does not fit in %s", n, describeType(t))
		}
		out.SetInt(n)
		return out, nil
	case reflect.Float32, reflect.Float64:
		out := reflect.New(t).Elem()
		switch {
		case rv.CanFloat():
			out.SetFloat(rv.Float())
		case rv.CanInt():
			out.SetFloat(float64(rv.Int()))
		default:
			return reflect.Value{}, mismatch(rv, t)
		}
		return out, nil
	case reflect.String, reflect.Bool:
		if rv.Kind() != t.Kind() {
			return reflect.Value{}, mismatch(rv, t)
		}
		return rv.Convert(t), nil
	case reflect.Slice, reflect.Array:
		return convertList(rv, t)
	case reflect.Map:
		return convertMap(rv, t)
	case reflect.Struct:
		if rv.Kind() == reflect.Pointer && rv.Type().Elem() == t {
			return rv.Elem(), nil
		}
		if rv.Kind() == reflect.Map {
			return convertStruct(rv, t)
		}
	}
	return reflect.Value{}, mismatch(rv, t)
}

func toInt(rv reflect.Value) (int64, bool) {
	switch {
	case rv.CanInt():
		return rv.Int(), true
	case rv.CanUint() && rv.Uint() <= math.MaxInt64:
		return int64(rv.Uint()), true
	case rv.CanFloat():
		// Generic callers that went through JSON send numbers as doubles.
		f := rv.Float()
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return int64(f), true
		}
	}
	return 0, false
}

func convertList(rv reflect.Value, t reflect.Type) (reflect.Value, error) {
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return reflect.Value{}, mismatch(rv, t)
	}
	n := rv.Len()
	var out reflect.Value
	if t.Kind() == reflect.Array {
		if n != t.Len() {
			return reflect.Value{}, fmt.Errorf("%d elements where %s is required", n, describeType(t))
		}
		out = reflect.New(t).Elem()
	} else {
		out = reflect.MakeSlice(t, n, n)
	}
	for i := range n {
		e, err := convert(rv.Index(i).Interface(), t.Elem())
		if err != nil {
			return reflect.Value{}, fmt.Errorf("element %d: %w", i, err)
		}
		out.Index(i).Set(e)
	}
	return out, nil
}

func convertMap(rv reflect.Value, t reflect.Type) (reflect.Value, error) {
	if rv.Kind() != reflect.Map {
		return reflect.Value{}, mismatch(rv, t)
	}
	out := reflect.MakeMapWithSize(t, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		k, err := convert(it.Key().Interface(), t.Key())
		if err != nil {
			return reflect.Value{}, fmt.Errorf("key %v: %w", it.Key(), err)
		}
		e, err := convert(it.Value().Interface(), t.Elem())
		if err != nil {
			return reflect.Value{}, fmt.Errorf("value of %v: %w", it.Key(), err)
		}
		out.SetMapIndex(k, e)
	}
	return out, nil
}

// convertStruct fills a POJO from a Map, as Dubbo's generic calls send
// POJOs: keys are bean property names, "class" (generic) and "_class"
// (hessian) name the class and are skipped.
func convertStruct(rv reflect.Value, t reflect.Type) (reflect.Value, error) {
	out := reflect.New(t).Elem()
	it := rv.MapRange()
	for it.Next() {
		key, ok := it.Key().Interface().(string)
		if !ok {
			return reflect.Value{}, fmt.Errorf("map key %v is not a property name", it.Key())
		}
		if key == "class" || key == hessian.ClassKey {
			continue
		}
		f, ok := fieldFor(t, key)
		if !ok {
			continue // Java ignores properties the class lacks, so do we
		}
		e, err := convert(it.Value().Interface(), f.Type)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("property %s: %w", key, err)
		}
		out.FieldByIndex(f.Index).Set(e)
	}
	return out, nil
}

// fieldFor finds the field hessian would write under the property name.
func fieldFor(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if tag := f.Tag.Get("hessian"); tag != "" {
			if tag == name {
				return f, true
			}
			continue
		}
		if f.Name == name || lowerCamel(f.Name) == name || strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func mismatch(rv reflect.Value, t reflect.Type) error {
	return fmt.Errorf("got %s where %s is required", describeType(rv.Type()), describeType(t))
}

// describeType names a Go type by its Java type where there is one, so the
// caller's Java view and the handler's Go view both show.
func describeType(t reflect.Type) string {
	if j, err := javaType(t, map[reflect.Type]bool{}); err == nil {
		if j == t.String() {
			return j
		}
		return fmt.Sprintf("%s (Go %s)", j, t)
	}
	return "Go " + t.String()
}
