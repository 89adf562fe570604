package wire

import (
	"errors"
	"fmt"
)

// Record is one jute record.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Marshal encodes records back to back into a new slice.
func Marshal(recs ...Record) []byte {
	e := NewEncoder(nil)
	for _, r := range recs {
		if r != nil {
			r.Encode(e)
		}
	}
	return e.Bytes()
}

// Unmarshal decodes b into r and reports any decoding error.
func Unmarshal(b []byte, r Record) error {
	d := NewDecoder(b)
	r.Decode(d)
	return d.Err()
}

// ConnectRequest is the first frame a client sends (no header). HasReadOnly
// says whether the optional trailing readOnly byte was present; the
// response echoes the choice.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int64(r.LastZxidSeen)
	e.Int32(r.TimeOut)
	e.Int64(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int32()
	r.LastZxidSeen = d.Int64()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// ConnectResponse answers a ConnectRequest; TimeOut 0 means "expired".
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int32(r.ProtocolVersion)
	e.Int32(r.TimeOut)
	e.Int64(r.SessionID)
	e.Buffer(nonNil(r.Passwd))
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int32()
	r.TimeOut = d.Int32()
	r.SessionID = d.Int64()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// RequestHeader precedes every client frame after the handshake.
type RequestHeader struct {
	Xid  int32
	Type OpCode
}

func (r *RequestHeader) Encode(e *Encoder) { e.Int32(r.Xid); e.Int32(int32(r.Type)) }
func (r *RequestHeader) Decode(d *Decoder) { r.Xid = d.Int32(); r.Type = OpCode(d.Int32()) }

// ReplyHeader precedes every server frame after the handshake.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  ErrCode
}

func (r *ReplyHeader) Encode(e *Encoder) { e.Int32(r.Xid); e.Int64(r.Zxid); e.Int32(int32(r.Err)) }
func (r *ReplyHeader) Decode(d *Decoder) {
	r.Xid = d.Int32()
	r.Zxid = d.Int64()
	r.Err = ErrCode(d.Int32())
}

// ID is an authentication identity (scheme:id).
type ID struct {
	Scheme string
	ID     string
}

func (r *ID) Encode(e *Encoder) { e.String(r.Scheme); e.String(r.ID) }
func (r *ID) Decode(d *Decoder) { r.Scheme = d.String(); r.ID = d.String() }

// ACL grants Perms to ID.
type ACL struct {
	Perms int32
	ID    ID
}

func (r *ACL) Encode(e *Encoder) { e.Int32(r.Perms); r.ID.Encode(e) }
func (r *ACL) Decode(d *Decoder) { r.Perms = d.Int32(); r.ID.Decode(d) }

// WorldAnyone is the open ACL id.
var WorldAnyone = ID{Scheme: "world", ID: "anyone"}

// ACLs writes a vector<ACL>.
func (e *Encoder) ACLs(acl []ACL) {
	e.Int32(int32(len(acl)))
	for i := range acl {
		acl[i].Encode(e)
	}
}

// ACLs reads a vector<ACL>; null reads as nil.
func (d *Decoder) ACLs() []ACL {
	n, null := d.vectorLen(12)
	if null || d.Err() != nil {
		return nil
	}
	out := make([]ACL, n)
	for i := range out {
		out[i].Decode(d)
	}
	return out
}

// Stat is a node's metadata as clients see it (68 bytes).
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

func (s *Stat) Encode(e *Encoder) {
	e.Int64(s.Czxid)
	e.Int64(s.Mzxid)
	e.Int64(s.Ctime)
	e.Int64(s.Mtime)
	e.Int32(s.Version)
	e.Int32(s.Cversion)
	e.Int32(s.Aversion)
	e.Int64(s.EphemeralOwner)
	e.Int32(s.DataLength)
	e.Int32(s.NumChildren)
	e.Int64(s.Pzxid)
}

func (s *Stat) Decode(d *Decoder) {
	s.Czxid = d.Int64()
	s.Mzxid = d.Int64()
	s.Ctime = d.Int64()
	s.Mtime = d.Int64()
	s.Version = d.Int32()
	s.Cversion = d.Int32()
	s.Aversion = d.Int32()
	s.EphemeralOwner = d.Int64()
	s.DataLength = d.Int32()
	s.NumChildren = d.Int32()
	s.Pzxid = d.Int64()
}

// CreateRequest is the body of create (1), create2 (15) and createContainer (19).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.ACLs(r.ACL)
	e.Int32(r.Flags)
}

func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = d.Int32()
}

// CreateTTLRequest is the body of createTTL (21).
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	e.ACLs(r.ACL)
	e.Int32(r.Flags)
	e.Int64(r.TTL)
}

func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = d.ACLs()
	r.Flags = d.Int32()
	r.TTL = d.Int64()
}

