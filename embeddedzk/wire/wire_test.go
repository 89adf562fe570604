package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func stat() Stat {
	return Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: 6,
		Aversion: 7, EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}
}

func acls() []ACL {
	return []ACL{{Perms: PermAll, ID: WorldAnyone}, {Perms: PermRead, ID: ID{"digest", "u:h"}}}
}

// Every record type survives encode → decode unchanged.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Record
		out  Record
	}{
		{"ConnectRequest", &ConnectRequest{LastZxidSeen: 9, TimeOut: 30000, SessionID: 77, Passwd: make([]byte, 16)}, &ConnectRequest{}},
		{"ConnectRequestRO", &ConnectRequest{TimeOut: 1, Passwd: make([]byte, 16), ReadOnly: true, HasReadOnly: true}, &ConnectRequest{}},
		{"ConnectResponse", &ConnectResponse{TimeOut: 4000, SessionID: 5, Passwd: bytes.Repeat([]byte{7}, 16)}, &ConnectResponse{}},
		{"ConnectResponseRO", &ConnectResponse{TimeOut: 4000, SessionID: 5, Passwd: bytes.Repeat([]byte{7}, 16), HasReadOnly: true}, &ConnectResponse{}},
		{"RequestHeader", &RequestHeader{Xid: 5, Type: OpGetChildren2}, &RequestHeader{}},
		{"ReplyHeader", &ReplyHeader{Xid: -1, Zxid: -1, Err: ErrNoNode}, &ReplyHeader{}},
		{"Stat", ptr(stat()), &Stat{}},
		{"ACL", &ACL{Perms: 3, ID: ID{"ip", "127.0.0.1"}}, &ACL{}},
		{"CreateRequest", &CreateRequest{Path: "/a", Data: []byte("x"), ACL: acls(), Flags: 3}, &CreateRequest{}},
		{"CreateRequestNullData", &CreateRequest{Path: "/a", ACL: acls()}, &CreateRequest{}},
		{"CreateTTLRequest", &CreateTTLRequest{Path: "/a", Data: []byte{}, ACL: acls(), Flags: 5, TTL: 100}, &CreateTTLRequest{}},
		{"CreateResponse", &CreateResponse{Path: "/a0000000001"}, &CreateResponse{}},
		{"Create2Response", &Create2Response{Path: "/a", Stat: stat()}, &Create2Response{}},
		{"PathVersionRequest", &PathVersionRequest{Path: "/a", Version: -1}, &PathVersionRequest{}},
		{"PathWatchRequest", &PathWatchRequest{Path: "/a", Watch: true}, &PathWatchRequest{}},
		{"PathRequest", &PathRequest{Path: "/a"}, &PathRequest{}},
		{"StatResponse", &StatResponse{Stat: stat()}, &StatResponse{}},
		{"GetDataResponse", &GetDataResponse{Data: []byte("hello"), Stat: stat()}, &GetDataResponse{}},
		{"GetDataResponseNull", &GetDataResponse{Stat: stat()}, &GetDataResponse{}},
		{"SetDataRequest", &SetDataRequest{Path: "/a", Data: []byte("d"), Version: 3}, &SetDataRequest{}},
		{"GetACLResponse", &GetACLResponse{ACL: acls(), Stat: stat()}, &GetACLResponse{}},
		{"SetACLRequest", &SetACLRequest{Path: "/a", ACL: acls(), Version: 1}, &SetACLRequest{}},
		{"GetChildrenResponse", &GetChildrenResponse{Children: []string{"a", "b"}}, &GetChildrenResponse{}},
		{"GetChildren2Response", &GetChildren2Response{Children: []string{"a"}, Stat: stat()}, &GetChildren2Response{}},
		{"MultiHeader", &MultiHeader{Type: OpCreate, Done: false, Err: -1}, &MultiHeader{}},
		{"IntResponse", &IntResponse{N: -101}, &IntResponse{}},
		{"AuthPacket", &AuthPacket{Scheme: "digest", Auth: []byte("user:password")}, &AuthPacket{}},
		{"SetWatches", &SetWatches{RelativeZxid: 4, DataWatches: []string{"/a"}, ExistWatches: []string{"/b"}, ChildWatches: []string{"/c"}}, &SetWatches{}},
		{"SetWatches2", &SetWatches{V2: true, RelativeZxid: 4, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: []string{},
			PersistentWatches: []string{"/p"}, PersistentRecursive: []string{"/r"}}, &SetWatches{V2: true}},
		{"AddWatchRequest", &AddWatchRequest{Path: "/a", Mode: 1}, &AddWatchRequest{}},
		{"WatchesRequest", &WatchesRequest{Path: "/a", Type: WatcherAny}, &WatchesRequest{}},
		{"StringsResponse", &StringsResponse{Strings: []string{"/e1", "/e2"}}, &StringsResponse{}},
		{"WhoAmIResponse", &WhoAmIResponse{Clients: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "user"}}}, &WhoAmIResponse{}},
		{"WatcherEvent", &WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: "/a"}, &WatcherEvent{}},
		{"ReconfigRequest", &ReconfigRequest{JoiningServers: "j", LeavingServers: "l", NewMembers: "n", CurConfigID: -1}, &ReconfigRequest{}},
		{"BufferRecord", &BufferRecord{Data: []byte("tok")}, &BufferRecord{}},
		{"MultiRequest", &MultiRequest{Ops: []MultiOp{
			{OpCreate, &CreateRequest{Path: "/a", Data: []byte{}, ACL: acls()}},
			{OpCreateTTL, &CreateTTLRequest{Path: "/t", Data: []byte{}, ACL: acls(), Flags: 5, TTL: 9}},
			{OpSetData, &SetDataRequest{Path: "/a", Data: []byte("x"), Version: -1}},
			{OpCheck, &PathVersionRequest{Path: "/a", Version: 1}},
			{OpDelete, &PathVersionRequest{Path: "/a", Version: -1}},
		}}, &MultiRequest{}},
		{"MultiReadRequest", &MultiRequest{Read: true, Ops: []MultiOp{
			{OpGetData, &PathWatchRequest{Path: "/a"}},
			{OpGetChildren, &PathWatchRequest{Path: "/"}},
		}}, &MultiRequest{Read: true}},
		{"MultiResponse", &MultiResponse{Results: []MultiResult{
			{Type: OpCreate, Resp: &CreateResponse{Path: "/a"}},
			{Type: OpCreate2, Resp: &Create2Response{Path: "/b", Stat: stat()}},
			{Type: OpSetData, Resp: &StatResponse{Stat: stat()}},
			{Type: OpDelete},
			{Type: OpCheck},
			{Type: OpError, Err: ErrBadVersion},
			{Type: OpGetData, Resp: &GetDataResponse{Data: []byte("d"), Stat: stat()}},
			{Type: OpGetChildren, Resp: &GetChildrenResponse{Children: []string{"x"}}},
		}}, &MultiResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Marshal(tt.in)
			if err := Unmarshal(b, tt.out); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(tt.in, tt.out) {
				t.Fatalf("round trip changed the record:\n in: %#v\nout: %#v", tt.in, tt.out)
			}
			// Every strict prefix must fail to decode, not panic or succeed silently
			// (records with optional trailing fields are exempt for the last byte).
			for i := 0; i < len(b)-1; i++ {
				fresh := reflect.New(reflect.TypeOf(tt.out).Elem()).Interface().(Record)
				if mr, ok := tt.out.(*MultiRequest); ok {
					fresh.(*MultiRequest).Read = mr.Read
				}
				if sw, ok := tt.out.(*SetWatches); ok {
					fresh.(*SetWatches).V2 = sw.V2
				}
				_ = Unmarshal(b[:i], fresh)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The worked frames of PROTOCOLS.md §A.15 decode and re-encode byte for byte.
func TestWorkedFrames(t *testing.T) {
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("java connect request", func(t *testing.T) {
		b := unhex("0000002d 00000000 0000000000000000 00007530 0000000000000000 00000010 00000000000000000000000000000000 00")
		var r ConnectRequest
		if err := Unmarshal(b[4:], &r); err != nil {
			t.Fatal(err)
		}
		if !r.HasReadOnly || r.TimeOut != 30000 || len(r.Passwd) != 16 {
			t.Fatalf("got %+v", r)
		}
		if got := AppendFrame(nil, &r); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, want %x", got, b)
		}
	})
	t.Run("getChildren2 request", func(t *testing.T) {
		b := unhex("00000013 00000005 0000000c 00000006 2f647562626f 01")
		var h RequestHeader
		d := NewDecoder(b[4:])
		h.Decode(d)
		req, err := DecodeRequest(h.Type, b[4+d.Offset():])
		if err != nil {
			t.Fatal(err)
		}
		want := &PathWatchRequest{Path: "/dubbo", Watch: true}
		if h.Xid != 5 || h.Type != OpGetChildren2 || !reflect.DeepEqual(req, want) {
			t.Fatalf("got %+v %+v", h, req)
		}
	})
	t.Run("notification", func(t *testing.T) {
		p := "/dubbo/org.apache.dubbo.demo.DemoService/providers"
		got := AppendFrame(nil, &ReplyHeader{Xid: -1, Zxid: -1}, &WatcherEvent{Type: EventNodeChildrenChanged, State: StateSyncConnected, Path: p})
		want := append(unhex("0000004e ffffffff ffffffffffffffff 00000000 00000004 00000003 00000032"), p...)
		if !bytes.Equal(got, want) {
			t.Fatalf("got %x\nwant %x", got, want)
		}
	})
	t.Run("ping reply", func(t *testing.T) {
		got := AppendFrame(nil, &ReplyHeader{Xid: XidPing, Zxid: 0x2a})
		want := unhex("00000010 fffffffe 000000000000002a 00000000")
		if !bytes.Equal(got, want) {
			t.Fatalf("got %x want %x", got, want)
		}
	})
}

// Responses never carry a null string or vector: go-zookeeper cannot decode them.
func TestNoNullStringsOrVectors(t *testing.T) {
	b := Marshal(&GetChildrenResponse{}, &CreateResponse{}, &StringsResponse{})
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("got %x want %x", b, want)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		op   OpCode
		body []byte
		want error
	}{
		{"unknown op", 55, nil, ErrUnknownOp},
		{"notification is not a request", OpNotification, nil, ErrUnknownOp},
		{"short", OpGetData, []byte{0, 0}, ErrShortBuffer},
		{"string longer than frame", OpGetData, []byte{0, 0, 0, 9, '/'}, ErrBadLength},
		{"negative length", OpGetData, []byte{0xff, 0xff, 0xff, 0xf0}, ErrBadLength},
		{"huge vector", OpSetWatches, append(make([]byte, 8), 0x7f, 0xff, 0xff, 0xff), ErrBadLength},
		{"getData in multi", OpMulti, Marshal(&MultiHeader{Type: OpGetData, Err: -1}, &PathWatchRequest{Path: "/a"}), ErrBadMultiOp},
		{"create in multiRead", OpMultiRead, Marshal(&MultiHeader{Type: OpCreate, Err: -1}), ErrBadMultiOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest(tt.op, tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReadFrameLimit(t *testing.T) {
	big := AppendFrame(nil, &BufferRecord{Data: make([]byte, 2000)})
	if _, err := ReadFrame(bytes.NewReader(big), 1024, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("got %v, want ErrFrameTooLarge", err)
	}
	b, err := ReadFrame(bytes.NewReader(big), 4096, nil)
	if err != nil || len(b) != 2004 {
		t.Fatalf("got %d bytes, %v", len(b), err)
	}
}

func TestCodeStrings(t *testing.T) {
	if OpCreate2.String() != "create2" || OpCode(999).String() != "op(999)" {
		t.Fatal("op names")
	}
	if ErrNoNode.String() != "node does not exist" || ErrCode(-999).String() != "error(-999)" {
		t.Fatal("error names")
	}
	if EventNodeDeleted.String() != "NodeDeleted" {
		t.Fatal("event names")
	}
}

// FuzzDecodeRequest feeds any body to the decoder of any op code: it must
// return a record or an error, never panic, and a decoded record must
// re-encode to something that decodes to the same record.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(int32(OpCreate), Marshal(&CreateRequest{Path: "/a", Data: []byte("x"), ACL: acls(), Flags: 1}))
	f.Add(int32(OpMulti), Marshal(&MultiRequest{Ops: []MultiOp{{OpDelete, &PathVersionRequest{Path: "/a", Version: 1}}}}))
	f.Add(int32(OpSetWatches2), Marshal(&SetWatches{V2: true, DataWatches: []string{"/a"}}))
	f.Add(int32(OpGetData), Marshal(&PathWatchRequest{Path: "/a", Watch: true}))
	f.Add(int32(OpAuth), Marshal(&AuthPacket{Scheme: "digest", Auth: []byte("u:p")}))
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, err := DecodeRequest(OpCode(op), body)
		if err != nil || rec == nil {
			return
		}
		again, err := DecodeRequest(OpCode(op), Marshal(rec))
		if err != nil {
			t.Fatalf("re-decode of %T: %v", rec, err)
		}
		if !reflect.DeepEqual(normalize(rec), normalize(again)) {
			t.Fatalf("re-decode changed %#v into %#v", rec, again)
		}
	})
}

// normalize maps null and empty vectors/buffers alike, since the encoder
// writes empty vectors for nil ones.
func normalize(r Record) string {
	s := Marshal(r)
	return string(s)
}

// FuzzDecodeConnect checks the handshake decoder never panics.
func FuzzDecodeConnect(f *testing.F) {
	f.Add(Marshal(&ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)}))
	f.Add(Marshal(&ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ConnectRequest
		if Unmarshal(b, &r) == nil && r.HasReadOnly != (len(b) > 28+len(r.Passwd)) && r.Passwd != nil {
			t.Fatalf("readOnly flag %v for %d bytes", r.HasReadOnly, len(b))
		}
	})
}
