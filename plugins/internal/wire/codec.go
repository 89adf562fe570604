package wire

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// A call is one hessian2 stream:
//
//	service version group method (strings)
//	int n, then n Java parameter type names (strings)
//	int m, then m argument values
//	int derived: a bit for each attachment left out because it repeats
//	  the call's names (derivable: path and interface the service,
//	  version, group)
//	attachments (map, or null)
//
// A reply is one hessian2 stream:
//
//	int status
//	  statusValue:     the value
//	  statusException: class, message (strings)
//	  statusError:     kind, detail (strings); kind names an rpc.Err* category
//	attachments (map, or null)
//	provider (string, value and exception replies only): the host:port
//	  that answered a call made through the node, "" otherwise
const (
	statusValue     int32 = 0
	statusException int32 = 1
	statusError     int32 = 2
)

// maxCount bounds the counts read from a peer so a corrupt stream cannot
// make us allocate; a Java method has at most 255 parameters.
const maxCount = 255

var encoders = sync.Pool{New: func() any { return hessian.NewEncoder() }}

var decoders = sync.Pool{New: func() any { return hessian.NewDecoder(nil) }}

func encode(fill func(e *hessian.Encoder) error) ([]byte, error) {
	e := encoders.Get().(*hessian.Encoder)
	defer func() {
		e.ReuseBufferClean()
		encoders.Put(e)
	}()
	if err := fill(e); err != nil {
		return nil, err
	}
	// Copied: the buffer goes back to the pool while gRPC may still hold it.
	return append([]byte(nil), e.Buffer()...), nil
}

// decode runs read over b; the hessian library can panic on corrupt input,
// which must not take down the reader (the node, for a garbage reply).
func decode(b []byte, read func(d *hessian.Decoder) error) (err error) {
	// The library allocates whatever a declared length says; check the
	// lengths against the bytes first.
	if err := protocol.CheckHessian(b); err != nil {
		return err
	}
	d := decoders.Get().(*hessian.Decoder)
	d.Reset(b)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt hessian stream: %v", r)
			return // a decoder that panicked is not reused
		}
		d.Reset(nil)
		decoders.Put(d)
	}()
	return read(d)
}

// EncodeCall encodes inv for the other side.
func EncodeCall(inv *rpc.Invocation) ([]byte, error) { return AppendCall(make([]byte, 0, 256), inv) }

// AppendCall is EncodeCall appending to b, so that a caller whose link
// copies the call can keep one buffer for many.
func AppendCall(b []byte, inv *rpc.Invocation) ([]byte, error) {
	if out, ok := appendShortCall(b, inv); ok {
		return out, nil
	}
	lib, err := encodeLibraryCall(inv)
	return append(b, lib...), err
}

// encodeLibraryCall encodes any call with the library.
func encodeLibraryCall(inv *rpc.Invocation) ([]byte, error) {
	return encode(func(e *hessian.Encoder) error {
		for _, s := range []string{inv.Service, inv.Version, inv.Group, inv.Method} {
			encodeString(e, s)
		}
		if err := e.Encode(int32(len(inv.ParamTypes))); err != nil {
			return err
		}
		for _, t := range inv.ParamTypes {
			encodeString(e, t)
		}
		if err := e.Encode(int32(len(inv.Args))); err != nil {
			return err
		}
		for i, a := range inv.Args {
			if err := encodeValue(e, a); err != nil {
				return fmt.Errorf("argument %d (%T) cannot be encoded in hessian2: %w", i+1, a, err)
			}
		}
		return encodeCallAttachments(e, inv)
	})
}

// appendShortCall appends the call when every value in it has a short form
// (protocol.AppendShortValue), most calls, without the library, which
// takes several times as long; the bytes are the library's. ok is false
// for any other call.
func appendShortCall(b []byte, inv *rpc.Invocation) (_ []byte, ok bool) {
	if b, ok = AppendCallHead(b, inv); !ok {
		return b, false
	}
	return appendShortRest(b, inv)
}

