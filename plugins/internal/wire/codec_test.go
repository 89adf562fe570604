package wire

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

func TestCallRoundTrip(t *testing.T) {
	when := time.UnixMilli(1700000000123)
	tests := []*rpc.Invocation{
		{Service: "org.example.Greeter", Method: "noArgs"},
		{Service: "org.example.Greeter", Version: "1.0.0", Group: "g", Method: "sayHello",
			ParamTypes: []string{"java.lang.String"}, Args: []any{"world"},
			Attachments: map[string]any{"timeout": "1000", "n": int32(3)}},
		{Service: "s", Method: "m", ParamTypes: []string{"int", "long", "double", "boolean", "byte[]"},
			Args: []any{int32(-7), int64(1) << 40, 2.5, true, []byte{0, 1, 2}}},
		{Service: "s", Method: "m", ParamTypes: []string{"java.util.List", "java.util.Map", "java.lang.Object", "java.util.Date"},
			Args: []any{[]any{"a", int32(1), nil}, map[any]any{"k": int64(2)}, nil, when}},
		{Service: "s", Method: "m", ParamTypes: []string{"org.example.User"},
			Args: []any{map[string]any{"_class": "org.example.User", "name": "ann", "age": int32(3)}}},
		{Service: "s", Method: "m", Attachments: map[string]any{"_class": "not a POJO"}},
	}
	for _, inv := range tests {
		b, err := EncodeCall(inv)
		if err != nil {
			t.Fatalf("%s: %v", inv.Method, err)
		}
		got, err := DecodeCall(b)
		if err != nil {
			t.Fatalf("%+v: %v", inv, err)
		}
		if !reflect.DeepEqual(got, inv) {
			t.Errorf("round trip\n got %#v\nwant %#v", got, inv)
		}
	}
}

