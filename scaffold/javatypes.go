package scaffold

import (
	"sort"
	"strings"

	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// goType is the Go type a handler uses for a Java type.
type goType struct {
	Expr string // the Go type: int32, *Order, map[string]any
	// Exact says the SDK derives the Java type itself from Expr (see
	// plugins/sdk's package documentation); when not, the method's
	// signature is given to the SDK (Service.Signatures).
	Exact bool
	// Unmapped names the Java type when Expr is any in its place.
	Unmapped string
}

// scalar is the Go type of each Java type with a fixed one. Exact is
// false where the SDK derives another Java type from it: char is a Java
// String to the SDK, its box a java.lang.String.
var scalars = map[string]goType{
	"java.lang.String": {Expr: "string", Exact: true},
	"boolean":          {Expr: "bool", Exact: true}, "java.lang.Boolean": {Expr: "*bool", Exact: true},
	"byte": {Expr: "int8", Exact: true}, "java.lang.Byte": {Expr: "*int8", Exact: true},
	"short": {Expr: "int16", Exact: true}, "java.lang.Short": {Expr: "*int16", Exact: true},
	"int": {Expr: "int32", Exact: true}, "java.lang.Integer": {Expr: "*int32", Exact: true},
	"long": {Expr: "int64", Exact: true}, "java.lang.Long": {Expr: "*int64", Exact: true},
	"float": {Expr: "float32", Exact: true}, "java.lang.Float": {Expr: "*float32", Exact: true},
	"double": {Expr: "float64", Exact: true}, "java.lang.Double": {Expr: "*float64", Exact: true},
	"char": {Expr: "string"}, "java.lang.Character": {Expr: "*string"},
	"java.util.Date":   {Expr: "time.Time", Exact: true},
	"java.lang.Object": {Expr: "any", Exact: true},
	"byte[]":           {Expr: "[]byte", Exact: true},
}

// mapKeys are the Go types a map's key may have: a box is its primitive.
var mapKeys = map[string]string{
	"*bool": "bool", "*int8": "int8", "*int16": "int16", "*int32": "int32", "*int64": "int64",
	"*float32": "float32", "*float64": "float64", "*string": "string",
}

// javaTypes maps the Java types of one service to Go, and collects the
// POJOs it meets as Go structs.
type javaTypes struct {
	defs  map[string]metadata.TypeDefinition // the service definition's types, by erased name
	pojos map[string]*pojo                   // by Java class
	names map[string]bool                    // Go type names taken
}

// pojo is the Go struct of a Java class.
type pojo struct {
	Java, Go string
	Fields   []field
	Note     string // why its fields are not known
}

type field struct {
	Java, Go string
	Type     string
	Comment  string
}

func newJavaTypes(def *metadata.ServiceDefinition, taken ...string) *javaTypes {
	jt := &javaTypes{defs: map[string]metadata.TypeDefinition{}, pojos: map[string]*pojo{}, names: map[string]bool{}}
	for _, n := range taken {
		jt.names[n] = true
	}
	if def != nil {
		for _, t := range def.Types {
			jt.defs[erase(t.Type)] = t
		}
	}
	return jt
}

// erase is a Java type without its type arguments, as a call's parameter
// types name it: java.util.List<Item> → java.util.List, [I → int[].
func erase(java string) string {
	t, err := generic.ParseType(java)
	if err != nil {
		return java
	}
	return t.Name + strings.Repeat("[]", t.Dims)
}

// goType maps a Java type; a POJO it meets gets its struct.
func (jt *javaTypes) goType(java string) goType {
	t, err := generic.ParseType(java)
	if err != nil {
		return goType{Expr: "any", Unmapped: java}
	}
	if t.Dims > 0 {
		if t.Name == "byte" && t.Dims == 1 {
			return scalars["byte[]"]
		}
		elem := t.Name
		if len(t.Args) > 0 {
			elem += "<" + strings.Join(t.Args, ",") + ">"
		}
		return goType{Expr: "[]" + jt.goType(elem+strings.Repeat("[]", t.Dims-1)).Expr}
	}
	if s, ok := scalars[t.Name]; ok {
		return s
	}
	switch {
	case generic.IsList(t.Name):
		return goType{Expr: "[]" + jt.typeArg(t, 0, "any").Expr, Exact: t.Name == "java.util.List"}
	case generic.IsMap(t.Name):
		k := jt.typeArg(t, 0, "string").Expr
		if prim, ok := mapKeys[k]; ok {
			k = prim
		} else if !comparableKey(k) {
			k = "any"
		}
		return goType{Expr: "map[" + k + "]" + jt.typeArg(t, 1, "any").Expr, Exact: t.Name == "java.util.Map"}
	case jt.defs[t.Name].Enums != nil:
		return goType{Expr: "any", Unmapped: t.Name + " (an enum: " + strings.Join(jt.defs[t.Name].Enums, ", ") + ")"}
	case strings.HasPrefix(t.Name, "java.") || strings.HasPrefix(t.Name, "javax.") || !strings.Contains(t.Name, "."):
		// A class of the JDK the SDK has no Go type for (BigDecimal,
		// LocalDate...), or a type variable.
		return goType{Expr: "any", Unmapped: t.Name}
	}
	return goType{Expr: "*" + jt.pojo(t.Name).Go, Exact: true}
}

// typeArg is the Go type of t's i-th type argument, or def without one.
func (jt *javaTypes) typeArg(t generic.JavaType, i int, def string) goType {
	if i >= len(t.Args) {
		return goType{Expr: def}
	}
	a := t.Args[i]
	if a == "?" {
		return goType{Expr: "any"}
	}
	a = strings.TrimPrefix(a, "? extends ")
	return jt.goType(a)
}

// comparableKey says whether a Go type can key a map of decoded values.
func comparableKey(expr string) bool {
	switch expr {
	case "string", "bool", "int8", "int16", "int32", "int64", "float32", "float64", "any":
		return true
	}
	return false
}

// pojo is the struct of a Java class, made on first use; its fields come
// from the service definition's types.
func (jt *javaTypes) pojo(class string) *pojo {
	if p := jt.pojos[class]; p != nil {
		return p
	}
	p := &pojo{Java: class, Go: jt.name(class)}
	jt.pojos[class] = p
	def, ok := jt.defs[class]
	if !ok || len(def.Properties) == 0 {
		p.Note = "The registry's service definition lists no fields of it: add them, named as the Java fields (`hessian:\"name\"`)."
		return p
	}
	props := make([]string, 0, len(def.Properties))
	for name := range def.Properties {
		props = append(props, name)
	}
	sort.Strings(props)
	taken := map[string]bool{}
	for _, name := range props {
		ft := jt.goType(def.Properties[name])
		goName := exported(identifier(name))
		for taken[goName] {
			goName += "_"
		}
		taken[goName] = true
		f := field{Java: name, Go: goName, Type: ft.Expr}
		if ft.Unmapped != "" {
			f.Comment = ft.Unmapped + ": no Go type for it"
		}
		p.Fields = append(p.Fields, f)
	}
	return p
}

// name is a Go type name for a Java class, not taken yet: its simple name,
// else the package's last element before it.
func (jt *javaTypes) name(class string) string {
	parts := strings.Split(class, ".")
	name := exported(identifier(parts[len(parts)-1]))
	if jt.names[name] && len(parts) > 1 {
		name = exported(identifier(parts[len(parts)-2])) + name
	}
	for jt.names[name] {
		name += "_"
	}
	jt.names[name] = true
	return name
}

// identifier makes a Java name a Go identifier: Outer$Inner → OuterInner.
func identifier(s string) string {
	var b strings.Builder
	upper := false
	for _, r := range s {
		switch {
		case r == '$' || r == '_' && b.Len() == 0:
			upper = true
		case upper:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// structs are the POJOs met, in the order of their Go names.
func (jt *javaTypes) structs() []*pojo {
	out := make([]*pojo, 0, len(jt.pojos))
	for _, p := range jt.pojos {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Go < out[j].Go })
	return out
}