// AppendCallHead appends what comes before a call's arguments, its names
// and parameter types, as AppendCall writes them; ok is false when one of
// them has no short form. The head of a method's calls is the same on
// every call: AppendCallWithHead reuses it.
func AppendCallHead(b []byte, inv *rpc.Invocation) (_ []byte, ok bool) {
	for _, s := range [...]string{inv.Service, inv.Version, inv.Group, inv.Method} {
		if b, ok = protocol.AppendShortValue(b, s); !ok {
			return b, false
		}
	}
	b, _ = protocol.AppendShortValue(b, int32(len(inv.ParamTypes)))
	for _, t := range inv.ParamTypes {
		if b, ok = protocol.AppendShortValue(b, t); !ok {
			return b, false
		}
	}
	return b, true
}

// AppendCallWithHead is AppendCall for a call whose head (AppendCallHead)
// is known: the bytes are the same.
func AppendCallWithHead(b, head []byte, inv *rpc.Invocation) ([]byte, error) {
	if out, ok := appendShortRest(append(b, head...), inv); ok {
		return out, nil
	}
	return AppendCall(b, inv)
}

// appendShortRest appends the arguments and attachments of a call.
func appendShortRest(b []byte, inv *rpc.Invocation) (_ []byte, ok bool) {
	b, _ = protocol.AppendShortValue(b, int32(len(inv.Args)))
	for _, a := range inv.Args {
		if b, ok = protocol.AppendShortValue(b, a); !ok {
			return b, false
		}
	}
	return appendShortCallAttachments(b, inv)
}

// A call leaves out the attachments that repeat its own names, as Dubbo
// consumers send them on every call: path and interface (the service),
// version and group. A bit each in an int before the attachments, its
// derived bits, says which to put back; encoding them took the node a
// third of encoding a call.
var derivable = [...]string{"path", "interface", "version", "group"}

// derivedFrom is the value attachment derivable[i] has in a call of inv.
func derivedFrom(inv *rpc.Invocation, i int) string {
	switch i {
	case 0, 1:
		return inv.Service
	case 2:
		return inv.Version
	}
	return inv.Group
}

// derivedBit is the bit of attachment k=v in a call of inv: 0 when it is
// not one the call repeats.
func derivedBit(inv *rpc.Invocation, k string, v any) int {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	for i, d := range derivable {
		if k == d {
			if s == derivedFrom(inv, i) {
				return 1 << i
			}
			return 0
		}
	}
	return 0
}

// withDerived returns m with the attachments derived names put back.
func withDerived(m map[string]any, derived int, inv *rpc.Invocation) map[string]any {
	if derived == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]any, len(derivable))
	}
	for i, k := range derivable {
		if derived&(1<<i) != 0 {
			m[k] = derivedFrom(inv, i)
		}
	}
	return m
}

// appendShortCallAttachments appends a call's derived bits and its other
// attachments as encodeCallAttachments does, if every entry has a short
// form.
func appendShortCallAttachments(b []byte, inv *rpc.Invocation) ([]byte, bool) {
	at := len(b)
	b = append(b, 0x90) // the derived bits, set below: an int of 0-47 is one byte
	if len(inv.Attachments) == 0 {
		return append(b, 'N'), true
	}
	derived, start := 0, len(b)
	b = append(b, 'H')
	var ok bool
	for k, v := range inv.Attachments {
		if k == hessian.ClassKey { // the library writes such a map as an object
			return b[:at], false
		}
		if bit := derivedBit(inv, k, v); bit != 0 {
			derived |= bit
			continue
		}
		if b, ok = protocol.AppendShortValue(b, k); !ok {
			return b[:at], false
		}
		if b, ok = protocol.AppendShortValue(b, v); !ok {
			return b[:at], false
		}
	}
	if len(b) == start+1 {
		b = append(b[:start], 'N') // all derived
	} else {
		b = append(b, 'Z')
	}
	b[at] = byte(0x90 + derived)
	return b, true
}

