package watch

import (
	"sort"
	"testing"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

func names(ws []Watcher) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.(string))
	}
	sort.Strings(out)
	return out
}

func TestTriggerRules(t *testing.T) {
	type reg struct {
		path  string
		who   string
		kinds uint8
	}
	regs := []reg{
		{"/a", "data", Data},
		{"/a", "child", Child},
		{"/a", "both", Data | Child},
		{"/a", "pers", Persistent},
		{"/", "rec", Recursive},
		{"/a/b", "deepdata", Data},
	}
	tests := []struct {
		name  string
		path  string
		ev    wire.EventType
		want  []string
		again []string // a second identical event (one-shot watches gone)
	}{
		{"created", "/a", wire.EventNodeCreated, []string{"both", "data", "pers", "rec"}, []string{"pers", "rec"}},
		{"data changed", "/a", wire.EventNodeDataChanged, []string{"both", "data", "pers", "rec"}, []string{"pers", "rec"}},
		{"children changed: recursive never", "/a", wire.EventNodeChildrenChanged, []string{"both", "child", "pers"}, []string{"pers"}},
		{"deleted: data and child once each", "/a", wire.EventNodeDeleted, []string{"both", "child", "data", "pers", "rec"}, []string{"pers", "rec"}},
		{"descendant reaches recursive", "/a/b", wire.EventNodeDataChanged, []string{"deepdata", "rec"}, []string{"rec"}},
		{"unwatched", "/z", wire.EventNodeChildrenChanged, []string{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			for _, r := range regs {
				m.Add(r.path, r.who, r.kinds)
			}
			if got := names(m.Trigger(tt.path, tt.ev)); !equal(got, tt.want) {
				t.Fatalf("first: got %v want %v", got, tt.want)
			}
			if got := names(m.Trigger(tt.path, tt.ev)); !equal(got, tt.again) {
				t.Fatalf("second: got %v want %v", got, tt.again)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckRemoveAndCounts(t *testing.T) {
	m := New()
	m.Add("/a", "c1", Data)
	m.Add("/a", "c1", Child)
	m.Add("/b", "c2", Recursive)
	if w, p, n := m.Counts(); w != 2 || p != 2 || n != 2 {
		t.Fatalf("counts %d %d %d", w, p, n)
	}
	if !m.Has("/a", "c1", wire.WatcherChildren) || m.Has("/a", "c2", wire.WatcherAny) || m.Has("/b", "c2", wire.WatcherPersistent) {
		t.Fatal("Has")
	}
	if !m.Remove("/a", "c1", wire.WatcherData) || m.Remove("/a", "c1", wire.WatcherData) {
		t.Fatal("Remove data")
	}
	if !m.Has("/a", "c1", wire.WatcherChildren) {
		t.Fatal("child watch removed with data watch")
	}
	m.RemoveWatcher("c1")
	m.RemoveWatcher("c2")
	if w, p, n := m.Counts(); w+p+n != 0 {
		t.Fatalf("left %d %d %d", w, p, n)
	}
	// The recursive counter went back to zero: no ancestor walk fires anything.
	if got := m.Trigger("/b/c", wire.EventNodeCreated); len(got) != 0 {
		t.Fatalf("fired %v", got)
	}
}

func TestRearm(t *testing.T) {
	m := New()
	state := map[string]NodeState{
		"/same":    {Exists: true, Mzxid: 5, Pzxid: 5},
		"/changed": {Exists: true, Mzxid: 20, Pzxid: 20},
	}
	sw := &wire.SetWatches{
		RelativeZxid: 10,
		DataWatches:  []string{"/same", "/changed", "/gone"},
		ExistWatches: []string{"/same", "/gone"},
		ChildWatches: []string{"/same", "/changed", "/gone"},
	}
	events := m.Rearm("c", sw, func(p string) NodeState { return state[p] })
	want := []Event{
		{"/changed", wire.EventNodeDataChanged}, {"/gone", wire.EventNodeDeleted},
		{"/same", wire.EventNodeCreated},
		{"/changed", wire.EventNodeChildrenChanged}, {"/gone", wire.EventNodeDeleted},
	}
	if len(events) != len(want) {
		t.Fatalf("events %v", events)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("event %d: %v want %v", i, events[i], want[i])
		}
	}
	// exists on a missing node re-arms a data watch; unchanged nodes get theirs back.
	if !m.Has("/gone", "c", wire.WatcherData) || !m.Has("/same", "c", wire.WatcherData) || !m.Has("/same", "c", wire.WatcherChildren) {
		t.Fatal("watches not re-armed")
	}
}
