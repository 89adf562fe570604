package wire

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

func TestProtoCallRoundTrip(t *testing.T) {
	tests := []struct {
		ref MethodRef
		md  rpc.Metadata
		req []byte
	}{
		{MethodRef{0, 0}, nil, nil},
		{MethodRef{3, 1}, rpc.Metadata{{Key: "tri-service-version", Value: "1.0.0"}, {Key: "x-id", Value: "7"}, {Key: "x-id", Value: "8"}}, []byte("\x0a\x05world")},
		{MethodRef{1 << 20, 300}, rpc.Metadata{{Key: "trace-bin", Value: "\x00\xff\x01"}, {Key: "", Value: ""}}, bytes.Repeat([]byte{0xff}, 1000)},
	}
	for _, tt := range tests {
		head, err := AppendProtoCall([]byte("prefix"), tt.ref, tt.md)
		if err != nil {
			t.Fatal(err)
		}
		ref, rawMD, req, err := ParseProtoCall(append(head[len("prefix"):], tt.req...))
		if err != nil {
			t.Fatalf("%+v: %v", tt.ref, err)
		}
		md, err := ParseMetadata(rawMD)
		if err != nil || ref != tt.ref || !reflect.DeepEqual(md, tt.md) || !bytes.Equal(req, tt.req) {
			t.Errorf("round trip of %+v %q %q: %+v %q %q, %v", tt.ref, tt.md, tt.req, ref, md, req, err)
		}
	}
}

func TestProtoReplyRoundTrip(t *testing.T) {
	trailer := rpc.Metadata{{Key: "x-took", Value: "3ms"}, {Key: "x-bin", Value: "\x00"}}
	for _, tr := range []rpc.Metadata{nil, trailer} {
		head, err := AppendProtoOK(nil, tr)
		if err != nil {
			t.Fatal(err)
		}
		resp, md, st, err := ParseProtoReply(append(head, "response"...))
		if err != nil || st != nil || string(resp) != "response" || !reflect.DeepEqual(md, tr) {
			t.Errorf("OK with trailer %q: %q %q %v, %v", tr, resp, md, st, err)
		}
		for _, want := range []*Status{
			{Code: codes.NotFound, Message: "no such user"},
			{Code: codes.Internal, Message: "", Details: []byte("\x08\x0d")},
			{Code: codes.Unauthenticated, Message: strings.Repeat("é", 300)},
		} {
			resp, md, st, err := ParseProtoReply(AppendProtoError(nil, want, tr))
			if err != nil || resp != nil || !reflect.DeepEqual(st, want) || !reflect.DeepEqual(md, tr) {
				t.Errorf("%v with trailer %q: %q %q %+v, %v", want, tr, resp, md, st, err)
			}
		}
	}
	// A code a handler should not give goes out as Unknown, and so does OK
	// given as a failure.
	for _, code := range []codes.Code{codes.OK, 17, 1000} {
		_, _, st, err := ParseProtoReply(AppendProtoError(nil, &Status{Code: code, Message: "m"}, nil))
		if err != nil || st.Code != codes.Unknown || st.Message != "m" {
			t.Errorf("code %d came back as %+v, %v", code, st, err)
		}
	}
	// Trailer past the bounds is left out; the status still goes.
	huge := rpc.Metadata{{Key: "big", Value: strings.Repeat("x", maxMetadataBytes)}}
	_, md, st, err := ParseProtoReply(AppendProtoError(nil, &Status{Code: codes.Aborted, Message: "m"}, huge))
	if err != nil || md != nil || st.Code != codes.Aborted {
		t.Errorf("huge trailer: %q %+v, %v", md, st, err)
	}
}

func TestMetadataBounds(t *testing.T) {
	many := make(rpc.Metadata, maxMetadataEntries+1)
	big := rpc.Metadata{{Key: "k", Value: strings.Repeat("v", maxMetadataBytes)}}
	for _, md := range []rpc.Metadata{many, big} {
		if _, err := AppendMetadata(nil, md); !errors.Is(err, ErrMetadata) {
			t.Errorf("%d entries, %d bytes: %v, want ErrMetadata", len(md), len(md[0].Value), err)
		}
	}
	if _, err := AppendMetadata(nil, many[:maxMetadataEntries]); err != nil {
		t.Errorf("%d entries: %v", maxMetadataEntries, err)
	}
}

