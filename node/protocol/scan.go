package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxDepth bounds nesting of lists, maps and objects in a body. Real
// payloads stay far below it; without a bound a few MB of nested list tags
// would overflow the decoder's stack and kill the process.
const maxDepth = 256

var errTruncated = errors.New("truncated value")

// scanner walks a hessian2 body structurally, without building values, and
// checks that every declared length (list sizes, class field counts, string
// and binary chunks) is backed by bytes actually present. The hessian
// library trusts those lengths when it allocates, so a body is scanned
// before it is decoded: allocation then stays proportional to the body
// length, and garbage is rejected cheaply.
type scanner struct {
	b       []byte
	pos     int
	classes []classDef // in definition order
}

type classDef struct {
	name   [2]int // offsets of the name's bytes in b
	fields int
}

func (s *scanner) reset(b []byte) {
	s.b, s.pos, s.classes = b, 0, s.classes[:0]
}

// atEnd reports whether all bytes were consumed.
func (s *scanner) atEnd() bool { return s.pos >= len(s.b) }

// next skips one complete top-level value.
func (s *scanner) next() error {
	if s.atEnd() {
		return errTruncated
	}
	return s.value(0)
}

func (s *scanner) need(n int) error {
	if n < 0 || len(s.b)-s.pos < n {
		return errTruncated
	}
	return nil
}

func (s *scanner) skip(n int) error {
	if err := s.need(n); err != nil {
		return err
	}
	s.pos += n
	return nil
}

func (s *scanner) byte() (byte, error) {
	if s.pos >= len(s.b) {
		return 0, errTruncated
	}
	c := s.b[s.pos]
	s.pos++
	return c, nil
}

func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("values nested deeper than %d", maxDepth)
	}
	tag, err := s.byte()
	if err != nil {
		return err
	}
	switch {
	case tag == 'N' || tag == 'T' || tag == 'F':
		return nil
	case isIntTag(tag), isLongTag(tag):
		return s.number(tag)
	case tag == 0x5b || tag == 0x5c:
		return nil
	case tag == 0x5d:
		return s.skip(1)
	case tag == 0x5e:
		return s.skip(2)
	case tag == 0x5f, tag == 0x4b:
		return s.skip(4)
	case tag == 'D', tag == 0x4a:
		return s.skip(8)
	case isStringTag(tag):
		return s.string(tag)
	case tag <= 0x2f && tag >= 0x20, tag >= 0x34 && tag <= 0x37, tag == 'A', tag == 'B':
		return s.binary(tag)
	case tag == 'Q':
		_, err := s.int()
		return err
	case tag == 'H':
		return s.mapEntries(depth)
	case tag == 'M':
		if err := s.typeName(); err != nil {
			return err
		}
		return s.mapEntries(depth)
	case tag == 0x55: // variable-length typed list
		if err := s.typeName(); err != nil {
			return err
		}
		return s.untilEnd(depth)
	case tag == 0x57: // variable-length untyped list
		return s.untilEnd(depth)
	case tag == 'V':
		if err := s.typeName(); err != nil {
			return err
		}
		return s.fixedList(depth)
	case tag == 0x58:
		return s.fixedList(depth)
	case tag >= 0x70 && tag <= 0x77:
		if err := s.typeName(); err != nil {
			return err
		}
		return s.elements(depth, int(tag-0x70))
	case tag >= 0x78 && tag <= 0x7f:
		return s.elements(depth, int(tag-0x78))
	case tag == 'C':
		if err := s.classDef(); err != nil {
			return err
		}
		// The decoder reads a definition and the instance after it as one value.
		return s.value(depth)
	case tag == 'O':
		idx, err := s.int()
		if err != nil {
			return err
		}
		return s.instance(depth, idx)
	case tag >= 0x60 && tag <= 0x6f:
		return s.instance(depth, int(tag-0x60))
	}
	return fmt.Errorf("unknown hessian tag 0x%02x at offset %d", tag, s.pos-1)
}

func isIntTag(t byte) bool  { return t >= 0x80 && t <= 0xd7 || t == 'I' }
func isLongTag(t byte) bool { return t >= 0xd8 || t >= 0x38 && t <= 0x3f || t == 0x59 || t == 'L' }
func isStringTag(t byte) bool {
	return t <= 0x1f || t >= 0x30 && t <= 0x33 || t == 'R' || t == 'S'
}

