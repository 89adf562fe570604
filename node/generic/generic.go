// Package generic converts between JSON and the Go values that
// dubbo-go-hessian2 encodes as Java types, for callers that have no Java
// interface classes: `dubbo call`, `dubbo bench` and the consumer's HTTP
// gateway.
//
// The three entry points:
//
//	args, err := generic.Args(types, raws)      // JSON arguments → hessian values (FromJSON per argument)
//	types := generic.InferTypes(raws)           // when neither metadata nor --types say what they are
//	out := generic.ToJSON(result.Value)         // decoded hessian value → what encoding/json renders
//
// Java type → Go value produced by FromJSON (and what hessian writes):
//
//	java.lang.String, char                          string
//	int, short, byte and their boxes                int32   (hessian int)
//	long, java.lang.Long                            int64   (hessian long)
//	double, float and their boxes                   float64 (hessian double)
//	boolean, java.lang.Boolean                      bool
//	java.util.Date                                  time.Time (RFC 3339 string or epoch milliseconds)
//	byte[]                                          []byte  (base64 string or array of numbers)
//	char[]                                          string  (as hessian-lite writes it)
//	int[] long[] short[] float[] double[] boolean[] []int32 []int64 []int16 []float32 []float64 []bool (typed lists "[int" …)
//	String[]                                        []string ("[string")
//	other arrays T[]                                []hessian.Object ("[object"), elements as T
//	java.util.Map and its implementations           map[any]any (untyped map H), values per the type argument
//	java.util.List, Collection, Set and theirs      []any (untyped list), elements per the type argument
//	java.lang.Object                                the natural mapping below
//	any other class (a POJO)                        map[any]any with a "class" key, or a string for an enum constant
//
// The natural mapping (java.lang.Object, untyped map values and list
// elements) follows what Java Dubbo's JSON tools (fastjson in telnet
// `invoke`) produce, so a provider's Map<String,Object> sees the same boxes
// a Java caller would send: an integer literal that fits in 32 bits is an
// Integer (int32), a larger one a Long (int64), anything with a fraction or
// exponent a Double (float64); objects are maps, arrays are lists.
//
// POJOs travel in the generic-call map form of PROTOCOLS.md B.8: an untyped
// map of bean properties with the extra key "class". Map[any]any is used
// rather than map[string]any because dubbo-go-hessian2 would turn a string
// map carrying the key "_class" into a typed object. A Java provider fills
// a declared POJO parameter from such a map even in a plain call, but only
// a generic invocation ($invoke with the generic=true attachment) makes
// Dubbo's GenericFilter realize nested POJOs (inside lists, maps or Object
// slots) into their classes, so callers should use $invoke for POJO
// arguments.
package generic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// ArgError says which argument, and where inside it, did not fit its Java
// type. It matches rpc.ErrBadRequest with errors.Is.
type ArgError struct {
	// Index is the 1-based argument number; 0 when FromJSON was called alone.
	Index int
	// Path locates the offending value inside the argument (".name", "[2]").
	Path string
	// Msg says what was wanted and what was found.
	Msg string
}

