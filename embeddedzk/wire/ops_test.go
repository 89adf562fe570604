package wire

import "testing"

// TestOpTable checks the op table's rows against each other and against the
// codec: what a row says a client may send decodes (an empty body gives
// ErrShortBuffer or a record, never ErrUnknownOp), a read or write has a
// request record, multi's ops decode inside multi, and names and tags are
// ZooKeeper's.
func TestOpTable(t *testing.T) {
	for op, info := range ops {
		if info.Name == "" {
			t.Errorf("op %d has no name", int32(op))
		}
		if op.String() != info.Name {
			t.Errorf("op %d prints %q, want %q", int32(op), op.String(), info.Name)
		}
		rec, ok := NewRequest(op)
		if ok != info.Client {
			t.Errorf("%s: NewRequest ok=%v, table says client=%v", op, ok, info.Client)
		}
		if info.Kind != OpOther && (!info.Client || rec == nil) {
			t.Errorf("%s: a read or write must be a client op with a request record", op)
		}
		if (info.InMulti || info.InMultiRead) && info.Request == nil {
			t.Errorf("%s: in multi without a request record", op)
		}
		if info.InMulti && newMultiOpRecord(op, false) == nil || info.InMultiRead && newMultiOpRecord(op, true) == nil {
			t.Errorf("%s: multi does not decode it", op)
		}
		if !info.InMulti && newMultiOpRecord(op, false) != nil || !info.InMultiRead && newMultiOpRecord(op, true) != nil {
			t.Errorf("%s: multi decodes it though the table says not", op)
		}
	}
	tests := []struct {
		op        OpCode
		name, tag string
		kind      OpKind
	}{
		{OpGetData, "getData", "GETD", OpRead},
		{OpGetChildren2, "getChildren2", "GETC", OpRead},
		{OpCreateTTL, "createTTL", "CREA", OpWrite},
		{OpMulti, "multi", "MULT", OpWrite},
		{OpMultiRead, "multiRead", "MULT", OpRead},
		{OpPing, "ping", "PING", OpOther},
		{OpSetWatches2, "setWatches2", "SETW", OpOther},
		{OpCloseSession, "closeSession", "CLOS", OpOther},
		{OpWhoAmI, "whoAmI", "OP107", OpOther},
		{OpCode(99), "op(99)", "OP99", OpOther},
	}
	for _, tt := range tests {
		info, _ := Op(tt.op)
		if tt.op.String() != tt.name || tt.op.Tag() != tt.tag || info.Kind != tt.kind {
			t.Errorf("%d: %q %q kind %d, want %q %q kind %d", int32(tt.op), tt.op.String(), tt.op.Tag(), info.Kind, tt.name, tt.tag, tt.kind)
		}
	}
}