// number skips the payload of an int or long whose tag was read.
func (s *scanner) number(tag byte) error {
	switch {
	case tag >= 0x80 && tag <= 0xbf, tag >= 0xd8 && tag <= 0xef:
		return nil
	case tag >= 0xc0 && tag <= 0xcf, tag >= 0xf0:
		return s.skip(1)
	case tag >= 0xd0 && tag <= 0xd7, tag >= 0x38 && tag <= 0x3f:
		return s.skip(2)
	case tag == 'I', tag == 0x59:
		return s.skip(4)
	default: // 'L'
		return s.skip(8)
	}
}

// int reads a hessian int (the form used for lengths and indexes).
func (s *scanner) int() (int, error) {
	tag, err := s.byte()
	if err != nil {
		return 0, err
	}
	switch {
	case tag >= 0x80 && tag <= 0xbf:
		return int(tag) - 0x90, nil
	case tag >= 0xc0 && tag <= 0xcf:
		if err := s.need(1); err != nil {
			return 0, err
		}
		v := (int(tag)-0xc8)<<8 | int(s.b[s.pos])
		s.pos++
		return v, nil
	case tag >= 0xd0 && tag <= 0xd7:
		if err := s.need(2); err != nil {
			return 0, err
		}
		v := (int(tag)-0xd4)<<16 | int(s.b[s.pos])<<8 | int(s.b[s.pos+1])
		s.pos += 2
		return v, nil
	case tag == 'I':
		if err := s.need(4); err != nil {
			return 0, err
		}
		v := int(int32(binary.BigEndian.Uint32(s.b[s.pos:])))
		s.pos += 4
		return v, nil
	}
	return 0, fmt.Errorf("expected int, found tag 0x%02x at offset %d", tag, s.pos-1)
}

// typeName skips the type of a typed list or map: a string or a type index.
func (s *scanner) typeName() error {
	tag, err := s.byte()
	if err != nil {
		return err
	}
	switch {
	case isStringTag(tag):
		return s.string(tag)
	case isIntTag(tag), isLongTag(tag):
		return s.number(tag)
	}
	return fmt.Errorf("bad type tag 0x%02x at offset %d", tag, s.pos-1)
}

// string skips string chunks; lengths count UTF-16 units, each written as
// 1 to 3 bytes (surrogates separately), as the decoder reads them.
func (s *scanner) string(tag byte) error {
	for {
		var n int
		switch {
		case tag <= 0x1f:
			n = int(tag)
		case tag >= 0x30 && tag <= 0x33:
			if err := s.need(1); err != nil {
				return err
			}
			n = int(tag-0x30)<<8 | int(s.b[s.pos])
			s.pos++
		case tag == 'R' || tag == 'S':
			if err := s.need(2); err != nil {
				return err
			}
			n = int(binary.BigEndian.Uint16(s.b[s.pos:]))
			s.pos += 2
		default:
			return fmt.Errorf("bad string chunk tag 0x%02x at offset %d", tag, s.pos-1)
		}
		for ; n > 0; n-- {
			c, err := s.byte()
			if err != nil {
				return err
			}
			switch {
			case c < 0x80:
			case c&0xe0 == 0xc0:
				err = s.skip(1)
			case c&0xf0 == 0xe0:
				err = s.skip(2)
			default:
				err = fmt.Errorf("bad utf-8 byte 0x%02x in string at offset %d", c, s.pos-1)
			}
			if err != nil {
				return err
			}
		}
		if tag != 'R' {
			return nil
		}
		var err error
		if tag, err = s.byte(); err != nil {
			return err
		}
	}
}

func (s *scanner) binary(tag byte) error {
	for {
		var n int
		switch {
		case tag >= 0x20 && tag <= 0x2f:
			n = int(tag - 0x20)
		case tag >= 0x34 && tag <= 0x37:
			if err := s.need(1); err != nil {
				return err
			}
			n = int(tag-0x34)<<8 | int(s.b[s.pos])
			s.pos++
		case tag == 'A' || tag == 'B':
			if err := s.need(2); err != nil {
				return err
			}
			n = int(binary.BigEndian.Uint16(s.b[s.pos:]))
			s.pos += 2
		default:
			return fmt.Errorf("bad binary chunk tag 0x%02x at offset %d", tag, s.pos-1)
		}
		if err := s.skip(n); err != nil {
			return err
		}
		if tag != 'A' {
			return nil
		}
		var err error
		if tag, err = s.byte(); err != nil {
			return err
		}
	}
}