// encodeCallAttachments writes a call's derived bits, then its other
// attachments (encodeAttachments).
func encodeCallAttachments(e *hessian.Encoder, inv *rpc.Invocation) error {
	derived := 0
	var rest map[string]any
	for k, v := range inv.Attachments {
		if bit := derivedBit(inv, k, v); bit != 0 {
			derived |= bit
			continue
		}
		if rest == nil {
			rest = make(map[string]any, len(inv.Attachments))
		}
		rest[k] = v
	}
	if err := e.Encode(int32(derived)); err != nil {
		return err
	}
	return encodeAttachments(e, rest)
}

// appendShortAttachments appends m as encodeAttachments does, if every
// entry has a short form.
func appendShortAttachments(b []byte, m map[string]any) ([]byte, bool) {
	if len(m) == 0 {
		return append(b, 'N'), true
	}
	return protocol.AppendShortMap(b, m)
}

// encodeAttachments writes m as an untyped hessian2 map ('H' ... 'Z'),
// never a POJO: a "_class" attachment must stay a key.
func encodeAttachments(e *hessian.Encoder, m map[string]any) error {
	if len(m) == 0 {
		return e.Encode(nil)
	}
	e.Append([]byte{'H'})
	for k, v := range m {
		encodeString(e, k)
		if err := encodeValue(e, v); err != nil {
			return fmt.Errorf("attachment %s (%T) cannot be encoded in hessian2: %w", k, v, err)
		}
	}
	e.Append([]byte{'Z'})
	return nil
}

// encodeValue is e.Encode with a quicker way for strings.
func encodeValue(e *hessian.Encoder, v any) error {
	if s, ok := v.(string); ok {
		encodeString(e, s)
		return nil
	}
	return e.Encode(v)
}

// encodeString writes s as hessian2 does, without the library's rune by
// rune copy for the short ASCII strings that make up most of a call
// (names, Java types, attachment keys): 0x00-0x1f then up to 31 bytes,
// or 0x30-0x33 and a length byte then up to 1023 bytes. Others go through
// the library.
func encodeString(e *hessian.Encoder, s string) {
	if len(s) > 1023 || !protocol.IsASCII(s) {
		_ = e.Encode(s) // a string always encodes
		return
	}
	if len(s) <= 31 {
		e.Append([]byte{byte(len(s))})
	} else {
		e.Append([]byte{0x30 + byte(len(s)>>8), byte(len(s))})
	}
	e.Append(unsafe.Slice(unsafe.StringData(s), len(s))) // only read
}

// DecodeCall decodes a call encoded by EncodeCall.
func DecodeCall(b []byte) (*rpc.Invocation, error) {
	if inv, ok := decodeShortCall(b, nil); ok {
		return inv, nil
	}
	return decodeLibraryCall(b)
}

// A CallDecoder decodes the stream of calls one goroutine reads, as the
// plugin's link reader does, and leaves a short call's attachments, which
// most handlers never read, undecoded: building their map was a third of
// decoding a call. Names and types come from its table, without
// allocating, and a call that names the same method with the same types
// as the one before reads them without looking them up. The zero value is
// ready; it is not safe for concurrent use.
type CallDecoder struct {
	strs protocol.StringTable
	// The bytes of the last short call up to its arguments, and what they
	// said (its ParamTypes kept in types).
	head  []byte
	last  rpc.Invocation
	types []string
}

// maxHead bounds the call head a CallDecoder keeps.
const maxHead = 1 << 10

// Decode fills inv with the call b, as DecodeCall does, except that for a
// short call inv.Attachments is nil and attachments holds their bytes,
// unchecked, for DecodeAttachments; it shares b, which must not change.
// inv's ParamTypes and Args keep their storage when it is large enough: a
// caller that keeps inv in a larger struct decodes the commonest calls
// without allocating for them.
func (d *CallDecoder) Decode(b []byte, inv *rpc.Invocation) (attachments []byte, err error) {
	if attachments, ok := d.decodeShort(b, inv); ok {
		return attachments, nil
	}
	lib, err := decodeLibraryCall(b)
	if err != nil {
		return nil, err
	}
	*inv = *lib
	return nil, nil
}