// CreateResponse answers create (1): the path actually created.
type CreateResponse struct{ Path string }

func (r *CreateResponse) Encode(e *Encoder) { e.String(r.Path) }
func (r *CreateResponse) Decode(d *Decoder) { r.Path = d.String() }

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }
func (r *Create2Response) Decode(d *Decoder) { r.Path = d.String(); r.Stat.Decode(d) }

// PathVersionRequest is the body of delete (2) and check (13).
type PathVersionRequest struct {
	Path    string
	Version int32
}

func (r *PathVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Version) }
func (r *PathVersionRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int32() }

// PathWatchRequest is the body of exists (3), getData (4), getChildren (8)
// and getChildren2 (12).
type PathWatchRequest struct {
	Path  string
	Watch bool
}

func (r *PathWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }
func (r *PathWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// PathRequest is a record holding only a path: getACL, sync (both ways),
// getEphemerals and getAllChildrenNumber requests.
type PathRequest struct{ Path string }

func (r *PathRequest) Encode(e *Encoder) { e.String(r.Path) }
func (r *PathRequest) Decode(d *Decoder) { r.Path = d.String() }

// StatResponse answers exists, setData and setACL.
type StatResponse struct{ Stat Stat }

func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }
func (r *StatResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// GetDataResponse answers getData; nil Data is sent as a null buffer.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }
func (r *GetDataResponse) Decode(d *Decoder) { r.Data = d.Buffer(); r.Stat.Decode(d) }

// SetDataRequest is the body of setData (5).
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int32(r.Version) }
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int32()
}

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

func (r *GetACLResponse) Encode(e *Encoder) { e.ACLs(r.ACL); r.Stat.Encode(e) }
func (r *GetACLResponse) Decode(d *Decoder) { r.ACL = d.ACLs(); r.Stat.Decode(d) }

// SetACLRequest is the body of setACL (7); Version is checked against aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

func (r *SetACLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.ACLs(r.ACL)
	e.Int32(r.Version)
}
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = d.ACLs()
	r.Version = d.Int32()
}

// GetChildrenResponse answers getChildren (8).
type GetChildrenResponse struct{ Children []string }

func (r *GetChildrenResponse) Encode(e *Encoder) { e.StringVector(r.Children) }
func (r *GetChildrenResponse) Decode(d *Decoder) { r.Children = d.StringVector() }

// GetChildren2Response answers getChildren2 (12).
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

func (r *GetChildren2Response) Encode(e *Encoder) { e.StringVector(r.Children); r.Stat.Encode(e) }
func (r *GetChildren2Response) Decode(d *Decoder) { r.Children = d.StringVector(); r.Stat.Decode(d) }

// MultiHeader precedes each op and result in multi/multiRead.
type MultiHeader struct {
	Type OpCode
	Done bool
	Err  ErrCode
}

func (r *MultiHeader) Encode(e *Encoder) {
	e.Int32(int32(r.Type))
	e.Bool(r.Done)
	e.Int32(int32(r.Err))
}
func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = OpCode(d.Int32())
	r.Done = d.Bool()
	r.Err = ErrCode(d.Int32())
}

// IntResponse is a single int: ErrorResponse in multi results, the addWatch
// reply and GetAllChildrenNumberResponse.
type IntResponse struct{ N int32 }

func (r *IntResponse) Encode(e *Encoder) { e.Int32(r.N) }
func (r *IntResponse) Decode(d *Decoder) { r.N = d.Int32() }

// AuthPacket is the body of auth (100).
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

func (r *AuthPacket) Encode(e *Encoder) { e.Int32(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }
func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.Int32()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
}

// SetWatches is the body of setWatches (101) and, with V2 set, setWatches2
// (105), which adds the persistent lists.
type SetWatches struct {
	V2                  bool
	RelativeZxid        int64
	DataWatches         []string
	ExistWatches        []string
	ChildWatches        []string
	PersistentWatches   []string
	PersistentRecursive []string
}

func (r *SetWatches) Encode(e *Encoder) {
	e.Int64(r.RelativeZxid)
	e.StringVector(r.DataWatches)
	e.StringVector(r.ExistWatches)
	e.StringVector(r.ChildWatches)
	if r.V2 {
		e.StringVector(r.PersistentWatches)
		e.StringVector(r.PersistentRecursive)
	}
}

func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Int64()
	r.DataWatches = d.StringVector()
	r.ExistWatches = d.StringVector()
	r.ChildWatches = d.StringVector()
	if r.V2 {
		r.PersistentWatches = d.StringVector()
		r.PersistentRecursive = d.StringVector()
	}
}

// AddWatchRequest is the body of addWatch (106).
type AddWatchRequest struct {
	Path string
	Mode int32
}

func (r *AddWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(r.Mode) }
func (r *AddWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Mode = d.Int32() }