func TestReplyRoundTrip(t *testing.T) {
	values := []any{nil, "s", int32(1), int64(1), 1.5, false, []byte("b"), []any{int32(1)},
		map[any]any{"k": "v"}, map[string]any{"_class": "org.example.User", "name": "x"}}
	for _, v := range values {
		b, err := EncodeReply(&rpc.Result{Value: v, Attachments: map[string]any{"a": "b"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := DecodeReply(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Value, v) || res.Attachments["a"] != "b" {
			t.Errorf("value %#v came back as %#v (%v)", v, res.Value, res.Attachments)
		}
	}

	// The provider that answered a call made through the node comes back.
	b, _ := EncodeReply(&rpc.Result{Value: "v", Provider: "127.0.0.1:20880"}, nil)
	if res, err := DecodeReply(b); err != nil || res.Provider != "127.0.0.1:20880" {
		t.Errorf("provider came back as %+v, %v", res, err)
	}

	ex := &rpc.Exception{Class: "java.lang.IllegalStateException", Message: "no"}
	for _, in := range []struct {
		res *rpc.Result
		err error
	}{{&rpc.Result{Exception: ex}, nil}, {nil, ex}} {
		b, _ := EncodeReply(in.res, in.err)
		res, err := DecodeReply(b)
		if err != nil || !reflect.DeepEqual(res.Exception, ex) {
			t.Errorf("exception came back as %+v, %v", res, err)
		}
	}

	for _, c := range []error{rpc.ErrNoProvider, rpc.ErrTimeout, rpc.ErrServiceNotFound, rpc.ErrPoolExhausted,
		rpc.ErrBadRequest, rpc.ErrConnection, rpc.ErrProvider} {
		b, _ := EncodeReply(nil, &rpc.CallError{Kind: c, Service: "s", Method: "m", Detail: "why"})
		// The wire names the category by its kind, as users see it.
		if kind := rpc.CategoryKind(c); !bytes.Contains(b, []byte(kind)) {
			t.Errorf("%v went out without its kind %q: %q", c, kind, b)
		}
		_, err := DecodeReply(b)
		var ce *rpc.CallError
		if !errors.As(err, &ce) || !errors.Is(err, c) || ce.Detail != "why" {
			t.Errorf("%v came back as %v", c, err)
		}
	}
	b, _ = EncodeReply(nil, errors.New("plain"))
	if _, err := DecodeReply(b); !errors.Is(err, rpc.ErrProvider) || !strings.Contains(err.Error(), "plain") {
		t.Errorf("plain error came back as %v", err)
	}
}

func TestCorrupt(t *testing.T) {
	good, _ := EncodeCall(&rpc.Invocation{Service: "s", Method: "m", Args: []any{"x"}})
	for _, b := range [][]byte{nil, {0x4f, 0xff}, []byte("garbage"), good[:len(good)-3], {0x91, 0x90}} {
		if _, err := DecodeReply(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeReply(%q) = %v, want ErrCorrupt", b, err)
		}
		if _, err := DecodeCall(b); err == nil {
			t.Errorf("DecodeCall(%q) succeeded", b)
		}
	}
}

func FuzzDecodeCall(f *testing.F) {
	b, _ := EncodeCall(&rpc.Invocation{Service: "s", Version: "1", Method: "m", ParamTypes: []string{"int"}, Args: []any{int32(1)},
		Attachments: map[string]any{"k": "v"}})
	f.Add(b)
	b, _ = EncodeCall(&rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"world", true, nil, int32(-70000)},
		Attachments: map[string]any{"timeout": "1000", "n": int32(3)}})
	f.Add(b)
	// Shared by every input, as by a stream of calls.
	var table protocol.StringTable
	var dec CallDecoder
	f.Fuzz(func(t *testing.T, b []byte) {
		// What the short path reads, the library reads the same, with
		// strings from a table or not.
		if short, ok := decodeShortCall(b, nil); ok {
			lib, err := decodeLibraryCall(b)
			if err != nil || !reflect.DeepEqual(short, lib) {
				t.Fatalf("short path %+v, library %+v, %v", short, lib, err)
			}
		}
		short, ok := decodeShortCall(b, nil)
		tabled, tok := decodeShortCall(b, &table)
		if ok != tok || !reflect.DeepEqual(short, tabled) {
			t.Fatalf("without a table %+v (%v), with one %+v (%v)", short, ok, tabled, tok)
		}
		inv, err := DecodeCall(b)
		// A CallDecoder changes nothing but when attachments are read,
		// whether the call before had the same head or not (dec is shared
		// by every input, and each is decoded twice), and it decodes into
		// storage of its own, as the SDK does: nothing of an earlier call
		// may stay.
		// The attachments are read only when asked for: a call that
		// DecodeCall refuses fails there at the latest.
		for range 2 {
			got := &rpc.Invocation{Method: "earlier", ParamTypes: make([]string, 1, 4), Args: []any{"earlier", 2, 3, 4}, Attachments: map[string]any{"a": "b"}}
			attachments, derr := dec.Decode(b, got)
			var aerr error
			if derr == nil && attachments != nil {
				got.Attachments, aerr = DecodeAttachments(attachments, got)
			}
			switch {
			case err == nil && (derr != nil || aerr != nil || !reflect.DeepEqual(inv, got)):
				t.Fatalf("DecodeCall %+v; CallDecoder %+v, %v, attachments %v", inv, got, derr, aerr)
			case err != nil && derr == nil && aerr == nil:
				t.Fatalf("DecodeCall failed (%v); CallDecoder read %+v", err, got)
			}
		}
		if err != nil {
			return
		}
		if _, err := EncodeCall(inv); err != nil {
			t.Fatalf("decoded call does not encode: %v", err)
		}
	})
}

// TestCallDecoderStream: a stream of calls through one CallDecoder, the
// same method with other arguments and attachments, another method,
// another group, reads as each call alone.
func TestCallDecoderStream(t *testing.T) {
	str := []string{"java.lang.String"}
	calls := []*rpc.Invocation{
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: str, Args: []any{"a"}},
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: str, Args: []any{"bb"}, Attachments: map[string]any{"k": "v"}},
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayBye", ParamTypes: str, Args: []any{"c"}},
		{Service: "org.example.Greeter", Version: "1.0.0", Group: "g", Method: "sayBye", ParamTypes: str, Args: []any{"d"}},
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: []string{"int", "int"}, Args: []any{int32(1), int32(2)}},
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: []string{"int", "int"}, Args: []any{int32(3), int32(4)}},
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "noArgs"},
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: str, Args: []any{"e"},
			Attachments: map[string]any{"big": int64(1) << 40, "long": strings.Repeat("v", 2000)}}, // the library reads these
		{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: str, Args: []any{"f"}},
	}
	var dec CallDecoder
	for i, c := range calls {
		b, err := EncodeCall(c)
		if err != nil {
			t.Fatal(err)
		}
		var got rpc.Invocation
		attachments, err := dec.Decode(b, &got)
		if attachments != nil {
			if got.Attachments, err = DecodeAttachments(attachments, &got); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil || !reflect.DeepEqual(&got, c) {
			t.Errorf("call %d: %+v, %v; want %+v", i, &got, err, c)
		}
	}
}

