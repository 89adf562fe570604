package mock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/generic"
)

// Value is the value of a return mock as the method's Java return type
// (returnType; "" when not known) has it, in the Go form a provider's
// answer decodes to (package generic), as Java's MockInvoker.parseMockValue
// reads it: empty is the type's empty value (generic.Empty, with the POJO
// properties props gives; nil: none), null is nil, true and false are
// booleans, a quoted string is the string, any text is a string for a
// String method, digits are a number, {...} and [...] are JSON (keys may be
// unquoted), anything else is a string; then the value is converted to the
// return type (a quoted number to a number, a JSON object to a POJO, ...).
// An error says why the value does not fit the type.
func (m *Mock) Value(returnType string, props func(class string) map[string]string) (any, error) {
	text := m.Return
	if returnType == "void" {
		returnType = ""
	}
	typ := returnType
	if typ == "" {
		typ = "java.lang.Object"
	}
	var raw json.RawMessage
	switch {
	case text == "empty":
		if returnType == "" {
			return nil, nil
		}
		return generic.Empty(returnType, props)
	case text == "null":
		return nil, nil
	case text == "true" || text == "false":
		if isString(returnType) {
			return text, nil
		}
		raw = json.RawMessage(text)
	case len(text) >= 2 && (text[0] == '"' && text[len(text)-1] == '"' || text[0] == '\'' && text[len(text)-1] == '\''):
		s := text[1 : len(text)-1]
		v, err := fromJSON(typ, quote(s))
		if err != nil && !isString(typ) {
			// As Java's PojoUtils.realize: "5" for an int is 5.
			if v2, err2 := fromJSON(typ, json.RawMessage(s)); err2 == nil {
				return v2, nil
			}
		}
		return v, err
	case isString(returnType):
		return text, nil
	case isDigits(text):
		raw = json.RawMessage(text)
	case strings.HasPrefix(text, "{") || strings.HasPrefix(text, "["):
		raw = json.RawMessage(lenientJSON(text))
	default:
		raw = quote(text)
	}
	return fromJSON(typ, raw)
}

func fromJSON(typ string, raw json.RawMessage) (any, error) {
	v, err := generic.FromJSON(typ, raw)
	if err != nil {
		return nil, fmt.Errorf("value %s for %s: %w", raw, typ, err)
	}
	return v, nil
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func isString(t string) bool {
	return t == "java.lang.String" || t == "String" || t == "java.lang.CharSequence"
}

// isDigits is Java's StringUtils.isNumeric(s, false).
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// lenientJSON quotes the bare keys of JSON objects ({id:1} is {"id":1}),
// which Java's JSON parser reads and a mock value is often written with.
func lenientJSON(s string) string {
	var b strings.Builder
	inString := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString != 0:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			} else if c == inString {
				inString = 0
			}
		case c == '"':
			inString = c
			b.WriteByte(c)
		case isIdentStart(c) && keyPosition(s, i):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k < len(s) && s[k] == ':' {
				b.WriteString(`"` + s[i:j] + `"`)
			} else {
				b.WriteString(s[i:j])
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// keyPosition reports whether s[i] starts where an object key may: after
// '{' or ',' and blanks.
func keyPosition(s string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch s[j] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', ',':
			return true
		}
		return false
	}
	return false
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
