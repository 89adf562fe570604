package wire

import "fmt"

// OpKind is how the server runs an op.
type OpKind uint8

const (
	// OpOther ops are served one by one by the connection (ping, auth,
	// watches, close), or are not client requests.
	OpOther OpKind = iota
	// OpRead ops read the tree under the shared lock.
	OpRead
	// OpWrite ops change the tree: a transaction, logged, under the
	// exclusive lock.
	OpWrite
)

// OpInfo is everything the server knows of one op code. Adding an op is one
// row in ops (and its handling where Kind sends it).
type OpInfo struct {
	// Name is ZooDefs.OpCode's name, as OpCode.String prints it.
	Name string
	// Tag is the short name the four-letter word cons prints as lop
	// (Request.op2String); "" prints OP<code>.
	Tag string
	// Client says a client may send it; the others only appear in
	// transactions and replies.
	Client bool
	// Request returns its empty request record; nil for ops without a body.
	Request func() Record
	Kind    OpKind
	// InMulti and InMultiRead say it may be one of multi's or multiRead's ops.
	InMulti, InMultiRead bool
}

// ops is the read-only table of op codes.
var ops = map[OpCode]OpInfo{
	OpNotification:         {Name: "notification"},
	OpCreate:               {Name: "create", Tag: "CREA", Client: true, Request: newCreate, Kind: OpWrite, InMulti: true},
	OpDelete:               {Name: "delete", Tag: "DELE", Client: true, Request: newPathVersion, Kind: OpWrite, InMulti: true},
	OpExists:               {Name: "exists", Tag: "EXIS", Client: true, Request: newPathWatch, Kind: OpRead},
	OpGetData:              {Name: "getData", Tag: "GETD", Client: true, Request: newPathWatch, Kind: OpRead, InMultiRead: true},
	OpSetData:              {Name: "setData", Tag: "SETD", Client: true, Request: func() Record { return &SetDataRequest{} }, Kind: OpWrite, InMulti: true},
	OpGetACL:               {Name: "getACL", Tag: "GACL", Client: true, Request: newPath, Kind: OpRead},
	OpSetACL:               {Name: "setACL", Tag: "SACL", Client: true, Request: func() Record { return &SetACLRequest{} }, Kind: OpWrite},
	OpGetChildren:          {Name: "getChildren", Tag: "GETC", Client: true, Request: newPathWatch, Kind: OpRead, InMultiRead: true},
	OpSync:                 {Name: "sync", Tag: "SYNC", Client: true, Request: newPath, Kind: OpRead},
	OpPing:                 {Name: "ping", Tag: "PING", Client: true},
	OpGetChildren2:         {Name: "getChildren2", Tag: "GETC", Client: true, Request: newPathWatch, Kind: OpRead},
	OpCheck:                {Name: "check", Client: true, Request: newPathVersion, InMulti: true}, // alone: unimplemented, as in ZooKeeper
	OpMulti:                {Name: "multi", Tag: "MULT", Client: true, Request: func() Record { return &MultiRequest{} }, Kind: OpWrite},
	OpCreate2:              {Name: "create2", Tag: "CREA", Client: true, Request: newCreate, Kind: OpWrite, InMulti: true},
	OpReconfig:             {Name: "reconfig", Client: true, Request: func() Record { return &ReconfigRequest{} }},
	OpCheckWatches:         {Name: "checkWatches", Client: true, Request: newWatches},
	OpRemoveWatches:        {Name: "removeWatches", Client: true, Request: newWatches},
	OpCreateContainer:      {Name: "createContainer", Tag: "CREA", Client: true, Request: newCreate, Kind: OpWrite, InMulti: true},
	OpDeleteContainer:      {Name: "deleteContainer"},
	OpCreateTTL:            {Name: "createTTL", Tag: "CREA", Client: true, Request: func() Record { return &CreateTTLRequest{} }, Kind: OpWrite, InMulti: true},
	OpMultiRead:            {Name: "multiRead", Tag: "MULT", Client: true, Request: func() Record { return &MultiRequest{Read: true} }, Kind: OpRead},
	OpAuth:                 {Name: "auth", Tag: "AUTH", Client: true, Request: func() Record { return &AuthPacket{} }},
	OpSetWatches:           {Name: "setWatches", Tag: "SETW", Client: true, Request: func() Record { return &SetWatches{} }},
	OpSASL:                 {Name: "sasl", Client: true, Request: func() Record { return &BufferRecord{} }}, // not offered
	OpGetEphemerals:        {Name: "getEphemerals", Client: true, Request: newPath, Kind: OpRead},
	OpGetAllChildrenNumber: {Name: "getAllChildrenNumber", Client: true, Request: newPath, Kind: OpRead},
	OpSetWatches2:          {Name: "setWatches2", Tag: "SETW", Client: true, Request: func() Record { return &SetWatches{V2: true} }},
	OpAddWatch:             {Name: "addWatch", Client: true, Request: func() Record { return &AddWatchRequest{} }},
	OpWhoAmI:               {Name: "whoAmI", Client: true},
	OpCreateSession:        {Name: "createSession"},
	OpCloseSession:         {Name: "closeSession", Tag: "CLOS", Client: true},
	OpError:                {Name: "error"},
}

func newCreate() Record      { return &CreateRequest{} }
func newPathVersion() Record { return &PathVersionRequest{} }
func newPathWatch() Record   { return &PathWatchRequest{} }
func newPath() Record        { return &PathRequest{} }
func newWatches() Record     { return &WatchesRequest{} }

// Op returns what the table says of op; ok is false for unknown codes.
func Op(op OpCode) (info OpInfo, ok bool) {
	info, ok = ops[op]
	return info, ok
}

func (o OpCode) String() string {
	if info, ok := ops[o]; ok {
		return info.Name
	}
	return fmt.Sprintf("op(%d)", int32(o))
}

// Tag is the short name the four-letter word cons prints for o.
func (o OpCode) Tag() string {
	if t := ops[o].Tag; t != "" {
		return t
	}
	return fmt.Sprintf("OP%d", int32(o))
}