// TestDerivedAttachments: attachments that repeat the call's names travel
// as bits and come back as they were; others travel as they are.
func TestDerivedAttachments(t *testing.T) {
	base := rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Group: "g", Method: "sayHello",
		ParamTypes: []string{"java.lang.String"}, Args: []any{"w"}}
	tests := []struct {
		name        string
		attachments map[string]any
		left        []string // what travels as bits
	}{
		{"a Dubbo consumer's", map[string]any{"path": "org.example.Greeter", "interface": "org.example.Greeter", "version": "1.0.0", "group": "g", "timeout": "1000"},
			[]string{"path", "interface", "version", "group"}},
		{"only derived ones", map[string]any{"path": "org.example.Greeter", "group": "g"}, []string{"path", "group"}},
		{"other values", map[string]any{"path": "/other", "interface": "a.B", "version": "2.0.0", "group": int32(1)}, nil},
		{"a library value beside", map[string]any{"version": "1.0.0", "big": int64(1) << 40}, []string{"version"}},
	}
	for _, tt := range tests {
		inv := base
		inv.Attachments = tt.attachments
		b, err := EncodeCall(&inv)
		if err != nil {
			t.Fatal(err)
		}
		// The derived ones cost nothing: the call is as long as one
		// without them.
		kept := maps.Clone(tt.attachments)
		for _, k := range tt.left {
			delete(kept, k)
		}
		without := base
		without.Attachments = kept
		if b2, _ := EncodeCall(&without); len(b2) != len(b) {
			t.Errorf("%s: %d bytes, %d without %v", tt.name, len(b), len(b2), tt.left)
		}
		whole, err := DecodeCall(b)
		if err != nil || !reflect.DeepEqual(whole.Attachments, tt.attachments) {
			t.Errorf("%s: DecodeCall attachments %v, %v; want %v", tt.name, whole.Attachments, err, tt.attachments)
		}
		var dec CallDecoder
		var got rpc.Invocation
		raw, err := dec.Decode(b, &got)
		if err == nil && raw != nil {
			got.Attachments, err = DecodeAttachments(raw, &got)
		}
		if err != nil || !reflect.DeepEqual(got.Attachments, tt.attachments) {
			t.Errorf("%s: CallDecoder attachments %v, %v; want %v", tt.name, got.Attachments, err, tt.attachments)
		}
	}
}