// WatchesRequest is the body of checkWatches (17) and removeWatches (18).
type WatchesRequest struct {
	Path string
	Type WatcherType
}

func (r *WatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int32(int32(r.Type)) }
func (r *WatchesRequest) Decode(d *Decoder) { r.Path = d.String(); r.Type = WatcherType(d.Int32()) }

// StringsResponse is a vector<ustring>: GetEphemeralsResponse.
type StringsResponse struct{ Strings []string }

func (r *StringsResponse) Encode(e *Encoder) { e.StringVector(r.Strings) }
func (r *StringsResponse) Decode(d *Decoder) { r.Strings = d.StringVector() }

// ClientInfo is one identity in a whoAmI reply.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// WhoAmIResponse answers whoAmI (107).
type WhoAmIResponse struct{ Clients []ClientInfo }

func (r *WhoAmIResponse) Encode(e *Encoder) {
	e.Int32(int32(len(r.Clients)))
	for _, c := range r.Clients {
		e.String(c.AuthScheme)
		e.String(c.User)
	}
}

func (r *WhoAmIResponse) Decode(d *Decoder) {
	n, null := d.vectorLen(8)
	if null || d.Err() != nil {
		return
	}
	r.Clients = make([]ClientInfo, n)
	for i := range r.Clients {
		r.Clients[i].AuthScheme = d.String()
		r.Clients[i].User = d.String()
	}
}

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State int32
	Path  string
}

func (r *WatcherEvent) Encode(e *Encoder) { e.Int32(int32(r.Type)); e.Int32(r.State); e.String(r.Path) }
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int32())
	r.State = d.Int32()
	r.Path = d.String()
}

// ReconfigRequest is the body of reconfig (16); we only decode it to refuse it.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Int64(r.CurConfigID)
}

func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Int64()
}

// BufferRecord is a single buffer: GetSASLRequest / SetSASLResponse.
type BufferRecord struct{ Data []byte }

func (r *BufferRecord) Encode(e *Encoder) { e.Buffer(r.Data) }
func (r *BufferRecord) Decode(d *Decoder) { r.Data = d.Buffer() }

// MultiOp is one operation inside multi or multiRead.
type MultiOp struct {
	Type OpCode
	Req  Record
}

// MultiRequest is MultiOperationRecord: ops, then a done header.
type MultiRequest struct {
	Ops []MultiOp
	// Read marks a multiRead body, which allows only getData and getChildren.
	Read bool
}

// ErrBadMultiOp means a multi carried an op type it may not contain.
var ErrBadMultiOp = errors.New("wire: op type not allowed in multi")

func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Type, Done: false, Err: -1}
		h.Encode(e)
		op.Req.Encode(e)
	}
	h := MultiHeader{Type: -1, Done: true, Err: -1}
	h.Encode(e)
}

func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = r.Ops[:0]
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		req := newMultiOpRecord(h.Type, r.Read)
		if req == nil {
			d.fail(fmt.Errorf("%w: %s", ErrBadMultiOp, h.Type))
			return
		}
		req.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Type: h.Type, Req: req})
	}
}

func newMultiOpRecord(op OpCode, read bool) Record {
	info := ops[op]
	if read && info.InMultiRead || !read && info.InMulti {
		return info.Request()
	}
	return nil
}

// MultiResult is one result in a MultiResponse. Type -1 (OpError) carries
// the code in Err and an IntResponse body; others carry their op's response
// record (nil for delete and check).
type MultiResult struct {
	Type OpCode
	Err  ErrCode
	Resp Record
}

// MultiResponse answers multi and multiRead.
type MultiResponse struct{ Results []MultiResult }

func (r *MultiResponse) Encode(e *Encoder) {
	for _, res := range r.Results {
		h := MultiHeader{Type: res.Type, Done: false, Err: res.Err}
		h.Encode(e)
		if res.Type == OpError {
			e.Int32(int32(res.Err))
		} else if res.Resp != nil {
			res.Resp.Encode(e)
		}
	}
	h := MultiHeader{Type: -1, Done: true, Err: -1}
	h.Encode(e)
}

func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = r.Results[:0]
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		res := MultiResult{Type: h.Type, Err: h.Err}
		switch h.Type {
		case OpError:
			res.Err = ErrCode(d.Int32())
		case OpCreate:
			res.Resp = &CreateResponse{}
		case OpCreate2:
			res.Resp = &Create2Response{}
		case OpSetData:
			res.Resp = &StatResponse{}
		case OpGetData:
			res.Resp = &GetDataResponse{}
		case OpGetChildren:
			res.Resp = &GetChildrenResponse{}
		case OpDelete, OpCheck:
		default:
			d.fail(fmt.Errorf("%w: result %s", ErrBadMultiOp, h.Type))
			return
		}
		if res.Resp != nil {
			res.Resp.Decode(d)
		}
		r.Results = append(r.Results, res)
	}
}