func TestProtoCorrupt(t *testing.T) {
	ok, _ := AppendProtoOK(nil, rpc.Metadata{{Key: "k", Value: "v"}})
	for _, b := range [][]byte{
		nil,
		{0xff},                            // no code
		{17, 0},                           // a code past Unauthenticated
		{0, 5, 1, 1},                      // trailer longer than the reply
		ok[:len(ok)-1],                    // trailer cut
		{5, 0, 10, 'a'},                   // message longer than the reply
		{0, 3, 1, 0x80, 0x80},             // bad key length
		{0, 4, 2, 0, 0, 0},                // two entries declared, one there
		{0, 4, 1, 0, 0, 'x'},              // bytes after the entries
		{0, 2, 0xff, 0xff},                // an absurd count
		{0, 0xff, 0xff, 0xff, 0xff, 0x0f}, // a trailer over the bound
	} {
		if _, _, _, err := ParseProtoReply(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseProtoReply(%q) = %v, want ErrCorrupt", b, err)
		}
	}
	for _, b := range [][]byte{nil, {1}, {0x80}, {1, 1, 5, 0}, {0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0}} {
		if _, _, _, err := ParseProtoCall(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseProtoCall(%q) = %v, want ErrCorrupt", b, err)
		}
	}
}

// protoEcho answers unary protobuf calls with their request, the method's
// indices and metadata in the trailer; Dubbo calls it refuses.
type protoEcho struct{ inline bool }

func (protoEcho) Prepare([]byte) (Runner, bool) { return refusal(nil), true }

func (e protoEcho) PrepareProto(call []byte) (Runner, bool) {
	return RunFunc(func(ctx context.Context) []byte {
		ref, rawMD, req, err := ParseProtoCall(call)
		if err != nil {
			return StatusReply(codes.Internal, err.Error())
		}
		md, _ := ParseMetadata(rawMD)
		if string(req) == "fail" {
			return AppendProtoError(nil, &Status{Code: codes.FailedPrecondition, Message: "asked to"}, md)
		}
		md = append(md, rpc.MetadataField{Key: "ref", Value: string(rune('0'+ref.Service)) + "/" + string(rune('0'+ref.Method))})
		b, _ := AppendProtoOK(nil, md)
		return append(b, req...)
	}), e.inline
}

// callProto makes one unary protobuf call on l and waits for its reply.
func callProto(ctx context.Context, l *Link, ref MethodRef, md rpc.Metadata, req []byte) (resp []byte, trailer rpc.Metadata, st *Status, err error) {
	head, err := AppendProtoCall(nil, ref, md)
	if err != nil {
		return nil, nil, nil, err
	}
	ch := make(chan []byte, 1)
	errc := make(chan error, 1)
	l.CallProtoAsync(ctx, head, req, func(reply []byte, err error) {
		ch <- reply
		errc <- err
	})
	reply, err := <-ch, <-errc
	if err != nil {
		return nil, nil, nil, err
	}
	return ParseProtoReply(reply)
}

// Unary protobuf calls cross the link beside Dubbo ones: the request, the
// method's indices and the metadata reach the other side, and the
// response or status and the trailer come back.
func TestLinkProtoCall(t *testing.T) {
	for _, inline := range []bool{false, true} {
		a, _ := pair(t, nil, protoEcho{inline})
		md := rpc.Metadata{{Key: "x-user", Value: "ann"}}
		resp, trailer, st, err := callProto(context.Background(), a, MethodRef{2, 3}, md, []byte("req"))
		want := rpc.Metadata{{Key: "x-user", Value: "ann"}, {Key: "ref", Value: "2/3"}}
		if err != nil || st != nil || string(resp) != "req" || !reflect.DeepEqual(trailer, want) {
			t.Errorf("inline=%v: %q %q %v, %v", inline, resp, trailer, st, err)
		}
		_, trailer, st, err = callProto(context.Background(), a, MethodRef{}, md, []byte("fail"))
		if err != nil || st == nil || st.Code != codes.FailedPrecondition || !reflect.DeepEqual(trailer, md) {
			t.Errorf("inline=%v: failed call: %q %v, %v", inline, trailer, st, err)
		}
		// Dubbo calls still go to Prepare.
		if got, err := a.Call(context.Background(), []byte("dubbo")); err != nil || len(got) != 0 {
			t.Errorf("inline=%v: a Dubbo call beside: %q, %v", inline, got, err)
		}
	}
}

