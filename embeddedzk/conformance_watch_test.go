package embeddedzk_test

import (
	"reflect"
	"time"

	"github.com/go-zookeeper/zk"
)

// eventWait bounds how long a case waits for a notification that must come.
const eventWait = 5 * time.Second

func watchCases() []conformanceCase {
	return []conformanceCase{
		{"watch_data_one_shot", caseWatchDataOneShot},
		{"watch_exists_created", caseWatchExistsCreated},
		{"watch_children", caseWatchChildren},
		{"watch_deleted", caseWatchDeleted},
		{"watch_before_read", caseWatchBeforeRead},
		{"watch_persistent", caseWatchPersistent},
		{"watch_persistent_recursive", caseWatchRecursive},
	}
}

func wantEvent(t *ct, got zk.Event, typ zk.EventType, path string) {
	t.Helper()
	if got.Type != typ || got.Path != path || got.State != zk.StateSyncConnected {
		t.Errorf("event = {%v %s state %v}, want {%v %s SyncConnected}", got.Type, got.Path, got.State, typ, path)
	}
}

func caseWatchDataOneShot(t *ct, tg target) {
	writer := connect(t, tg)
	p := casePath(t)
	mustCreate(t, writer, p, []byte("0"), zk.FlagPersistent)

	// The raw client counts every notification the server sends, so a
	// second event (a watch that is not one-shot) cannot hide in a client.
	w, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	if got := w.getDataWatch(t, p); string(got) != "0" {
		t.Errorf("getData = %q, want 0", got)
	}
	for _, v := range []string{"1", "2", "3"} {
		if _, err := writer.Set(p, []byte(v), -1); err != nil {
			t.Fatalf("set: %v", err)
		}
	}
	w.ping(t)
	want := []rawEvent{{zk.EventNodeDataChanged, p}}
	if got := w.takeEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("notifications = %+v, want exactly %+v", got, want)
	}

	// go-zookeeper sees the same through its watch channel.
	c := connect(t, tg)
	_, _, ch, err := c.GetW(p)
	if err != nil {
		t.Fatalf("getW: %v", err)
	}
	if _, err := writer.Set(p, []byte("4"), -1); err != nil {
		t.Fatalf("set: %v", err)
	}
	select {
	case ev := <-ch:
		wantEvent(t, ev, zk.EventNodeDataChanged, p)
	case <-time.After(eventWait):
		t.Errorf("no NodeDataChanged within %s", eventWait)
	}
}

