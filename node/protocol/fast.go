package protocol

import (
	"encoding/binary"

	hessian "github.com/apache/dubbo-go-hessian2"
)

// Fast paths for the values of an ordinary call: null, booleans, ints,
// single-chunk ASCII strings and untyped maps of those with string keys.
// They write and read exactly what dubbo-go-hessian2 does for the same
// values (fast_test.go and FuzzFastValue hold them to it) and never touch
// the reference tables, so they mix freely with library values as long as
// no fast value is read after the library has started on a body. Anything
// else goes through the library.

// maxFastString: the library splits strings into 4096-char chunks.
const maxFastString = 4096

// IsASCII reports whether s is all ASCII, the strings hessian2 writes
// byte for byte. It checks eight bytes at a time: every string of a call
// and its reply goes through it.
func IsASCII(s string) bool {
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	var or byte
	for i := 0; i < len(s); i++ {
		or |= s[i]
	}
	return or < 0x80
}

// appendFastString appends s if it is ASCII and fits one chunk; otherwise
// it returns b unchanged and false.
func appendFastString(b []byte, s string) ([]byte, bool) {
	n := len(s)
	if n > maxFastString || !IsASCII(s) {
		return b, false
	}
	switch {
	case n <= 0x1f:
		b = append(b, byte(n))
	case n <= 0x3ff:
		b = append(b, byte(0x30+n>>8), byte(n))
	default:
		b = append(b, 'S', byte(n>>8), byte(n))
	}
	return append(b, s...), true
}

// appendInt32 is hessian's compact int form.
func appendInt32(b []byte, v int32) []byte {
	switch {
	case -0x10 <= v && v <= 0x2f:
		return append(b, byte(v+0x90))
	case -0x800 <= v && v <= 0x7ff:
		return append(b, byte(0xc8+v>>8), byte(v))
	case -0x40000 <= v && v <= 0x3ffff:
		return append(b, byte(0xd4+v>>16), byte(v>>8), byte(v))
	}
	return binary.BigEndian.AppendUint32(append(b, 'I'), uint32(v))
}

// appendFastValue appends v if it has a fast form.
func appendFastValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, 'N'), true
	case string:
		return appendFastString(b, v)
	case int32:
		return appendInt32(b, v), true
	case bool:
		if v {
			return append(b, 'T'), true
		}
		return append(b, 'F'), true
	}
	return b, false
}

// appendFastMap appends m as an untyped map if every entry has a fast form,
// followed by extraKey → extraVal when extraKey is set (an entry of m with
// that key is left out). Otherwise it returns b unchanged and false.
func appendFastMap(b []byte, m map[string]any, extraKey, extraVal string) ([]byte, bool) {
	start := len(b)
	b = append(b, 'H')
	var ok bool
	for k, v := range m {
		if k == hessian.ClassKey { // the library writes such a map as an object
			return b[:start], false
		}
		if extraKey != "" && k == extraKey {
			continue
		}
		if b, ok = appendFastString(b, k); !ok {
			return b[:start], false
		}
		if b, ok = appendFastValue(b, v); !ok {
			return b[:start], false
		}
	}
	if extraKey != "" {
		if b, ok = appendFastString(b, extraKey); !ok {
			return b[:start], false
		}
		if b, ok = appendFastString(b, extraVal); !ok {
			return b[:start], false
		}
	}
	return append(b, 'Z'), true
}

// fastString reads a single-chunk ASCII string at b[pos:] and returns its
// bytes (aliasing b) and the position after it.
func fastString(b []byte, pos int) ([]byte, int, bool) {
	if pos >= len(b) {
		return nil, pos, false
	}
	n, at := 0, pos+1
	switch tag := b[pos]; {
	case tag <= 0x1f:
		n = int(tag)
	case tag >= 0x30 && tag <= 0x33:
		if at >= len(b) {
			return nil, pos, false
		}
		n, at = int(tag-0x30)<<8|int(b[at]), at+1
	case tag == 'S':
		if at+2 > len(b) {
			return nil, pos, false
		}
		n, at = int(binary.BigEndian.Uint16(b[at:])), at+2
	default:
		return nil, pos, false
	}
	if n > len(b)-at {
		return nil, pos, false
	}
	s := b[at : at+n]
	for _, c := range s {
		if c >= 0x80 {
			return nil, pos, false
		}
	}
	return s, at + n, true
}