// mapEntries skips key/value pairs up to the closing 'Z'.
func (s *scanner) mapEntries(depth int) error {
	for {
		if err := s.need(1); err != nil {
			return err
		}
		if s.b[s.pos] == 'Z' {
			s.pos++
			return nil
		}
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if err := s.value(depth + 1); err != nil {
			return err
		}
	}
}

func (s *scanner) untilEnd(depth int) error {
	for {
		if err := s.need(1); err != nil {
			return err
		}
		if s.b[s.pos] == 'Z' {
			s.pos++
			return nil
		}
		if err := s.value(depth + 1); err != nil {
			return err
		}
	}
}

func (s *scanner) fixedList(depth int) error {
	n, err := s.int()
	if err != nil {
		return err
	}
	return s.elements(depth, n)
}

func (s *scanner) elements(depth, n int) error {
	// Every element takes at least one byte: a longer claim is a lie that
	// would make the decoder allocate for nothing.
	if err := s.need(n); err != nil {
		return fmt.Errorf("list of %d elements in %d bytes: %w", n, len(s.b)-s.pos, err)
	}
	for ; n > 0; n-- {
		if err := s.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

func (s *scanner) classDef() error {
	tag, err := s.byte()
	if err != nil {
		return err
	}
	if !isStringTag(tag) {
		return fmt.Errorf("bad class name tag 0x%02x at offset %d", tag, s.pos-1)
	}
	nameAt := s.pos - 1 // from the string's tag
	if err := s.string(tag); err != nil {
		return err
	}
	name := [2]int{nameAt, s.pos}
	n, err := s.int()
	if err != nil {
		return err
	}
	if err := s.need(n); err != nil {
		return fmt.Errorf("class with %d fields in %d bytes: %w", n, len(s.b)-s.pos, err)
	}
	for i := 0; i < n; i++ {
		tag, err := s.byte()
		if err != nil {
			return err
		}
		if !isStringTag(tag) {
			return fmt.Errorf("bad field name tag 0x%02x at offset %d", tag, s.pos-1)
		}
		if err := s.string(tag); err != nil {
			return err
		}
	}
	s.classes = append(s.classes, classDef{name: name, fields: n})
	return nil
}

func (s *scanner) instance(depth, idx int) error {
	if idx < 0 || idx >= len(s.classes) {
		return fmt.Errorf("object of undefined class #%d", idx)
	}
	for n := s.classes[idx].fields; n > 0; n-- {
		if err := s.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// classAt returns the class name of the object value that starts at pos, ""
// if it is not an object. The decoder loses the class of exceptions it does
// not know, so the codec reads it from the wire.
func (s *scanner) classAt(pos int) string {
	if pos >= len(s.b) {
		return ""
	}
	idx := -1
	switch tag := s.b[pos]; {
	case tag == 'C':
		// The definition about to be used is the first one at or after pos.
		for i, c := range s.classes {
			if c.name[0] > pos {
				idx = i
				break
			}
		}
	case tag == 'O':
		t := scanner{b: s.b, pos: pos + 1}
		if n, err := t.int(); err == nil {
			idx = n
		}
	case tag >= 0x60 && tag <= 0x6f:
		idx = int(tag - 0x60)
	}
	if idx < 0 || idx >= len(s.classes) {
		return ""
	}
	raw := s.b[s.classes[idx].name[0]:s.classes[idx].name[1]]
	// Skip the string's length prefix; class names are short ASCII.
	switch t := raw[0]; {
	case t <= 0x1f:
		raw = raw[1:]
	case t >= 0x30 && t <= 0x33:
		raw = raw[2:]
	default:
		raw = raw[3:]
	}
	return string(raw)
}

// CheckHessian walks b, a stream of hessian2 values, without building them,
// and reports an error wrapping ErrMalformedBody when a declared length is
// not backed by bytes or values nest too deeply. Decode untrusted hessian
// (e.g. from another process) only after it passed: the library allocates
// whatever a length says.
func CheckHessian(b []byte) error {
	var s scanner
	s.reset(b)
	for !s.atEnd() {
		if err := s.next(); err != nil {
			return fmt.Errorf("%w: at byte %d: %w", ErrMalformedBody, s.pos, err)
		}
	}
	return nil
}