// A side that serves no protobuf calls answers them Unimplemented, a reply
// too large to send ResourceExhausted.
func TestLinkProtoRefused(t *testing.T) {
	a, _ := pair(t, nil, echo(true))
	_, _, st, err := callProto(context.Background(), a, MethodRef{}, nil, []byte("x"))
	if err != nil || st == nil || st.Code != codes.Unimplemented {
		t.Errorf("protobuf call to a Dubbo-only side: %v, %v", st, err)
	}
	big := invokerFunc{f: func(context.Context, []byte) []byte { return make([]byte, maxFramed+1) }}
	b, _ := pair(t, nil, protoInvokerFunc{big})
	_, _, st, err = callProto(context.Background(), b, MethodRef{}, nil, nil)
	if err != nil || st == nil || st.Code != codes.ResourceExhausted {
		t.Errorf("a reply past the frame bound: %v, %v", st, err)
	}
}

// protoInvokerFunc serves protobuf calls with its invokerFunc.
type protoInvokerFunc struct{ invokerFunc }

func (p protoInvokerFunc) PrepareProto(call []byte) (Runner, bool) { return p.Prepare(call) }

// FuzzParseProtoCall: whatever a peer sends as a unary protobuf call
// either is refused with ErrCorrupt or parses into a method, metadata and
// request that encode back to a call that parses the same.
func FuzzParseProtoCall(f *testing.F) {
	head, _ := AppendProtoCall(nil, MethodRef{2, 1}, rpc.Metadata{{Key: "tri-service-version", Value: "1.0.0"}, {Key: "x-bin", Value: "\x00\xff"}})
	f.Add(append(head, "\x0a\x05world"...))
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x08, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ref, rawMD, req, err := ParseProtoCall(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		md, err := ParseMetadata(rawMD)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("metadata error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := AppendProtoCall(nil, ref, md)
		if err != nil {
			t.Fatalf("parsed metadata %q does not encode: %v", md, err)
		}
		ref2, rawMD2, req2, err := ParseProtoCall(append(again, req...))
		md2, err2 := ParseMetadata(rawMD2)
		if err != nil || err2 != nil || ref2 != ref || !reflect.DeepEqual(md2, md) || !bytes.Equal(req2, req) {
			t.Fatalf("%+v %q %q came back as %+v %q %q (%v, %v)", ref, md, req, ref2, md2, req2, err, err2)
		}
	})
}

// FuzzParseProtoReply: whatever a plugin answers a unary protobuf call
// either is refused with ErrCorrupt or parses into a response or a status
// with a code the node can pass on, and a trailer, which encode back to a
// reply that parses the same.
func FuzzParseProtoReply(f *testing.F) {
	ok, _ := AppendProtoOK(nil, rpc.Metadata{{Key: "x-took", Value: "1ms"}})
	f.Add(append(ok, "\x0a\x0cHello, world"...))
	f.Add(AppendProtoError(nil, &Status{Code: codes.NotFound, Message: "no such user", Details: []byte("\x08\x05")}, rpc.Metadata{{Key: "x-why", Value: "gone"}}))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, trailer, st, err := ParseProtoReply(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		var again []byte
		if st == nil {
			if again, err = AppendProtoOK(nil, trailer); err != nil {
				t.Fatalf("parsed trailer %q does not encode: %v", trailer, err)
			}
			again = append(again, resp...)
		} else {
			if st.Code == codes.OK || st.Code > maxCode {
				t.Fatalf("parsed a failure with code %d", st.Code)
			}
			again = AppendProtoError(nil, st, trailer)
		}
		resp2, trailer2, st2, err := ParseProtoReply(again)
		if err != nil || !bytes.Equal(resp2, resp) || !reflect.DeepEqual(trailer2, trailer) || !reflect.DeepEqual(st2, st) {
			t.Fatalf("%q %q %+v came back as %q %q %+v, %v", resp, trailer, st, resp2, trailer2, st2, err)
		}
	})
}
