// Package wrapper is Triple's wrapper mode, Dubbo's "POJO way" of calling a
// service defined by a Java interface (no .proto) over Triple: the
// arguments travel in a TripleRequestWrapper, each serialized on its own
// (hessian2 here) with its Java type, and the result in a
// TripleResponseWrapper, both protobuf messages of package
// org.apache.dubbo.triple (PROTOCOLS.md D.3):
//
//	TripleRequestWrapper  { string serializeType = 1; repeated bytes args = 2; repeated string argTypes = 3; }
//	TripleResponseWrapper { string serializeType = 1; bytes data = 2; string type = 3; }
//
// dubbo-go v3.3.0 answers with a TripleRequestWrapper of one argument, which
// is the same bytes as a TripleResponseWrapper whose data is that argument:
// ParseResponse reads both. The codecs are written with protowire, so no
// generated code is needed; the parsers bound what a peer can make them
// allocate by the message they are given, and hessian values are checked
// (protocol.CheckHessian) before the library decodes them.
package wrapper

import (
	"errors"
	"fmt"

	hessian "github.com/apache/dubbo-go-hessian2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/dubbo-lab/dubbo/node/protocol"
)

// Serialization names a wrapper's serializeType carries for hessian2:
// dubbo-go writes "hessian2", Java "hessian4" (its hessian-lite).
const (
	Hessian2 = "hessian2"
	Hessian4 = "hessian4"
)

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed triple wrapper")

// Field numbers, shared by both messages.
const (
	fieldSerializeType = 1
	fieldArgs          = 2 // Request.args, Response.data
	fieldTypes         = 3 // Request.argTypes, Response.type
)

// Request is a TripleRequestWrapper.
type Request struct {
	SerializeType string
	Args          [][]byte
	ArgTypes      []string
}

// Append appends r's encoding to b.
func (r *Request) Append(b []byte) []byte {
	b = appendString(b, fieldSerializeType, r.SerializeType)
	for _, a := range r.Args {
		b = protowire.AppendTag(b, fieldArgs, protowire.BytesType)
		b = protowire.AppendBytes(b, a)
	}
	for _, t := range r.ArgTypes {
		b = protowire.AppendTag(b, fieldTypes, protowire.BytesType)
		b = protowire.AppendString(b, t)
	}
	return b
}

// ParseRequest decodes a TripleRequestWrapper. The args alias b.
func ParseRequest(b []byte) (*Request, error) {
	r := &Request{}
	err := parse(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldSerializeType:
			r.SerializeType = string(v)
		case fieldArgs:
			r.Args = append(r.Args, v)
		case fieldTypes:
			r.ArgTypes = append(r.ArgTypes, string(v))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: request: %w", ErrMalformed, err)
	}
	return r, nil
}

// Response is a TripleResponseWrapper.
type Response struct {
	SerializeType string
	Data          []byte
	// Type is the Java class of the value (or of the exception).
	Type string
}

// Append appends r's encoding to b.
func (r *Response) Append(b []byte) []byte {
	b = appendString(b, fieldSerializeType, r.SerializeType)
	if r.Data != nil {
		b = protowire.AppendTag(b, fieldArgs, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Data)
	}
	return appendString(b, fieldTypes, r.Type)
}

// ParseResponse decodes a TripleResponseWrapper, or a TripleRequestWrapper
// of at most one argument as dubbo-go answers. Data aliases b.
func ParseResponse(b []byte) (*Response, error) {
	r := &Response{}
	var values, types int
	err := parse(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldSerializeType:
			r.SerializeType = string(v)
		case fieldArgs:
			r.Data = v
			values++
		case fieldTypes:
			r.Type = string(v)
			types++
		}
		return nil
	})
	if err == nil && (values > 1 || types > 1) {
		err = fmt.Errorf("%d values of %d types where one result was expected", values, types)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: response: %w", ErrMalformed, err)
	}
	return r, nil
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// parse walks the fields of a wrapper message, handing each
// length-delimited field of numbers 1 to 3 to fn and skipping unknown
// fields, as protobuf parsers do.
func parse(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if num >= fieldSerializeType && num <= fieldTypes {
			if typ != protowire.BytesType {
				return fmt.Errorf("field %d has wire type %d, want bytes", num, typ)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
			}
			if err := fn(num, v); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// IsHessian2 reports whether a serializeType names hessian2 (either
// spelling; empty means the default, hessian2).
func IsHessian2(serializeType string) bool {
	return serializeType == "" || serializeType == Hessian2 || serializeType == Hessian4
}

// EncodeValue serializes one value with hessian2, on its own, as the
// wrapper carries each argument and the result.
func EncodeValue(v any) ([]byte, error) {
	enc := hessian.NewEncoder()
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("hessian2 encode %T: %w", v, err)
	}
	return enc.Buffer(), nil
}

// DecodeValue decodes one hessian2 value that came from a peer: checked
// first, so that declared lengths cannot make the library allocate more
// than b holds, and without letting a library panic through.
func DecodeValue(b []byte) (v any, err error) {
	if len(b) == 0 {
		return nil, nil // an absent value: null
	}
	if err := protocol.CheckHessian(b); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%w: hessian2 decoder panic: %v", protocol.ErrMalformedBody, r)
		}
	}()
	v, err = hessian.NewDecoder(b).Decode()
	if err != nil {
		return nil, fmt.Errorf("%w: hessian2: %v", protocol.ErrMalformedBody, err)
	}
	return v, nil
}