// TestCorruptAttachments: attachments are checked only when read, and
// then say what is wrong with them.
func TestCorruptAttachments(t *testing.T) {
	b, err := EncodeCall(&rpc.Invocation{Service: "s", Method: "m", ParamTypes: []string{"int"}, Args: []any{int32(1)},
		Attachments: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	b = append(b[:len(b)-1], 0xff) // the map's end replaced
	var dec CallDecoder
	var inv rpc.Invocation
	attachments, err := dec.Decode(b, &inv)
	if err != nil || inv.Method != "m" || inv.Args[0] != int32(1) {
		t.Fatalf("Decode: %+v, %v", inv, err)
	}
	if m, err := DecodeAttachments(attachments, &inv); err == nil {
		t.Errorf("DecodeAttachments(%x) = %v, want an error", attachments, m)
	}
}

// TestShortCall: the calls a provider passes on most (names, strings,
// ints, string attachments) take the short path, the others the library's.
func TestShortCall(t *testing.T) {
	for _, c := range []struct {
		inv   *rpc.Invocation
		short bool
	}{
		{&rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", ParamTypes: []string{"java.lang.String"},
			Args: []any{"world"}, Attachments: map[string]any{"timeout": "1000", "path": "org.example.Greeter"}}, true},
		{&rpc.Invocation{Service: "s", Method: "add", ParamTypes: []string{"int", "int"}, Args: []any{int32(1), int32(2)}}, true},
		{&rpc.Invocation{Service: "s", Method: "hi", ParamTypes: []string{"java.lang.String"}, Args: []any{"héllo"}}, false},
		{&rpc.Invocation{Service: "s", Method: "m", ParamTypes: []string{"java.util.Map"}, Args: []any{map[string]any{"a": "b"}}}, false},
		{&rpc.Invocation{Service: "s", Method: "m", ParamTypes: []string{"long"}, Args: []any{int64(1)}}, false},
		{&rpc.Invocation{Service: "sé", Method: "m", ParamTypes: []string{"int"}, Args: []any{int32(1)}}, false},
	} {
		b, err := EncodeCall(c.inv)
		if err != nil {
			t.Fatal(err)
		}
		// A call encoded with its head known is the same call, whatever
		// the rest takes.
		if head, ok := AppendCallHead(nil, c.inv); ok {
			withHead, err := AppendCallWithHead([]byte("kept"), head, c.inv)
			if err != nil || string(withHead[:4]) != "kept" || !bytes.Equal(withHead[4:], b) {
				t.Errorf("%s(%v): with its head %x, %v; want %x", c.inv.Method, c.inv.Args, withHead, err, b)
			}
		} else if c.short {
			t.Errorf("%s(%v): the head of a short call has no short form", c.inv.Method, c.inv.Args)
		}
		_, short := decodeShortCall(b, nil)
		got, err := DecodeCall(b)
		if short != c.short || err != nil {
			t.Errorf("%s(%v): short path %v, want %v; DecodeCall error %v", c.inv.Method, c.inv.Args, short, c.short, err)
			continue
		}
		lib, _ := decodeLibraryCall(b)
		if !reflect.DeepEqual(got, lib) {
			t.Errorf("%s: DecodeCall %+v, library %+v", c.inv.Method, got, lib)
		}
	}
}

func FuzzDecodeReply(f *testing.F) {
	b, _ := EncodeReply(&rpc.Result{Value: []any{"a", int64(1)}}, nil)
	f.Add(b)
	b, _ = EncodeReply(nil, &rpc.Exception{Class: "c", Message: "m"})
	f.Add(b)
	b, _ = EncodeReply(&rpc.Result{Value: "Hello, world", Attachments: map[string]any{"k": int32(1)}, Provider: "h:1"}, nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := DecodeReply(b)
		if short, ok := decodeShortReply(b); ok {
			// The short path reads what the library reads.
			lib, libErr := decodeLibraryReply(b)
			if libErr != nil || !reflect.DeepEqual(short, lib) || err != nil {
				t.Fatalf("short %+v, library %+v (%v)", short, lib, libErr)
			}
			_ = res
		}
	})
}

