package protocol

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	hessian "github.com/apache/dubbo-go-hessian2"
)

func libEncode(t testing.TB, vs ...any) []byte {
	t.Helper()
	e := hessian.NewEncoder()
	for _, v := range vs {
		if err := e.Encode(v); err != nil {
			t.Fatalf("library encode %T: %v", v, err)
		}
	}
	return e.Buffer()
}

// libDecode decodes one value and reports how many bytes it took.
func libDecode(b []byte) (v any, n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errPanic
		}
	}()
	d := hessian.NewDecoder(b)
	v, err = d.Decode()
	return v, len(b) - d.Buffered(), err
}

var errPanic = errTruncated // any non-nil error will do

var fastSamples = []any{
	nil, true, false,
	"", "a", "sayHello", strings.Repeat("x", 31), strings.Repeat("x", 32), strings.Repeat("x", 1023),
	strings.Repeat("x", 1024), strings.Repeat("x", 4096),
	int32(0), int32(-16), int32(-17), int32(47), int32(48), int32(-2048), int32(2047), int32(2048), int32(-2049),
	int32(-262144), int32(262143), int32(262144), int32(-262145), int32(-1 << 31), int32(1<<31 - 1),
}

// Values the fast path must leave to the library.
var slowSamples = []any{
	strings.Repeat("x", 4097), "héllo", "日本", "\U0001F600", int64(1), 1.5, []byte{1}, []any{"a"},
	map[any]any{"a": "b"},
}

func TestFastEncodeMatchesLibrary(t *testing.T) {
	for _, v := range fastSamples {
		got, ok := appendFastValue(nil, v)
		if !ok {
			t.Errorf("%T %.20v: no fast form", v, v)
			continue
		}
		if want := libEncode(t, v); !bytes.Equal(got, want) {
			t.Errorf("%T %.20v: fast % x, library % x", v, v, got, want)
		}
		m := map[string]any{"k": v}
		gotMap, ok := appendFastMap(nil, m, "", "")
		if want := libEncode(t, m); !ok || !bytes.Equal(gotMap, want) {
			t.Errorf("map of %T %.20v: fast % x (%v), library % x", v, v, gotMap, ok, want)
		}
	}
	for _, v := range slowSamples {
		if b, ok := appendFastValue([]byte{1}, v); ok || !bytes.Equal(b, []byte{1}) {
			t.Errorf("%T %.20v has a fast form % x", v, v, b)
		}
		if b, ok := appendFastMap([]byte{1}, map[string]any{"k": v}, "", ""); ok || !bytes.Equal(b, []byte{1}) {
			t.Errorf("map of %T %.20v has a fast form % x", v, v, b)
		}
	}
	for _, m := range []map[string]any{{hessian.ClassKey: "a.B"}, {"a": "1", "b": "2", hessian.ClassKey: "a.B", "c": "3"}} {
		if b, ok := appendFastMap([]byte{1}, m, "", ""); ok || !bytes.Equal(b, []byte{1}) {
			t.Errorf("%v has a fast form % x; the library writes it as an object", m, b)
		}
	}
	// The extra entry replaces one of the same key.
	got, ok := appendFastMap(nil, map[string]any{"dubbo": "x"}, "dubbo", DubboVersion)
	if want := libEncode(t, map[string]any{"dubbo": DubboVersion}); !ok || !bytes.Equal(got, want) {
		t.Errorf("extra entry: % x, want % x", got, want)
	}
}

func TestFastDecodeMatchesLibrary(t *testing.T) {
	for _, v := range append(append([]any{}, fastSamples...), slowSamples...) {
		b := libEncode(t, v, "next")
		want, n, err := libDecode(b)
		if err != nil {
			t.Fatalf("%T: library: %v", v, err)
		}
		got, end, ok := fastValue(b, 0, nil)
		if !ok {
			continue // left to the library
		}
		if !reflect.DeepEqual(got, want) || end != n {
			t.Errorf("%T %.20v: fast %v up to %d, library %v up to %d", v, v, got, end, want, n)
		}
		var in interner
		if got, _, _ := fastValue(b, 0, &in); !reflect.DeepEqual(got, want) {
			t.Errorf("%T %.20v: interned %v", v, v, got)
		}
	}
	m := map[string]any{"path": "a.B", "timeout": "1000", "n": int32(-300), "t": true, "z": nil}
	b := libEncode(t, m)
	got, end, ok := fastMap(b, 0, &interner{})
	if !ok || end != len(b) || !reflect.DeepEqual(got, m) {
		t.Fatalf("fast map %v up to %d (%v), want %v", got, end, ok, m)
	}
}

