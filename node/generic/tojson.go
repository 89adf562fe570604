package generic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode"

	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"
)

// maxDepth bounds ToJSON on pathological values; real results are shallow.
const maxDepth = 64

// ToJSON converts a value decoded by dubbo-go-hessian2 into plain data that
// encoding/json renders: maps get string keys, typed slices become arrays,
// []byte becomes base64, time.Time RFC 3339, NaN and infinities strings
// ("NaN", "Infinity", "-Infinity"). Objects of classes the hessian library
// does not know (decoded as maps with its "_class" key) and registered Go
// POJOs become JSON objects of their fields plus "class"; Java exceptions
// become {"class", "message"} and, when they have a distinct cause,
// "cause". References back to a value that is still being rendered (an
// exception whose cause is itself) become null, so the output is a tree.
func ToJSON(v any) any {
	c := toJSON{seen: map[uintptr]bool{}}
	return c.value(reflect.ValueOf(v), 0)
}

type toJSON struct {
	// seen holds the maps, slices and pointers on the current path.
	seen map[uintptr]bool
}

var (
	timeType      = reflect.TypeOf(time.Time{})
	throwableType = reflect.TypeOf((*java_exception.Throwabler)(nil)).Elem()
	pojoType      = reflect.TypeOf((*hessian.POJO)(nil)).Elem()
	stringerType  = reflect.TypeOf((*fmt.Stringer)(nil)).Elem()
	runeType      = reflect.TypeOf(hessian.Rune(0))
)

// enter marks a reference value as being rendered; false means it already
// is (a cycle).
func (c *toJSON) enter(rv reflect.Value) bool {
	p := rv.Pointer()
	if p == 0 {
		return true
	}
	if c.seen[p] {
		return false
	}
	c.seen[p] = true
	return true
}

func (c *toJSON) leave(rv reflect.Value) { delete(c.seen, rv.Pointer()) }

func (c *toJSON) value(rv reflect.Value, depth int) any {
	if !rv.IsValid() || depth > maxDepth {
		return nil
	}
	if rv.Type() == timeType {
		return rv.Interface().(time.Time).Format(time.RFC3339Nano)
	}
	if rv.CanInterface() && rv.Kind() == reflect.Pointer && !rv.IsNil() {
		if out, ok := c.special(rv, depth); ok {
			return out
		}
	}
	switch rv.Kind() {
	case reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return c.value(rv.Elem(), depth)
	case reflect.Pointer:
		if rv.IsNil() || !c.enter(rv) {
			return nil
		}
		defer c.leave(rv)
		return c.value(rv.Elem(), depth+1)
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rv.Type() == runeType {
			return string(rune(rv.Int()))
		}
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return float(rv.Float())
	case reflect.String:
		return rv.String()
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(rv.Bytes())
		}
		if !c.enter(rv) {
			return nil
		}
		defer c.leave(rv)
		return c.list(rv, depth)
	case reflect.Array:
		return c.list(rv, depth)
	case reflect.Map:
		if rv.IsNil() || !c.enter(rv) {
			return nil
		}
		defer c.leave(rv)
		return c.object(rv, depth)
	case reflect.Struct:
		return c.structFields(rv, depth)
	}
	return fmt.Sprint(rv.Interface()) // chan, func: not produced by the decoder
}

// special handles pointer types with a better rendering than their fields.
func (c *toJSON) special(rv reflect.Value, depth int) (any, bool) {
	t := rv.Type()
	if t.Implements(throwableType) {
		if !c.enter(rv) {
			return nil, true
		}
		defer c.leave(rv)
		th := rv.Interface().(java_exception.Throwabler)
		out := map[string]any{ClassKey: th.JavaClassName(), "message": detailMessage(rv)}
		if cause := rv.Elem().FieldByName("Cause"); cause.IsValid() {
			if cv := c.value(cause, depth+1); cv != nil {
				out["cause"] = cv
			}
		}
		return out, true
	}
	// BigDecimal and BigInteger decode to Go numbers with a String method;
	// a string keeps every digit, which a JSON number would not.
	if t.Implements(pojoType) && t.Implements(stringerType) {
		switch rv.Interface().(hessian.POJO).JavaClassName() {
		case "java.math.BigDecimal", "java.math.BigInteger":
			return rv.Interface().(fmt.Stringer).String(), true
		}
	}
	return nil, false
}

// detailMessage reads the DetailMessage field every java_exception type
// has; their Error methods do not all return the bare message.
func detailMessage(rv reflect.Value) string {
	if f := rv.Elem().FieldByName("DetailMessage"); f.IsValid() && f.Kind() == reflect.String {
		return f.String()
	}
	return rv.Interface().(error).Error()
}

func float(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

func (c *toJSON) list(rv reflect.Value, depth int) any {
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = c.value(rv.Index(i), depth+1)
	}
	return out
}

// object converts a map; the hessian library's "_class" key (objects of
// unknown classes) becomes "class".
func (c *toJSON) object(rv reflect.Value, depth int) any {
	out := make(map[string]any, rv.Len())
	iter := rv.MapRange()
	for iter.Next() {
		k := c.key(iter.Key(), depth)
		if k == hessian.ClassKey && rv.Type().Key().Kind() == reflect.String {
			k = ClassKey
		}
		out[k] = c.value(iter.Value(), depth+1)
	}
	return out
}

// key renders a map key as a JSON object key: strings as they are,
// numbers and booleans in decimal, anything else as its JSON text.
func (c *toJSON) key(rv reflect.Value, depth int) string {
	switch k := c.value(rv, depth+1).(type) {
	case string:
		return k
	case int64:
		return strconv.FormatInt(k, 10)
	case uint64:
		return strconv.FormatUint(k, 10)
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(k)
	case nil:
		return "null"
	default:
		b, err := json.Marshal(k)
		if err != nil {
			return fmt.Sprint(k)
		}
		return string(b)
	}
}

// structFields renders a registered Go POJO by the field names hessian
// puts on the wire (its tag, else lowerCamelCase), plus "class".
func (c *toJSON) structFields(rv reflect.Value, depth int) any {
	t := rv.Type()
	out := make(map[string]any, t.NumField()+1)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("hessian")
		if name == "-" {
			continue
		}
		if name == "" {
			name = lowerFirst(f.Name)
		}
		out[name] = c.value(rv.Field(i), depth+1)
	}
	if p, ok := pojoOf(rv); ok {
		out[ClassKey] = p.JavaClassName()
	}
	return out
}

// pojoOf finds the POJO interface on the struct or on a pointer to it.
func pojoOf(rv reflect.Value) (hessian.POJO, bool) {
	if rv.CanInterface() {
		if p, ok := rv.Interface().(hessian.POJO); ok {
			return p, true
		}
	}
	ptr := reflect.New(rv.Type())
	ptr.Elem().Set(rv)
	p, ok := ptr.Interface().(hessian.POJO)
	return p, ok
}

func lowerFirst(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}