// FuzzStringReply: a string reply written without a Result is the reply
// EncodeReply writes for it, byte for byte, and reads back as the string.
func FuzzStringReply(f *testing.F) {
	for _, s := range []string{"", "Hello, world", "ünïcode", strings.Repeat("x", 31), strings.Repeat("y", 1024)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := EncodeReply(&rpc.Result{Value: s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendStringReply([]byte("kept"), s)
		if string(got[:4]) != "kept" || !bytes.Equal(got[4:], want) {
			t.Fatalf("AppendStringReply(%q) = %x, EncodeReply %x", s, got, want)
		}
		if !utf8.ValidString(s) {
			return // hessian carries characters: invalid bytes do not come back
		}
		res, err := DecodeReply(got[4:])
		if err != nil || res.Value != s {
			t.Fatalf("%q came back as %+v, %v", s, res, err)
		}
	})
}

// The short encodings of calls and replies are the library's, byte for
// byte, and the calls and replies that have none take the library's way.
func TestShortEncodings(t *testing.T) {
	calls := []struct {
		inv   *rpc.Invocation
		short bool
	}{
		{&rpc.Invocation{Service: "org.example.Greeter", Method: "noArgs"}, true},
		{&rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Group: "g", Method: "sayHello",
			ParamTypes: []string{"java.lang.String"}, Args: []any{"world"}, Attachments: map[string]any{"timeout": "1000"}}, true},
		{&rpc.Invocation{Service: "s", Method: "m", ParamTypes: []string{"int", "boolean", "java.lang.Object"},
			Args: []any{int32(-70000), true, nil}, Attachments: map[string]any{"n": int32(300)}}, true},
		{&rpc.Invocation{Service: "s", Method: "m", ParamTypes: []string{"long"}, Args: []any{int64(1)}}, false},
		{&rpc.Invocation{Service: "s", Method: "m", ParamTypes: []string{"java.lang.String"}, Args: []any{"héllo"}}, false},
		{&rpc.Invocation{Service: "s", Method: "m", Attachments: map[string]any{"_class": "not a POJO"}}, false},
	}
	for _, c := range calls {
		_, short := appendShortCall(nil, c.inv)
		if short != c.short {
			t.Errorf("%s%v: short form %v, want %v", c.inv.Method, c.inv.Args, short, c.short)
		}
		got, err := EncodeCall(c.inv)
		if err != nil {
			t.Fatal(err)
		}
		lib, err := encodeLibraryCall(c.inv)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, lib) {
			t.Errorf("%s%v: % x, library % x", c.inv.Method, c.inv.Args, got, lib)
		}
	}
	replies := []struct {
		res   *rpc.Result
		short bool
	}{
		{&rpc.Result{Value: "Hello, world"}, true},
		{&rpc.Result{Value: int32(5), Attachments: map[string]any{"a": "b"}, Provider: "127.0.0.1:20880"}, true},
		{&rpc.Result{}, true},
		{&rpc.Result{Value: int64(5)}, false},
		{&rpc.Result{Value: "x", Attachments: map[string]any{"a": 1.5}}, false},
	}
	for _, c := range replies {
		_, short := appendShortReply(nil, c.res)
		if short != c.short {
			t.Errorf("%+v: short form %v, want %v", c.res, short, c.short)
		}
		got, err := EncodeReply(c.res, nil)
		if err != nil {
			t.Fatal(err)
		}
		lib, err := encodeLibraryReply(c.res, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, lib) {
			t.Errorf("%+v: % x, library % x", c.res, got, lib)
		}
		if _, ok := decodeShortReply(got); ok != c.short {
			t.Errorf("%+v: decoded by the short path %v, want %v", c.res, ok, c.short)
		}
		back, err := DecodeReply(got)
		if err != nil || !reflect.DeepEqual(back.Value, c.res.Value) || back.Provider != c.res.Provider || len(back.Attachments) != len(c.res.Attachments) {
			t.Errorf("%+v came back as %+v, %v", c.res, back, err)
		}
	}
}

// TestEncodeString: the quick string encoding writes what the library
// writes, byte for byte.
func TestEncodeString(t *testing.T) {
	for _, s := range []string{"", "a", strings.Repeat("x", 31), strings.Repeat("x", 32), strings.Repeat("y", 1023),
		strings.Repeat("z", 1024), strings.Repeat("q", 70000), "héllo", "日本", "emoji 😀"} {
		quick := hessian.NewEncoder()
		encodeString(quick, s)
		lib := hessian.NewEncoder()
		if err := lib.Encode(s); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(quick.Buffer(), lib.Buffer()) {
			t.Errorf("%.20q (%d bytes): % x, library % x", s, len(s), quick.Buffer()[:min(8, len(quick.Buffer()))], lib.Buffer()[:min(8, len(lib.Buffer()))])
		}
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add([]byte{frameCall, 7, 0x90, 0x4e, 'c', 'a', 'l', 'l'})
	f.Add([]byte{frameCancel, 0xff, 0x01})
	f.Add([]byte{frameReply, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, rest, err := parseFrame(b)
		if err == nil && len(rest) > len(b)-2 {
			t.Fatalf("rest %d bytes of a %d-byte frame", len(rest), len(b))
		}
	})
}