func (e *ArgError) Error() string {
	var b strings.Builder
	if e.Index > 0 {
		fmt.Fprintf(&b, "argument %d: ", e.Index)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, "at %s: ", e.Path)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap makes every conversion failure a bad request.
func (e *ArgError) Unwrap() error { return rpc.ErrBadRequest }

// Args converts the JSON arguments of one call to the types given, with
// errors naming the argument ("argument 2: want int, got \"abc\"").
func Args(types []string, raws []json.RawMessage) ([]any, error) {
	if len(types) != len(raws) {
		return nil, fmt.Errorf("%w: %d argument types (%s) for %d arguments",
			rpc.ErrBadRequest, len(types), strings.Join(types, ","), len(raws))
	}
	out := make([]any, len(raws))
	for i, raw := range raws {
		v, err := FromJSON(types[i], raw)
		if err != nil {
			var ae *ArgError
			if errors.As(err, &ae) {
				ae.Index = i + 1
			}
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// typeName is a parsed Java type name: the raw class or primitive name,
// its generic type arguments and the number of array dimensions.
type typeName struct {
	name string
	args []string
	dims int
}

// parseType accepts the spellings users and metadata produce:
// "java.lang.String", "int[]", "[I", "[Ljava.lang.String;",
// "java.util.List<com.example.User>", "String..." (varargs).
func parseType(s string) (typeName, error) {
	s = strings.TrimSpace(s)
	var t typeName
	if strings.HasPrefix(s, "[") { // JVM form from Class.getName
		for strings.HasPrefix(s, "[") {
			t.dims++
			s = s[1:]
		}
		switch {
		case len(s) > 2 && s[0] == 'L' && s[len(s)-1] == ';':
			s = s[1 : len(s)-1]
		case len(s) == 1 && jvmPrimitives[s[0]] != "":
			s = jvmPrimitives[s[0]]
		default:
			return t, fmt.Errorf("bad JVM array type %q", s)
		}
	}
	if strings.HasSuffix(s, "...") {
		t.dims++
		s = strings.TrimSpace(s[:len(s)-3])
	}
	for strings.HasSuffix(s, "[]") {
		t.dims++
		s = strings.TrimSpace(s[:len(s)-2])
	}
	if i := strings.IndexByte(s, '<'); i >= 0 {
		if !strings.HasSuffix(s, ">") {
			return t, fmt.Errorf("unbalanced type arguments in %q", s)
		}
		args, err := splitTypeArgs(s[i+1 : len(s)-1])
		if err != nil {
			return t, fmt.Errorf("%q: %w", s, err)
		}
		t.args = args
		s = strings.TrimSpace(s[:i])
	}
	if s == "" || strings.ContainsAny(s, "<>[],; ") {
		return t, fmt.Errorf("bad Java type name %q", s)
	}
	t.name = s
	return t, nil
}

// JavaType is a Java type name taken apart, for code that maps Java types
// to its own (dubbo new handler): the class or primitive without its type
// arguments, the arguments as written, and the array dimensions.
type JavaType struct {
	Name string
	Args []string
	Dims int
}

// ParseType takes a Java type name apart, in any spelling parameter types
// are given or published in: see parseType.
func ParseType(s string) (JavaType, error) {
	t, err := parseType(s)
	return JavaType{Name: t.name, Args: t.args, Dims: t.dims}, err
}

// IsList says whether values of the Java class travel as lists: List,
// Collection, Set and their implementations.
func IsList(class string) bool { return conversions[class] == convList }

// IsMap says whether values of the Java class travel as maps: Map and its
// implementations.
func IsMap(class string) bool { return conversions[class] == convMap }

var jvmPrimitives = map[byte]string{
	'Z': "boolean", 'B': "byte", 'C': "char", 'D': "double",
	'F': "float", 'I': "int", 'J': "long", 'S': "short",
}

// splitTypeArgs splits "K, java.util.List<V>" at top-level commas.
func splitTypeArgs(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			depth++
		case '>':
			depth--
			if depth < 0 {
				return nil, errors.New("unbalanced type arguments")
			}
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced type arguments")
	}
	out = append(out, strings.TrimSpace(s[start:]))
	return out, nil
}

// elem is the type of one element of an array type.
func (t typeName) elem() typeName {
	e := t
	e.dims--
	return e
}

// typeArg returns the i-th generic argument, or "" (natural mapping).
func (t typeName) typeArg(i int) string {
	if i < len(t.args) {
		a := t.args[i]
		// Wildcards carry no usable bound for conversion.
		if a == "?" || strings.HasPrefix(a, "? ") {
			if rest, ok := strings.CutPrefix(a, "? extends "); ok {
				return strings.TrimSpace(rest)
			}
			return ""
		}
		return a
	}
	return ""
}

func (t typeName) String() string {
	s := t.name
	if len(t.args) > 0 {
		s += "<" + strings.Join(t.args, ",") + ">"
	}
	return s + strings.Repeat("[]", t.dims)
}

// conversion is what a Java class name selects: how a JSON value
// becomes a value of that class.
type conversion int

const (
	convPOJO conversion = iota
	convString
	convChar
	convInt
	convShort
	convByte
	convLong
	convDouble
	convFloat
	convBool
	convObject
	convDate
	convMap
	convList
)

// conversions lists every class with a fixed conversion; all others are
// POJOs. Boxes and primitives share one; primitives are marked in primitive.
var conversions = map[string]conversion{
	"java.lang.String": convString, "String": convString, "java.lang.CharSequence": convString,
	"char": convChar, "java.lang.Character": convChar, "Character": convChar,
	"int": convInt, "java.lang.Integer": convInt, "Integer": convInt,
	"short": convShort, "java.lang.Short": convShort, "Short": convShort,
	"byte": convByte, "java.lang.Byte": convByte, "Byte": convByte,
	"long": convLong, "java.lang.Long": convLong, "Long": convLong,
	"double": convDouble, "java.lang.Double": convDouble, "Double": convDouble,
	"float": convFloat, "java.lang.Float": convFloat, "Float": convFloat,
	"boolean": convBool, "java.lang.Boolean": convBool, "Boolean": convBool,
	"java.lang.Object": convObject, "Object": convObject, "java.io.Serializable": convObject,
	"java.lang.Number": convObject,
	"java.util.Date":   convDate,
	"java.util.Map":    convMap, "Map": convMap, "java.util.HashMap": convMap, "HashMap": convMap,
	"java.util.LinkedHashMap": convMap, "java.util.TreeMap": convMap, "java.util.SortedMap": convMap,
	"java.util.concurrent.ConcurrentHashMap": convMap, "java.util.concurrent.ConcurrentMap": convMap,
	"java.util.Hashtable": convMap,
	"java.util.List":      convList, "List": convList, "java.util.ArrayList": convList, "ArrayList": convList,
	"java.util.LinkedList": convList, "java.util.Collection": convList, "java.util.Set": convList,
	"java.util.HashSet": convList, "java.util.LinkedHashSet": convList, "java.util.TreeSet": convList,
	"java.util.SortedSet": convList, "java.lang.Iterable": convList, "java.util.Queue": convList,
	"java.util.Deque": convList, "java.util.ArrayDeque": convList,
}

var primitive = map[string]bool{
	"boolean": true, "byte": true, "char": true, "short": true,
	"int": true, "long": true, "float": true, "double": true,
}

// javaName is the short name used in messages: "int", "String", "Map".
func javaName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 && strings.HasPrefix(name, "java.") {
		return name[i+1:]
	}
	return name
}

// ParseTypes splits a comma-separated list of Java types, as given to
// --types or ?types= ("java.lang.String,java.util.Map<String,int>"),
// at the commas outside type arguments, and checks each name.
// "" gives an empty, non-nil list (a method without parameters).
func ParseTypes(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return []string{}, nil
	}
	types, err := splitTypeArgs(list)
	if err != nil {
		return nil, fmt.Errorf("%w: types %q: %v", rpc.ErrBadRequest, list, err)
	}
	for _, t := range types {
		if _, err := parseType(t); err != nil {
			return nil, fmt.Errorf("%w: types %q: %v", rpc.ErrBadRequest, list, err)
		}
	}
	return types, nil
}