// fastEnd returns the position after a value with a fast form at b[pos:].
func fastEnd(b []byte, pos int) (int, bool) {
	if pos >= len(b) {
		return pos, false
	}
	n := 0
	switch tag := b[pos]; {
	case tag == 'N', tag == 'T', tag == 'F', tag >= 0x80 && tag <= 0xbf:
		n = 1
	case tag >= 0xc0 && tag <= 0xcf:
		n = 2
	case tag >= 0xd0 && tag <= 0xd7:
		n = 3
	case tag == 'I':
		n = 5
	default:
		_, next, ok := fastString(b, pos)
		return next, ok
	}
	if pos+n > len(b) {
		return pos, false
	}
	return pos + n, true
}

// fastValue reads a value with a fast form at b[pos:]. Strings come from in
// when it is not nil, else they are allocated.
func fastValue(b []byte, pos int, in *interner) (any, int, bool) {
	if pos >= len(b) {
		return nil, pos, false
	}
	switch tag := b[pos]; {
	case tag == 'N':
		return nil, pos + 1, true
	case tag == 'T':
		return true, pos + 1, true
	case tag == 'F':
		return false, pos + 1, true
	case tag >= 0x80 && tag <= 0xbf:
		return int32(tag) - 0x90, pos + 1, true
	case tag >= 0xc0 && tag <= 0xcf:
		if pos+2 > len(b) {
			return nil, pos, false
		}
		return (int32(tag)-0xc8)<<8 | int32(b[pos+1]), pos + 2, true
	case tag >= 0xd0 && tag <= 0xd7:
		if pos+3 > len(b) {
			return nil, pos, false
		}
		return (int32(tag)-0xd4)<<16 | int32(b[pos+1])<<8 | int32(b[pos+2]), pos + 3, true
	case tag == 'I':
		if pos+5 > len(b) {
			return nil, pos, false
		}
		return int32(binary.BigEndian.Uint32(b[pos+1:])), pos + 5, true
	}
	s, next, ok := fastString(b, pos)
	if !ok {
		return nil, pos, false
	}
	if in != nil {
		return in.get(s), next, true
	}
	return string(s), next, true
}

// fastMap reads an untyped map of string keys and fast values at b[pos:].
func fastMap(b []byte, pos int, in *interner) (map[string]any, int, bool) {
	if pos >= len(b) || b[pos] != 'H' {
		return nil, pos, false
	}
	// Check and count first, so the map is allocated once at its size.
	n, _, ok := fastMapEnd(b, pos)
	if !ok {
		return nil, pos, false
	}
	m := make(map[string]any, n)
	p := pos + 1
	for i := 0; i < n; i++ {
		k, next, _ := fastString(b, p)
		v, next, _ := fastValue(b, next, in)
		if in != nil {
			m[in.get(k).(string)] = v
		} else {
			m[string(k)] = v
		}
		p = next
	}
	return m, p + 1, true
}

// fastMapEnd checks the map at b[pos:] as fastMap reads it, without
// reading it: its number of entries and the position after it.
func fastMapEnd(b []byte, pos int) (n, next int, ok bool) {
	if pos >= len(b) || b[pos] != 'H' {
		return 0, pos, false
	}
	for p := pos + 1; ; n++ {
		if p >= len(b) {
			return 0, pos, false
		}
		if b[p] == 'Z' {
			return n, p + 1, true
		}
		if _, p, ok = fastString(b, p); !ok {
			return 0, pos, false
		}
		if p, ok = fastEnd(b, p); !ok {
			return 0, pos, false
		}
	}
}