// checkFastDecode: whatever the fast paths accept, the library reads as the
// same value from the same bytes, ending at the same place.
func checkFastDecode(t *testing.T, data []byte) {
	if s, end, ok := fastString(data, 0); ok {
		want, n, err := libDecode(data)
		if err != nil || want != string(s) || n != end {
			t.Fatalf("fast string %q up to %d; library %v up to %d, %v", s, end, want, n, err)
		}
	}
	if v, end, ok := fastValue(data, 0, &interner{}); ok {
		want, n, err := libDecode(data)
		if err != nil || !reflect.DeepEqual(v, want) || n != end {
			t.Fatalf("fast value %#v up to %d; library %#v up to %d, %v", v, end, want, n, err)
		}
		if e, ok := fastEnd(data, 0); !ok || e != end {
			t.Fatalf("fastEnd %d %v, fastValue ends at %d", e, ok, end)
		}
	}
	m, end, ok := fastMap(data, 0, &interner{})
	if next, skipOK := SkipShortMap(data, 0); skipOK != ok || ok && next != end {
		t.Fatalf("SkipShortMap to %d %v; fastMap to %d %v", next, skipOK, end, ok)
	}
	if ok {
		want, n, err := libDecode(data)
		lm, isMap := want.(map[any]any)
		if err != nil || !isMap || len(lm) != len(m) || n != end {
			t.Fatalf("fast map %v up to %d; library %#v up to %d, %v", m, end, want, n, err)
		}
		for k, v := range lm {
			if ks, ok := k.(string); !ok || !reflect.DeepEqual(m[ks], v) {
				t.Fatalf("fast map %v; library %v", m, lm)
			}
		}
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, v := range fastSamples {
		f.Add(libEncode(f, v))
	}
	f.Add(libEncode(f, map[string]any{"path": "a.B", "timeout": "1000", "n": int32(7)}))
	f.Add([]byte{'H', 0x01, 'a', 0x01, 'b', 0x01, 'a', 0x01, 'c', 'Z'})
	f.Add([]byte{0x30, 0x05, 'a'})
	f.Fuzz(checkFastDecode)
}

// A body that mixes fast values with library values, including a
// reference from one argument to another, is written exactly as the
// library writes it and reads back the same.
func TestMixedFastAndLibraryValues(t *testing.T) {
	shared := map[string]any{"k": "v"}
	req := &Request{ID: 3, TwoWay: true, Path: "a.B", Version: "1.0", Method: "m",
		ParamDesc:   "Ljava/lang/String;Ljava/util/Map;Ljava/util/Map;ILjava/lang/String;",
		Args:        []any{"x", shared, shared, int32(5), "héllo"},
		Attachments: map[string]any{"list": []any{"a"}}}
	got, err := NewEncoder(0).AppendRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	want := libEncode(t, DubboVersion, "a.B", "1.0", "m", req.ParamDesc, "x", shared, shared, int32(5), "héllo", req.Attachments)
	if !bytes.Equal(got[HeaderSize:], want) {
		t.Fatalf("body\n% x\nlibrary\n% x", got[HeaderSize:], want)
	}
	var bd BodyDecoder
	for i := 0; i < 2; i++ { // the second time with a warm string table
		h, _ := ParseHeader(got)
		back, err := bd.DecodeRequest(Frame{h, got[HeaderSize:]})
		if err != nil {
			t.Fatal(err)
		}
		if back.Args[0] != "x" || back.Args[3] != int32(5) || back.Args[4] != "héllo" ||
			!reflect.DeepEqual(back.Args[1], map[any]any{"k": "v"}) || !reflect.DeepEqual(back.Args[2], back.Args[1]) ||
			!reflect.DeepEqual(back.Attachments, map[string]any{"list": []any{"a"}}) || back.Method != "m" {
			t.Fatalf("decoded %+v", back)
		}
	}
}

func TestInternerBounded(t *testing.T) {
	var in interner
	for i := 0; i < 3*maxInternEntries; i++ {
		s := strings.Repeat("x", i%200)
		if got := in.get([]byte(s)); got != s {
			t.Fatalf("got %v, want %q", got, s)
		}
	}
	if len(in.m) > maxInternEntries {
		t.Fatalf("%d entries", len(in.m))
	}
}

// IsASCII looks at every byte, eight at a time and one by one.
func TestIsASCII(t *testing.T) {
	for n := range 20 {
		s := []byte(strings.Repeat("a", n))
		if !IsASCII(string(s)) {
			t.Errorf("%q: not ASCII", s)
		}
		for i := range n {
			s[i] = 0x80
			if IsASCII(string(s)) {
				t.Errorf("%q: ASCII, with 0x80 at %d", s, i)
			}
			s[i] = 'a'
		}
	}
}