func (d *CallDecoder) decodeShort(b []byte, inv *rpc.Invocation) (attachments []byte, _ bool) {
	pos := len(d.head)
	if pos > 0 && bytes.HasPrefix(b, d.head) {
		inv.Service, inv.Version, inv.Group, inv.Method = d.last.Service, d.last.Version, d.last.Group, d.last.Method
		inv.ParamTypes = resize(inv.ParamTypes, len(d.types))
		copy(inv.ParamTypes, d.types)
	} else {
		var ok bool
		if pos, ok = decodeShortHead(b, &d.strs, inv); !ok {
			return nil, false
		}
		d.head = d.head[:0]
		if pos <= maxHead {
			d.head = append(d.head, b[:pos]...)
			d.last.Service, d.last.Version, d.last.Group, d.last.Method = inv.Service, inv.Version, inv.Group, inv.Method
			d.types = append(d.types[:0], inv.ParamTypes...)
		}
	}
	return decodeShortRest(b, pos, inv)
}

// DecodeAttachments decodes the attachments a CallDecoder left of inv;
// nil for none. They were not checked: the error says what is wrong with
// them.
func DecodeAttachments(b []byte, inv *rpc.Invocation) (map[string]any, error) {
	if derived, m, ok := shortCallAttachments(b, protocol.ReadShortMap); ok {
		return withDerived(m, derived, inv), nil
	}
	var derived int
	var m map[string]any
	err := decode(b, func(d *hessian.Decoder) (err error) {
		derived, m, err = readCallAttachments(d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("decode attachments: %w", err)
	}
	return withDerived(m, derived, inv), nil
}

// shortCallAttachments reads a call's derived bits and attachments, the
// whole of b, if they have short forms.
func shortCallAttachments(b []byte, readMap func([]byte, int) (map[string]any, int, bool)) (derived int, m map[string]any, ok bool) {
	derived, pos, ok := shortDerived(b, 0)
	if !ok {
		return 0, nil, false
	}
	if pos == len(b)-1 && b[pos] == 'N' {
		return derived, nil, true
	}
	m, next, ok := readMap(b, pos)
	return derived, m, ok && next == len(b)
}

// shortDerived reads derived bits.
func shortDerived(b []byte, pos int) (derived, next int, ok bool) {
	derived, next, ok = shortCount(b, pos)
	return derived, next, ok && derived < 1<<len(derivable)
}

// readCallAttachments reads a call's derived bits and attachments with the
// library.
func readCallAttachments(d *hessian.Decoder) (derived int, m map[string]any, err error) {
	if derived, err = readCount(d); err != nil {
		return 0, nil, err
	}
	if derived >= 1<<len(derivable) {
		return 0, nil, fmt.Errorf("derived attachments %#x: unknown bits", derived)
	}
	m, err = readAttachments(d)
	return derived, m, err
}

// decodeLibraryCall decodes any call with the library.
func decodeLibraryCall(b []byte) (*rpc.Invocation, error) {
	inv := &rpc.Invocation{}
	err := decode(b, func(d *hessian.Decoder) error {
		for _, dst := range []*string{&inv.Service, &inv.Version, &inv.Group, &inv.Method} {
			s, err := readString(d)
			if err != nil {
				return err
			}
			*dst = s
		}
		n, err := readCount(d)
		if err != nil {
			return err
		}
		if n > 0 {
			inv.ParamTypes = make([]string, n)
		}
		for i := range inv.ParamTypes {
			if inv.ParamTypes[i], err = readString(d); err != nil {
				return err
			}
		}
		if n, err = readCount(d); err != nil {
			return err
		}
		if n > 0 {
			inv.Args = make([]any, n)
		}
		for i := range inv.Args {
			if inv.Args[i], err = d.Decode(); err != nil {
				return fmt.Errorf("argument %d: %w", i+1, err)
			}
		}
		derived, m, err := readCallAttachments(d)
		inv.Attachments = withDerived(m, derived, inv)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("decode call: %w", err)
	}
	return inv, nil
}

// decodeShortCall decodes a call whose every value has a short form (ASCII
// names and types, string, int and boolean arguments, string attachments),
// most calls, without the library, which takes about five times as long;
// ok is false for any other call.
func decodeShortCall(b []byte, t *protocol.StringTable) (*rpc.Invocation, bool) {
	inv := &rpc.Invocation{}
	attachments, ok := decodeShortCallDeferred(b, t, inv)
	if !ok || attachments == nil {
		return inv, ok
	}
	mp := protocol.ReadShortMap
	if t != nil {
		mp = t.Map
	}
	derived, m, ok := shortCallAttachments(attachments, mp)
	if !ok {
		return inv, false
	}
	inv.Attachments = withDerived(m, derived, inv)
	return inv, true
}

// decodeShortCallDeferred is decodeShortCall with the attachments left in
// their bytes (nil for none), unread.
func decodeShortCallDeferred(b []byte, t *protocol.StringTable, inv *rpc.Invocation) (attachments []byte, _ bool) {
	pos, ok := decodeShortHead(b, t, inv)
	if !ok {
		return nil, false
	}
	return decodeShortRest(b, pos, inv)
}

// decodeShortHead reads what comes before the arguments: the names and
// the parameter types. It returns the position of the arguments.
func decodeShortHead(b []byte, t *protocol.StringTable, inv *rpc.Invocation) (int, bool) {
	str := protocol.ReadShortString
	if t != nil {
		str = t.String
	}
	pos, ok := 0, true
	for _, dst := range [...]*string{&inv.Service, &inv.Version, &inv.Group, &inv.Method} {
		if *dst, pos, ok = str(b, pos); !ok {
			return pos, false
		}
	}
	n := 0
	if n, pos, ok = shortCount(b, pos); !ok {
		return pos, false
	}
	inv.ParamTypes = resize(inv.ParamTypes, n)
	for i := range inv.ParamTypes {
		if inv.ParamTypes[i], pos, ok = str(b, pos); !ok {
			return pos, false
		}
	}
	return pos, true
}

// decodeShortRest reads the arguments at b[pos:] and checks the
// attachments after them.
func decodeShortRest(b []byte, pos int, inv *rpc.Invocation) (attachments []byte, _ bool) {
	inv.Attachments = nil
	n, pos, ok := shortCount(b, pos)
	if !ok {
		return nil, false
	}
	inv.Args = resize(inv.Args, n)
	for i := range inv.Args {
		// Arguments seldom repeat: they would only churn the table.
		if inv.Args[i], pos, ok = protocol.ReadShortValue(b, pos); !ok {
			return nil, false
		}
	}
	// The attachments end the call. Most handlers never read them, so
	// they are not even checked until one does (DecodeAttachments).
	start := pos
	derived, pos, ok := shortDerived(b, pos)
	switch {
	case !ok:
		return nil, false
	case derived == 0 && pos == len(b)-1 && b[pos] == 'N':
		return nil, true
	case pos < len(b) && (b[pos] == 'H' || b[pos] == 'N'):
		return b[start:], true
	}
	return nil, false
}

// shortCount reads a count of types or arguments.
func shortCount(b []byte, pos int) (n, next int, ok bool) {
	v, next, ok := protocol.ReadShortValue(b, pos)
	i, isInt := v.(int32)
	if !ok || !isInt || i < 0 || i > maxCount {
		return 0, pos, false
	}
	return int(i), next, true
}

// resize returns s with length n, in its own storage if it is large
// enough; nil for none, as a decoded call has.
func resize[T any](s []T, n int) []T {
	switch {
	case n == 0:
		return nil
	case n <= cap(s):
		clear(s[:n])
		return s[:n]
	}
	return make([]T, n)

}

// EncodeReply encodes the outcome of a call: res, or err when the call
// itself failed. Business exceptions travel in res.Exception.
func EncodeReply(res *rpc.Result, callErr error) ([]byte, error) {
	return AppendReply(make([]byte, 0, 64), res, callErr)
}

// AppendReply is EncodeReply appending to b, so that a reply can be
// written where its call was kept.
func AppendReply(b []byte, res *rpc.Result, callErr error) ([]byte, error) {
	if callErr == nil && res != nil && res.Exception == nil {
		if out, ok := appendShortReply(b, res); ok {
			return out, nil
		}
	}
	lib, err := encodeLibraryReply(res, callErr)
	return append(b, lib...), err
}

// encodeLibraryReply encodes any outcome with the library.
func encodeLibraryReply(res *rpc.Result, callErr error) ([]byte, error) {
	return encode(func(e *hessian.Encoder) error {
		var attachments map[string]any
		switch {
		case callErr != nil:
			var ex *rpc.Exception
			if errors.As(callErr, &ex) {
				return encodeAll(e, statusException, ex.Class, ex.Message, nil, "")
			}
			kind, detail := kindOf(callErr)
			return encodeAll(e, statusError, kind, detail, nil)
		case res == nil:
			return encodeAll(e, statusValue, nil, nil, "")
		case res.Exception != nil:
			attachments = res.Attachments
			if err := encodeAll(e, statusException, res.Exception.Class, res.Exception.Message); err != nil {
				return err
			}
		default:
			attachments = res.Attachments
			if err := e.Encode(statusValue); err != nil {
				return err
			}
			if err := encodeValue(e, res.Value); err != nil {
				return fmt.Errorf("result (%T) cannot be encoded in hessian2: %w", res.Value, err)
			}
		}
		if err := encodeAttachments(e, attachments); err != nil {
			return err
		}
		encodeString(e, res.Provider)
		return nil
	})
}

// AppendStringReply is AppendReply for a string value: what handlers
// answer most, written without a Result around it.
func AppendStringReply(b []byte, v string) []byte {
	out, _ := protocol.AppendShortValue(b, statusValue)
	if out, ok := protocol.AppendShortValue(out, v); ok {
		return append(out, 'N', 0) // no attachments, no provider ("")
	}
	lib, err := encodeLibraryReply(&rpc.Result{Value: v}, nil)
	if err != nil {
		panic("wire: encoding a string reply: " + err.Error()) // a string always encodes
	}
	return append(b, lib...)
}

// appendShortReply appends a value reply whose value, attachments and
// provider have short forms, as the library writes it.
func appendShortReply(b []byte, res *rpc.Result) (_ []byte, ok bool) {
	b, _ = protocol.AppendShortValue(b, statusValue)
	if b, ok = protocol.AppendShortValue(b, res.Value); !ok {
		return b, false
	}
	if b, ok = appendShortAttachments(b, res.Attachments); !ok {
		return b, false
	}
	return protocol.AppendShortValue(b, res.Provider)
}

// ErrorReply encodes a failed call, for when the outcome itself could not
// be encoded. It cannot fail: the reply holds strings only.
func ErrorReply(callErr error) []byte {
	b, err := EncodeReply(nil, callErr)
	if err != nil {
		panic("wire: encoding an error reply: " + err.Error())
	}
	return b
}

func encodeAll(e *hessian.Encoder, vs ...any) error {
	for _, v := range vs {
		if err := e.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// DecodeReply decodes a reply encoded by EncodeReply. A failed call comes
// back as a *rpc.CallError whose Kind is the category the other side used,
// so errors.Is works across the process boundary (the caller fills in
// Service and Method); a reply that cannot be decoded gives an error
// wrapping ErrCorrupt.
func DecodeReply(b []byte) (*rpc.Result, error) {
	if res, ok := decodeShortReply(b); ok {
		return res, nil
	}
	return decodeLibraryReply(b)
}

// decodeLibraryReply decodes any reply with the library.
func decodeLibraryReply(b []byte) (*rpc.Result, error) {
	res := &rpc.Result{}
	var callErr error
	err := decode(b, func(d *hessian.Decoder) error {
		v, err := d.Decode()
		if err != nil {
			return err
		}
		status, ok := v.(int32)
		if !ok {
			return fmt.Errorf("reply status is %T, not an int", v)
		}
		switch status {
		case statusValue:
			if res.Value, err = d.Decode(); err != nil {
				return err
			}
		case statusException:
			ex := &rpc.Exception{}
			if ex.Class, err = readString(d); err != nil {
				return err
			}
			if ex.Message, err = readString(d); err != nil {
				return err
			}
			if ex.Class == "" {
				ex.Class = "java.lang.RuntimeException"
			}
			res.Exception = ex
		case statusError:
			kind, err := readString(d)
			if err != nil {
				return err
			}
			detail, err := readString(d)
			if err != nil {
				return err
			}
			callErr = &rpc.CallError{Kind: kindError(kind), Detail: detail}
			return nil
		default:
			return fmt.Errorf("unknown reply status %d", status)
		}
		if res.Attachments, err = readAttachments(d); err != nil {
			return err
		}
		res.Provider, err = readString(d)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if callErr != nil {
		return nil, callErr
	}
	return res, nil
}

// decodeShortReply decodes a value reply whose every value has a short
// form, without the library; ok is false for any other reply.
func decodeShortReply(b []byte) (*rpc.Result, bool) {
	status, pos, ok := protocol.ReadShortValue(b, 0)
	if !ok || status != statusValue {
		return nil, false
	}
	res := &rpc.Result{}
	if res.Value, pos, ok = protocol.ReadShortValue(b, pos); !ok {
		return nil, false
	}
	switch {
	case pos < len(b) && b[pos] == 'N':
		pos++
	default:
		if res.Attachments, pos, ok = protocol.ReadShortMap(b, pos); !ok {
			return nil, false
		}
	}
	if res.Provider, pos, ok = protocol.ReadShortString(b, pos); !ok {
		return nil, false
	}
	return res, pos == len(b)
}

// ErrCorrupt marks a message that could not be decoded.
var ErrCorrupt = errors.New("corrupt message")

func readString(d *hessian.Decoder) (string, error) {
	v, err := d.Decode()
	if err != nil {
		return "", err
	}
	if s, ok := protocol.StringValue(v); ok {
		return s, nil
	}
	return "", fmt.Errorf("expected a string, got %T", v)
}

func readCount(d *hessian.Decoder) (int, error) {
	v, err := d.Decode()
	if err != nil {
		return 0, err
	}
	n, ok := v.(int32)
	if !ok || n < 0 || n > maxCount {
		return 0, fmt.Errorf("bad count %v", v)
	}
	return int(n), nil
}

func readAttachments(d *hessian.Decoder) (map[string]any, error) {
	v, err := d.Decode()
	if err != nil {
		return nil, fmt.Errorf("attachments: %w", err)
	}
	return protocol.Attachments(v)
}

// kindOf is what a failed call sends: the kind of its category (an
// uncategorised failure is the provider's) and what happened.
func kindOf(err error) (kind, detail string) {
	detail = err.Error()
	// The receiver names the call itself; only the detail travels.
	var ce *rpc.CallError
	if errors.As(err, &ce) && ce.Detail != "" {
		detail = ce.Detail
	}
	c := rpc.Category(err)
	if c == nil {
		c = rpc.ErrProvider
	}
	return rpc.CategoryKind(c), detail
}

// kindError is the category a received kind names; a kind this side does
// not know is the provider's failure.
func kindError(kind string) error {
	if c := rpc.KindCategory(kind); c != nil {
		return c
	}
	return rpc.ErrProvider
}