// SkipShortMap says where the map at b[pos:] that ReadShortMap would read
// ends, and whether it would, without reading it: for a decoder that
// reads the map later, if ever.
func SkipShortMap(b []byte, pos int) (next int, ok bool) {
	_, next, ok = fastMapEnd(b, pos)
	return next, ok
}

// ReadShortValue reads the value at b[pos:] if it has a short form: null,
// a boolean, an int, or a single-chunk ASCII string (as AppendRequest
// writes names, types and most attachments). It returns the position after
// it; ok is false, and nothing read, for any other value. For packages
// with hessian2 streams of their own (the plugin link's calls), which try
// these first and leave the rest to the library, as this package does.
func ReadShortValue(b []byte, pos int) (v any, next int, ok bool) { return fastValue(b, pos, nil) }

// AppendShortValue appends v in the short form ReadShortValue reads, if it
// has one (null, a boolean, an int32, an ASCII string of at most 4096
// bytes); otherwise it returns b unchanged and false. The bytes are the
// library's for the same value.
func AppendShortValue(b []byte, v any) ([]byte, bool) { return appendFastValue(b, v) }

// AppendShortMap appends m as an untyped map ('H' ... 'Z') if every entry
// has a short form, as ReadShortMap reads it; otherwise it returns b
// unchanged and false.
func AppendShortMap(b []byte, m map[string]any) ([]byte, bool) { return appendFastMap(b, m, "", "") }

// ReadShortString is ReadShortValue for a string.
func ReadShortString(b []byte, pos int) (s string, next int, ok bool) {
	bs, next, ok := fastString(b, pos)
	if !ok {
		return "", pos, false
	}
	return string(bs), next, true
}

// A StringTable hands out one string, boxed once, per distinct short
// string read through it, as a connection's decoder does for the names,
// types and attachments that repeat on every call: reading them again
// allocates nothing. Long or too many distinct strings are allocated as
// usual. Not safe for concurrent use; the zero value is ready.
type StringTable struct{ in interner }

// Value is ReadShortValue with strings from t.
func (t *StringTable) Value(b []byte, pos int) (v any, next int, ok bool) {
	return fastValue(b, pos, &t.in)
}

// String is ReadShortString with the string from t.
func (t *StringTable) String(b []byte, pos int) (s string, next int, ok bool) {
	bs, next, ok := fastString(b, pos)
	if !ok {
		return "", pos, false
	}
	return t.in.get(bs).(string), next, true
}

// Map is ReadShortMap with keys and strings from t.
func (t *StringTable) Map(b []byte, pos int) (m map[string]any, next int, ok bool) {
	return fastMap(b, pos, &t.in)
}

// ReadShortMap reads an untyped map of string keys and short values at
// b[pos:] ('H' ... 'Z').
func ReadShortMap(b []byte, pos int) (m map[string]any, next int, ok bool) {
	return fastMap(b, pos, nil)
}

// interner hands out one string (boxed once, so storing it in an any
// costs nothing) per distinct short byte sequence: the protocol version,
// service paths, method names, descriptors and attachment keys and values
// repeat on every call of a connection. Not safe for concurrent use.
type interner struct {
	m map[string]any
}

const (
	maxInternLen     = 128  // longer strings are allocated each time
	maxInternEntries = 1024 // then the table starts over (unique values such as trace ids)
)

func (in *interner) get(b []byte) any {
	if v, ok := in.m[string(b)]; ok { // no allocation for the lookup
		return v
	}
	s := string(b)
	if len(b) > maxInternLen {
		return s
	}
	if in.m == nil {
		in.m = make(map[string]any, 64)
	} else if len(in.m) >= maxInternEntries {
		clear(in.m)
	}
	v := any(s)
	in.m[s] = v
	return v
}
