package wire

import "fmt"

// OpCode is a request type (ZooDefs.OpCode).
type OpCode int32

// Op codes clients send, plus the internal ones that appear in transactions.
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

// ErrCode is a KeeperException.Code as carried in ReplyHeader.err.
type ErrCode int32

// Error codes the server sends (and the markers around them).
const (
	ErrOk                       ErrCode = 0
	ErrSystemError              ErrCode = -1
	ErrRuntimeInconsistency     ErrCode = -2
	ErrDataInconsistency        ErrCode = -3
	ErrConnectionLoss           ErrCode = -4
	ErrMarshallingError         ErrCode = -5
	ErrUnimplemented            ErrCode = -6
	ErrOperationTimeout         ErrCode = -7
	ErrBadArguments             ErrCode = -8
	ErrUnknownSession           ErrCode = -12
	ErrNewConfigNoQuorum        ErrCode = -13
	ErrReconfigInProgress       ErrCode = -14
	ErrAPIError                 ErrCode = -100
	ErrNoNode                   ErrCode = -101
	ErrNoAuth                   ErrCode = -102
	ErrBadVersion               ErrCode = -103
	ErrNoChildrenForEphemerals  ErrCode = -108
	ErrNodeExists               ErrCode = -110
	ErrNotEmpty                 ErrCode = -111
	ErrSessionExpired           ErrCode = -112
	ErrInvalidCallback          ErrCode = -113
	ErrInvalidACL               ErrCode = -114
	ErrAuthFailed               ErrCode = -115
	ErrSessionMoved             ErrCode = -118
	ErrNotReadOnly              ErrCode = -119
	ErrEphemeralOnLocalSession  ErrCode = -120
	ErrNoWatcher                ErrCode = -121
	ErrRequestTimeout           ErrCode = -122
	ErrReconfigDisabled         ErrCode = -123
	ErrSessionClosedRequireSASL ErrCode = -124
	ErrQuotaExceeded            ErrCode = -125
	ErrThrottled                ErrCode = -127
)

var errNames = map[ErrCode]string{
	ErrOk: "ok", ErrSystemError: "system error", ErrRuntimeInconsistency: "runtime inconsistency",
	ErrDataInconsistency: "data inconsistency", ErrConnectionLoss: "connection loss",
	ErrMarshallingError: "marshalling error", ErrUnimplemented: "unimplemented",
	ErrOperationTimeout: "operation timeout", ErrBadArguments: "bad arguments",
	ErrUnknownSession: "unknown session", ErrNewConfigNoQuorum: "new config no quorum",
	ErrReconfigInProgress: "reconfig in progress", ErrAPIError: "api error",
	ErrNoNode: "node does not exist", ErrNoAuth: "not authenticated",
	ErrBadVersion: "version conflict", ErrNoChildrenForEphemerals: "ephemeral node may not have children",
	ErrNodeExists: "node already exists", ErrNotEmpty: "node has children",
	ErrSessionExpired: "session expired", ErrInvalidCallback: "invalid callback",
	ErrInvalidACL: "invalid ACL", ErrAuthFailed: "authentication failed",
	ErrSessionMoved: "session moved", ErrNotReadOnly: "not a read-only call",
	ErrEphemeralOnLocalSession: "ephemeral on local session", ErrNoWatcher: "no watcher",
	ErrRequestTimeout: "request timeout", ErrReconfigDisabled: "reconfig disabled",
	ErrSessionClosedRequireSASL: "session closed, SASL required",
	ErrQuotaExceeded:            "quota exceeded", ErrThrottled: "throttled",
}

func (e ErrCode) String() string {
	if s, ok := errNames[e]; ok {
		return s
	}
	return fmt.Sprintf("error(%d)", int32(e))
}

// Error makes ErrCode usable as an error value.
func (e ErrCode) Error() string { return fmt.Sprintf("zk: %s (%d)", e.String(), int32(e)) }

// EventType is a WatcherEvent type.
type EventType int32

// Event types the server sends.
const (
	EventNodeCreated         EventType = 1
	EventNodeDeleted         EventType = 2
	EventNodeDataChanged     EventType = 3
	EventNodeChildrenChanged EventType = 4
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	}
	return fmt.Sprintf("event(%d)", int32(t))
}

// StateSyncConnected is the only keeper state the server puts in events.
const StateSyncConnected int32 = 3

// WatcherType selects watches in checkWatches/removeWatches.
type WatcherType int32

// Watcher types (Watcher.WatcherType).
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatch modes.
const (
	AddWatchPersistent          int32 = 0
	AddWatchPersistentRecursive int32 = 1
)

// ACL permission bits.
const (
	PermRead   int32 = 1
	PermWrite  int32 = 2
	PermCreate int32 = 4
	PermDelete int32 = 8
	PermAdmin  int32 = 16
	PermAll    int32 = 31
)

// Create flags (CreateMode).
const (
	FlagPersistent                  int32 = 0
	FlagEphemeral                   int32 = 1
	FlagPersistentSequential        int32 = 2
	FlagEphemeralSequential         int32 = 3
	FlagContainer                   int32 = 4
	FlagPersistentWithTTL           int32 = 5
	FlagPersistentSequentialWithTTL int32 = 6
)

// Special xids.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)
