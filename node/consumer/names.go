package consumer

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Limits of the names CheckService accepts. No Java service comes near
// them; they keep a name from costing more than a znode name should.
const (
	maxInterfaceLen = 255
	maxMethodLen    = 255
	maxSelectorLen  = 128 // version, group
)

// CheckService reports whether iface, version, group and method can name a
// Dubbo service and one of its methods: iface a qualified Java name
// (org.example.Greeter, org.example.Outer$Inner), method a Java identifier
// ($invoke included), version and group letters, digits and ". _ - * ,"
// (Dubbo's wildcard and group lists). Empty version, group and method pass.
// The error wraps rpc.ErrBadRequest.
func CheckService(iface, version, group, method string) error {
	bad := func(format string, args ...any) error {
		return &rpc.CallError{Kind: rpc.ErrBadRequest, Service: printable(iface), Method: printable(method),
			Detail: fmt.Sprintf(format, args...)}
	}
	if iface == "" {
		return bad("the interface is empty; name it as in Java, e.g. org.example.Greeter")
	}
	if len(iface) > maxInterfaceLen {
		return bad("the interface name is %d bytes long; at most %d", len(iface), maxInterfaceLen)
	}
	for _, part := range strings.Split(iface, ".") {
		if !javaIdentifier(part) {
			return bad("%q is not a Java interface name (dot-separated Java identifiers, e.g. org.example.Greeter)", printable(iface))
		}
	}
	if method != "" && (len(method) > maxMethodLen || !javaIdentifier(method)) {
		return bad("%q is not a Java method name", printable(method))
	}
	for _, sel := range []struct{ what, v string }{{"version", version}, {"group", group}} {
		if len(sel.v) > maxSelectorLen {
			return bad("the %s is %d bytes long; at most %d", sel.what, len(sel.v), maxSelectorLen)
		}
		if i := strings.IndexFunc(sel.v, func(r rune) bool {
			return r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-*,", r))
		}); i >= 0 {
			return bad("%s %q: only letters, digits and . _ - * , may appear", sel.what, printable(sel.v))
		}
	}
	return nil
}

// javaIdentifier follows the Java Language Specification (3.8): a letter,
// _ or $, then letters, digits, _ or $; not a keyword or literal.
func javaIdentifier(s string) bool {
	if s == "" || javaKeywords[s] {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || unicode.IsLetter(r):
		case i > 0 && unicode.IsDigit(r):
		default:
			return false
		}
	}
	return true
}

var javaKeywords = map[string]bool{
	"abstract": true, "assert": true, "boolean": true, "break": true, "byte": true, "case": true,
	"catch": true, "char": true, "class": true, "const": true, "continue": true, "default": true,
	"do": true, "double": true, "else": true, "enum": true, "extends": true, "final": true,
	"finally": true, "float": true, "for": true, "goto": true, "if": true, "implements": true,
	"import": true, "instanceof": true, "int": true, "interface": true, "long": true, "native": true,
	"new": true, "package": true, "private": true, "protected": true, "public": true, "return": true,
	"short": true, "static": true, "strictfp": true, "super": true, "switch": true, "synchronized": true,
	"this": true, "throw": true, "throws": true, "transient": true, "try": true, "void": true,
	"volatile": true, "while": true, "true": true, "false": true, "null": true, "_": true,
}

// printable shortens s and escapes what a log or a message should not
// carry raw.
func printable(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.ToValidUTF8(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s), "?")
}