func caseWatchExistsCreated(t *ct, tg target) {
	c, events := connectEvents(t, tg, nil)
	writer := connect(t, tg)
	p := casePath(t)
	ok, _, ch, err := c.ExistsW(p)
	if err != nil || ok {
		t.Fatalf("existsW missing node = %v, %v", ok, err)
	}
	mustCreate(t, writer, p, nil, zk.FlagPersistent)
	select {
	case ev := <-ch:
		wantEvent(t, ev, zk.EventNodeCreated, p)
	case <-time.After(eventWait):
		t.Fatalf("no NodeCreated within %s", eventWait)
	}
	wantEvent(t, nextNodeEvent(t, events, eventWait), zk.EventNodeCreated, p)
	// One-shot: the next change notifies nobody.
	if _, err := writer.Set(p, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(p); err != nil {
		t.Fatal(err)
	}
	noNodeEvent(t, events, 100*time.Millisecond)
}

func caseWatchChildren(t *ct, tg target) {
	c, events := connectEvents(t, tg, nil)
	writer := connect(t, tg)
	p := casePath(t)
	mustCreate(t, writer, p, nil, zk.FlagPersistent)

	_, _, ch, err := c.ChildrenW(p)
	if err != nil {
		t.Fatal(err)
	}
	// Data changes do not fire child watches.
	if _, err := writer.Set(p, []byte("d"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, writer, p+"/a", nil, zk.FlagPersistent)
	select {
	case ev := <-ch:
		wantEvent(t, ev, zk.EventNodeChildrenChanged, p)
	case <-time.After(eventWait):
		t.Fatalf("no NodeChildrenChanged on create within %s", eventWait)
	}
	wantEvent(t, nextNodeEvent(t, events, eventWait), zk.EventNodeChildrenChanged, p)

	_, _, ch, err = c.ChildrenW(p)
	if err != nil {
		t.Fatal(err)
	}
	// Grandchildren and data of a child do not concern the parent's watch.
	mustCreate(t, writer, p+"/a/x", nil, zk.FlagPersistent)
	if _, err := writer.Set(p+"/a", []byte("d"), -1); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(p+"/a/x", -1); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(p+"/a", -1); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		wantEvent(t, ev, zk.EventNodeChildrenChanged, p)
	case <-time.After(eventWait):
		t.Fatalf("no NodeChildrenChanged on delete within %s", eventWait)
	}
	wantEvent(t, nextNodeEvent(t, events, eventWait), zk.EventNodeChildrenChanged, p)
	if _, err := c.Sync(p); err != nil {
		t.Fatal(err)
	}
	noNodeEvent(t, events, 100*time.Millisecond)
}

func caseWatchDeleted(t *ct, tg target) {
	c, events := connectEvents(t, tg, nil)
	writer := connect(t, tg)
	p := casePath(t)
	mustCreate(t, writer, p, nil, zk.FlagPersistent)

	// Data, exists and child watches on one path: the delete reaches the
	// client as a single NodeDeleted, and every watcher gets it.
	_, _, dataCh, err := c.GetW(p)
	if err != nil {
		t.Fatal(err)
	}
	_, _, existCh, err := c.ExistsW(p)
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := c.ChildrenW(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]<-chan zk.Event{"data": dataCh, "exists": existCh, "child": childCh} {
		select {
		case ev := <-ch:
			wantEvent(t, ev, zk.EventNodeDeleted, p)
		case <-time.After(eventWait):
			t.Errorf("%s watch: no NodeDeleted within %s", name, eventWait)
		}
	}
	wantEvent(t, nextNodeEvent(t, events, eventWait), zk.EventNodeDeleted, p)
	if _, err := c.Sync("/"); err != nil {
		t.Fatal(err)
	}
	noNodeEvent(t, events, 100*time.Millisecond)
}

// caseWatchBeforeRead: a client holding a watch sees the event before any
// read result that reflects the change.
func caseWatchBeforeRead(t *ct, tg target) {
	c := connect(t, tg)
	writer := connect(t, tg)
	p := casePath(t)
	mustCreate(t, writer, p, []byte("0"), zk.FlagPersistent)
	for round := 1; round <= 20; round++ {
		_, _, ch, err := c.GetW(p)
		if err != nil {
			t.Fatal(err)
		}
		want := []byte{byte('0' + round%10)}
		done := make(chan error, 1)
		go func() {
			_, err := writer.Set(p, want, -1)
			done <- err
		}()
		// Read until the new data shows; by then the event must be there.
		deadline := time.Now().Add(eventWait)
		for {
			data, _, err := c.Get(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) == string(want) {
				select {
				case <-ch:
				default:
					t.Fatalf("round %d: read returned the new data before the watch event arrived", round)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: new data not visible within %s", round, eventWait)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func caseWatchPersistent(t *ct, tg target) {
	writer := connect(t, tg)
	p := casePath(t)
	w, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	// addWatch does not need the node to exist.
	w.addWatch(t, p, addWatchPersistent)

	mustCreate(t, writer, p, nil, zk.FlagPersistent)
	for _, v := range []string{"1", "2"} {
		if _, err := writer.Set(p, []byte(v), -1); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, writer, p+"/c", nil, zk.FlagPersistent)
	// Changes below the node itself are not reported to a non-recursive watch.
	if _, err := writer.Set(p+"/c", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, writer, p+"/c/g", nil, zk.FlagPersistent)
	if err := writer.Delete(p+"/c/g", -1); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(p+"/c", -1); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	// It persists past the delete: a new node of the same path is reported.
	mustCreate(t, writer, p, nil, zk.FlagPersistent)
	w.ping(t)
	want := []rawEvent{
		{zk.EventNodeCreated, p},
		{zk.EventNodeDataChanged, p},
		{zk.EventNodeDataChanged, p},
		{zk.EventNodeChildrenChanged, p},
		{zk.EventNodeChildrenChanged, p},
		{zk.EventNodeDeleted, p},
		{zk.EventNodeCreated, p},
	}
	if got := w.takeEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("persistent watch notifications:\n got %+v\nwant %+v", got, want)
	}
}

func caseWatchRecursive(t *ct, tg target) {
	writer := connect(t, tg)
	p := casePath(t)
	mustCreate(t, writer, p, nil, zk.FlagPersistent)
	w, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	w.addWatch(t, p, addWatchPersistentRecursive)

	mustCreate(t, writer, p+"/a", nil, zk.FlagPersistent)
	mustCreate(t, writer, p+"/a/b", nil, zk.FlagPersistent)
	for _, v := range []string{"1", "2"} {
		if _, err := writer.Set(p+"/a/b", []byte(v), -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writer.Set(p, []byte("root"), -1); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(p+"/a/b", -1); err != nil {
		t.Fatal(err)
	}
	// A sibling tree is not watched.
	mustCreate(t, writer, p+"-sibling", nil, zk.FlagPersistent)
	if _, err := writer.Set(p+"/a", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	w.ping(t)
	// No NodeChildrenChanged ever reaches a recursive watch.
	want := []rawEvent{
		{zk.EventNodeCreated, p + "/a"},
		{zk.EventNodeCreated, p + "/a/b"},
		{zk.EventNodeDataChanged, p + "/a/b"},
		{zk.EventNodeDataChanged, p + "/a/b"},
		{zk.EventNodeDataChanged, p},
		{zk.EventNodeDeleted, p + "/a/b"},
		{zk.EventNodeDataChanged, p + "/a"},
	}
	if got := w.takeEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("recursive watch notifications:\n got %+v\nwant %+v", got, want)
	}
}
