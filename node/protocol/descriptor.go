package protocol

import (
	"fmt"
	"strings"
)

// Method names and descriptors of Dubbo's built-in calls (B.8).
const (
	MethodInvoke      = "$invoke"
	MethodInvokeAsync = "$invokeAsync"
	MethodEcho        = "$echo"
	// GenericDescriptor is $invoke(String method, String[] types, Object[] args).
	GenericDescriptor = "Ljava/lang/String;[Ljava/lang/String;[Ljava/lang/Object;"
	// EchoDescriptor is $echo(Object).
	EchoDescriptor = "Ljava/lang/Object;"
)

// GenericParamTypes is $invoke's own signature (GenericDescriptor) as Java
// type names; a new slice each time, for an Invocation to own.
func GenericParamTypes() []string {
	return []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"}
}

var primitiveNames = map[byte]string{
	'Z': "boolean", 'B': "byte", 'C': "char", 'D': "double",
	'F': "float", 'I': "int", 'J': "long", 'S': "short", 'V': "void",
}

var primitiveCodes = map[string]byte{
	"boolean": 'Z', "byte": 'B', "char": 'C', "double": 'D',
	"float": 'F', "int": 'I', "long": 'J', "short": 'S', "void": 'V',
}

// commonDescriptors are the descriptors of frequent single parameters.
var commonDescriptors = map[string]string{
	"boolean": "Z", "byte": "B", "char": "C", "double": "D",
	"float": "F", "int": "I", "long": "J", "short": "S",
	"java.lang.String": "Ljava/lang/String;", "java.lang.Object": "Ljava/lang/Object;",
	"java.lang.Integer": "Ljava/lang/Integer;", "java.lang.Long": "Ljava/lang/Long;",
	"java.util.Map": "Ljava/util/Map;", "java.util.List": "Ljava/util/List;",
}

// ParseDescriptor splits a JVM parameter descriptor into Java type names as
// Dubbo's generic calls spell them: "Ljava/lang/String;I[Ljava/lang/Object;"
// gives ["java.lang.String", "int", "java.lang.Object[]"]. "" gives none.
func ParseDescriptor(desc string) ([]string, error) {
	var out []string
	for i := 0; i < len(desc); {
		name, n, err := parseOne(desc, i)
		if err != nil {
			return nil, err
		}
		out = append(out, name)
		i += n
	}
	return out, nil
}

// CountArgs returns the number of parameters in a descriptor without
// building their names.
func CountArgs(desc string) (int, error) {
	count := 0
	for i := 0; i < len(desc); count++ {
		n, err := descLen(desc, i)
		if err != nil {
			return 0, err
		}
		i += n
	}
	return count, nil
}

// descLen is the length of the descriptor entry starting at i.
func descLen(desc string, i int) (int, error) {
	start := i
	for i < len(desc) && desc[i] == '[' {
		i++
	}
	if i == len(desc) {
		return 0, fmt.Errorf("%w: descriptor %q: array without element type", ErrMalformedBody, desc)
	}
	c := desc[i]
	if _, ok := primitiveNames[c]; ok {
		return i + 1 - start, nil
	}
	if c != 'L' {
		return 0, fmt.Errorf("%w: descriptor %q: unexpected %q at %d", ErrMalformedBody, desc, c, i)
	}
	end := strings.IndexByte(desc[i:], ';')
	if end <= 1 {
		return 0, fmt.Errorf("%w: descriptor %q: bad class at %d", ErrMalformedBody, desc, i)
	}
	return i + end + 1 - start, nil
}

func parseOne(desc string, i int) (string, int, error) {
	n, err := descLen(desc, i)
	if err != nil {
		return "", 0, err
	}
	entry := desc[i : i+n]
	dims := strings.LastIndexByte(entry, '[') + 1
	elem := entry[dims:]
	var name string
	if elem[0] == 'L' {
		name = strings.ReplaceAll(elem[1:len(elem)-1], "/", ".")
	} else {
		name = primitiveNames[elem[0]]
	}
	return name + strings.Repeat("[]", dims), n, nil
}

// Descriptor is the inverse of ParseDescriptor. Array types may be written
// "java.lang.String[]" or in JVM form "[Ljava.lang.String;" (Class.getName),
// as Dubbo accepts both in generic calls.
func Descriptor(types []string) (string, error) {
	if len(types) == 1 { // the common case, without building a string
		if d, ok := commonDescriptors[types[0]]; ok {
			return d, nil
		}
	}
	var b strings.Builder
	for _, t := range types {
		t = strings.TrimSpace(t)
		if strings.HasPrefix(t, "[") {
			jvm := strings.ReplaceAll(t, ".", "/")
			if n, err := descLen(jvm, 0); err != nil || n != len(jvm) {
				return "", fmt.Errorf("bad JVM array type %q", t)
			}
			b.WriteString(jvm)
			continue
		}
		dims := 0
		for strings.HasSuffix(t, "[]") {
			dims++
			t = t[:len(t)-2]
		}
		if t == "" || strings.ContainsAny(t, "[];/ ") {
			return "", fmt.Errorf("bad Java type name %q", t)
		}
		b.WriteString(strings.Repeat("[", dims))
		if c, ok := primitiveCodes[t]; ok {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('L')
		b.WriteString(strings.ReplaceAll(t, ".", "/"))
		b.WriteByte(';')
	}
	return b.String(), nil
}
