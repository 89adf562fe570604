package embeddedzk_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func nodeCases() []conformanceCase {
	return []conformanceCase{
		{"crud_stat", caseCRUDStat},
		{"null_and_empty_data", caseNullEmptyData},
		{"sequential_names", caseSequential},
		{"ephemeral", caseEphemeral},
		{"errors", caseErrors},
		{"container_and_ttl", caseContainerTTL},
		{"multi", caseMulti},
		{"system_nodes_and_sync", caseSystemNodes},
	}
}

func caseCRUDStat(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)

	before := time.Now().UnixMilli()
	mustCreate(t, c, p, []byte("v1"), zk.FlagPersistent)
	data, st, err := c.Get(p)
	if err != nil {
		t.Fatalf("get %s: %v", p, err)
	}
	if string(data) != "v1" {
		t.Errorf("data = %q, want v1", data)
	}
	created := *st
	switch {
	case st.Czxid <= 0:
		t.Errorf("czxid = %d, want > 0", st.Czxid)
	case st.Mzxid != st.Czxid || st.Pzxid != st.Czxid:
		t.Errorf("new node: czxid %d mzxid %d pzxid %d, want all equal", st.Czxid, st.Mzxid, st.Pzxid)
	}
	if st.Ctime != st.Mtime || st.Ctime < before-1000 || st.Ctime > time.Now().UnixMilli()+1000 {
		t.Errorf("ctime %d mtime %d, want equal and about now (%d)", st.Ctime, st.Mtime, before)
	}
	wantCounts(t, "new node", st, counts{version: 0, cversion: 0, aversion: 0, dataLength: 2, numChildren: 0})
	if st.EphemeralOwner != 0 {
		t.Errorf("persistent node ephemeralOwner = %#x, want 0", st.EphemeralOwner)
	}

	// setData: version and mzxid move, czxid and pzxid stay.
	st, err = c.Set(p, []byte("v22"), 0)
	if err != nil {
		t.Fatalf("set %s version 0: %v", p, err)
	}
	if st.Czxid != created.Czxid || st.Pzxid != created.Pzxid || st.Mzxid <= created.Czxid || st.Mtime < created.Mtime {
		t.Errorf("after set: czxid %d mzxid %d pzxid %d mtime %d; before czxid %d mtime %d",
			st.Czxid, st.Mzxid, st.Pzxid, st.Mtime, created.Czxid, created.Mtime)
	}
	wantCounts(t, "after set", st, counts{version: 1, dataLength: 3})
	if _, err := c.Set(p, []byte("stale"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("set with stale version: %v, want ErrBadVersion", err)
	}
	afterSet := *st

	// A child create bumps cversion and pzxid; the parent's data stays.
	child := mustCreate(t, c, p+"/a", nil, zk.FlagPersistent)
	childStat := mustStat(t, c, child)
	st = mustStat(t, c, p)
	if st.Pzxid != childStat.Czxid || st.Mzxid != afterSet.Mzxid {
		t.Errorf("after child create: pzxid %d (child czxid %d), mzxid %d (was %d)", st.Pzxid, childStat.Czxid, st.Mzxid, afterSet.Mzxid)
	}
	wantCounts(t, "after child create", st, counts{version: 1, cversion: 1, dataLength: 3, numChildren: 1})

	if err := c.Delete(p, -1); !errors.Is(err, zk.ErrNotEmpty) {
		t.Errorf("delete parent with a child: %v, want ErrNotEmpty", err)
	}
	if err := c.Delete(child, 5); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("delete with wrong version: %v, want ErrBadVersion", err)
	}
	if err := c.Delete(child, 0); err != nil {
		t.Fatalf("delete %s version 0: %v", child, err)
	}
	// A child delete moves pzxid. Apache 3.8 counts only creates internally
	// (that counter names sequential children) but reports
	// cversion = 2 × creates − numChildren (DataNode.copyStat), so a client
	// sees the delete bump cversion too. PROTOCOLS.md §A.6 and TESTING.md say
	// otherwise; what clients observe from Apache is what we assert.
	st = mustStat(t, c, p)
	if st.Pzxid <= childStat.Czxid {
		t.Errorf("after child delete: pzxid %d, want > child czxid %d", st.Pzxid, childStat.Czxid)
	}
	wantCounts(t, "after child delete", st, counts{version: 1, cversion: 2, dataLength: 3, numChildren: 0})

	// zxids grow strictly across writes.
	st2, err := c.Set(p, []byte("v3"), -1)
	if err != nil {
		t.Fatalf("set -1: %v", err)
	}
	if st2.Mzxid <= st.Pzxid || st2.Version != 2 {
		t.Errorf("set after delete: mzxid %d (last pzxid %d) version %d, want larger zxid, version 2", st2.Mzxid, st.Pzxid, st2.Version)
	}
	if err := c.Delete(p, 2); err != nil {
		t.Fatalf("delete %s version 2: %v", p, err)
	}
	if ok, _, err := c.Exists(p); ok || err != nil {
		t.Errorf("exists after delete = %v, %v; want false, nil", ok, err)
	}
}

type counts struct {
	version, cversion, aversion, dataLength, numChildren int32
}

func wantCounts(t testing.TB, when string, st *zk.Stat, want counts) {
	t.Helper()
	got := counts{st.Version, st.Cversion, st.Aversion, st.DataLength, st.NumChildren}
	if got != want {
		t.Errorf("%s: {version cversion aversion dataLength numChildren} = %+v, want %+v", when, got, want)
	}
}

func caseNullEmptyData(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagPersistent)
	mustCreate(t, c, p+"/null", nil, zk.FlagPersistent)
	mustCreate(t, c, p+"/empty", []byte{}, zk.FlagPersistent)
	for _, tc := range []struct {
		path     string
		wantNull bool
	}{
		{p + "/null", true},
		{p + "/empty", false},
	} {
		data, st, err := c.Get(tc.path)
		if err != nil {
			t.Fatalf("get %s: %v", tc.path, err)
		}
		if (data == nil) != tc.wantNull || len(data) != 0 || st.DataLength != 0 {
			t.Errorf("get %s: data %#v (nil=%v) dataLength %d; want nil=%v, empty, 0", tc.path, data, data == nil, st.DataLength, tc.wantNull)
		}
	}
	// setData with null data turns data back to null.
	if _, err := c.Set(p+"/empty", nil, -1); err != nil {
		t.Fatalf("set null: %v", err)
	}
	if data, _, err := c.Get(p + "/empty"); err != nil || data != nil {
		t.Errorf("after set null: %#v, %v; want nil", data, err)
	}
}

func caseSequential(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagPersistent)

	steps := []struct {
		path  string
		flags int32
		want  string
	}{
		{p + "/a-", zk.FlagSequence, p + "/a-0000000000"},
		// One counter per parent, whatever the name prefix.
		{p + "/b-", zk.FlagSequence, p + "/b-0000000001"},
		{p + "/plain", zk.FlagPersistent, p + "/plain"},
		{p + "/e-", zk.FlagEphemeralSequential, p + "/e-0000000003"},
		// A trailing slash leaves only the digits.
		{p + "/", zk.FlagSequence, p + "/0000000004"},
	}
	for _, s := range steps {
		got, err := c.Create(s.path, []byte("x"), s.flags, zk.WorldACL(zk.PermAll))
		if err != nil || got != s.want {
			t.Errorf("create %s flags %d = %q, %v; want %q", s.path, s.flags, got, err, s.want)
		}
	}
	// A delete does not bump cversion: the next suffix counts creates only.
	if err := c.Delete(p+"/plain", -1); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Create(p+"/a-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil || got != p+"/a-0000000005" {
		t.Errorf("create after delete = %q, %v; want %s", got, err, p+"/a-0000000005")
	}
	// Six creates, one delete: visible cversion 2×6−5 (see caseCRUDStat).
	st := mustStat(t, c, p)
	wantCounts(t, "parent", st, counts{cversion: 7, numChildren: 5})
	if est := mustStat(t, c, p+"/e-0000000003"); est.EphemeralOwner != c.SessionID() {
		t.Errorf("ephemeral sequential ephemeralOwner = %#x, want session %#x", est.EphemeralOwner, c.SessionID())
	}
}

func caseEphemeral(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagEphemeral)
	st := mustStat(t, c, p)
	if st.EphemeralOwner != c.SessionID() || st.EphemeralOwner == 0 {
		t.Errorf("ephemeralOwner = %#x, want session id %#x", st.EphemeralOwner, c.SessionID())
	}
	for _, flags := range []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence} {
		if _, err := c.Create(p+"/child", nil, flags, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
			t.Errorf("child of ephemeral (flags %d): %v, want ErrNoChildrenForEphemerals", flags, err)
		}
	}
	// Another session sees the same owner.
	other := connect(t, tg)
	if st2 := mustStat(t, other, p); st2.EphemeralOwner != c.SessionID() {
		t.Errorf("other session sees ephemeralOwner %#x, want %#x", st2.EphemeralOwner, c.SessionID())
	}
}

func caseErrors(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, []byte("x"), zk.FlagPersistent)
	acl := zk.WorldACL(zk.PermAll)
	checks := []struct {
		name string
		err  error
		want error
	}{
		{"create existing", second(c.Create(p, nil, 0, acl)), zk.ErrNodeExists},
		{"create under missing parent", second(c.Create(p+"/missing/child", nil, 0, acl)), zk.ErrNoNode},
		{"get missing", third(c.Get(p + "/missing")), zk.ErrNoNode},
		{"set missing", second(c.Set(p+"/missing", nil, -1)), zk.ErrNoNode},
		{"delete missing", c.Delete(p+"/missing", -1), zk.ErrNoNode},
		{"children of missing", third(c.Children(p + "/missing")), zk.ErrNoNode},
		{"getACL missing", third(c.GetACL(p + "/missing")), zk.ErrNoNode},
		{"set bad version", second(c.Set(p, nil, 7)), zk.ErrBadVersion},
		{"delete bad version", c.Delete(p, 7), zk.ErrBadVersion},
		{"delete root", c.Delete("/", -1), zk.ErrBadArguments},
		{"delete /zookeeper", c.Delete("/zookeeper", -1), zk.ErrBadArguments},
		{"empty ACL", second(c.Create(p+"/noacl", nil, 0, nil)), zk.ErrInvalidACL},
	}
	for _, ch := range checks {
		if !errors.Is(ch.err, ch.want) {
			t.Errorf("%s: %v, want %v", ch.name, ch.err, ch.want)
		}
	}
	if ok, st, err := c.Exists(p + "/missing"); ok || err != nil || st == nil {
		t.Errorf("exists missing = %v, %v, %v; want false, empty stat, nil", ok, st, err)
	}
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

func caseContainerTTL(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagPersistent)
	acl := zk.WorldACL(zk.PermAll)

	if got, err := c.CreateContainer(p+"/ctr", []byte("c"), zk.FlagContainer, acl); err != nil || got != p+"/ctr" {
		t.Fatalf("create container = %q, %v", got, err)
	}
	// Apache hides the container/TTL markers: clients see ephemeralOwner 0.
	st := mustStat(t, c, p+"/ctr")
	if st.EphemeralOwner != 0 || st.DataLength != 1 {
		t.Errorf("container: ephemeralOwner %#x dataLength %d, want 0 and 1", st.EphemeralOwner, st.DataLength)
	}
	mustCreate(t, c, p+"/ctr/child", nil, zk.FlagPersistent)

	if got, err := c.CreateTTL(p+"/ttl", []byte("t"), zk.FlagTTL, acl, time.Hour); err != nil || got != p+"/ttl" {
		t.Fatalf("create TTL = %q, %v", got, err)
	}
	st = mustStat(t, c, p+"/ttl")
	if st.EphemeralOwner != 0 {
		t.Errorf("TTL node ephemeralOwner = %#x, want 0", st.EphemeralOwner)
	}
	got, err := c.CreateTTL(p+"/ttlseq-", nil, zk.FlagPersistentSequentialWithTTL, acl, time.Hour)
	if err != nil || got != p+"/ttlseq-0000000002" {
		t.Errorf("create sequential TTL = %q, %v; want %s", got, err, p+"/ttlseq-0000000002")
	}
	// TTL must be positive.
	if _, err := c.CreateTTL(p+"/ttl0", nil, zk.FlagTTL, acl, 0); !errors.Is(err, zk.ErrBadArguments) {
		t.Errorf("TTL 0: %v, want ErrBadArguments", err)
	}
}

func caseMulti(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, []byte("base"), zk.FlagPersistent)
	acl := zk.WorldACL(zk.PermAll)

	// A failing op in the middle: nothing is applied, earlier ops report OK,
	// the failing one its error, later ones RuntimeInconsistency (-2).
	res, err := c.Multi(
		&zk.CreateRequest{Path: p + "/a", Data: []byte("a"), Acl: acl},
		&zk.SetDataRequest{Path: p, Data: []byte("changed"), Version: -1},
		&zk.SetDataRequest{Path: p + "/missing", Data: nil, Version: -1},
		&zk.CreateRequest{Path: p + "/b", Acl: acl},
	)
	if !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("failing multi error = %v, want ErrNoNode", err)
	}
	if len(res) != 4 {
		t.Fatalf("failing multi: %d results, want 4", len(res))
	}
	if res[0].Error != nil || res[1].Error != nil || !errors.Is(res[2].Error, zk.ErrNoNode) ||
		res[3].Error == nil || res[3].Error.Error() != "unknown error: -2" {
		t.Errorf("failing multi results = %v, %v, %v, %v; want nil, nil, ErrNoNode, code -2",
			res[0].Error, res[1].Error, res[2].Error, res[3].Error)
	}
	if ok, _, _ := c.Exists(p + "/a"); ok {
		t.Errorf("failed multi left %s/a behind", p)
	}
	if data, st, _ := c.Get(p); string(data) != "base" || st.Version != 0 || st.Cversion != 0 {
		t.Errorf("failed multi changed %s: data %q version %d cversion %d", p, data, st.Version, st.Cversion)
	}

	// A failing check op.
	if _, err := c.Multi(
		&zk.CreateRequest{Path: p + "/a", Acl: acl},
		&zk.CheckVersionRequest{Path: p, Version: 3},
	); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("multi with failing check: %v, want ErrBadVersion", err)
	}
	if ok, _, _ := c.Exists(p + "/a"); ok {
		t.Errorf("multi with failing check left %s/a behind", p)
	}

	// A successful multi applies everything, in order, with one zxid.
	res, err = c.Multi(
		&zk.CheckVersionRequest{Path: p, Version: 0},
		&zk.CreateRequest{Path: p + "/s-", Data: []byte("1"), Acl: acl, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: p, Data: []byte("v1"), Version: 0},
		&zk.CreateRequest{Path: p + "/gone", Acl: acl},
		&zk.DeleteRequest{Path: p + "/gone", Version: 0},
	)
	if err != nil || len(res) != 5 {
		t.Fatalf("multi = %d results, %v", len(res), err)
	}
	if res[1].String != p+"/s-0000000000" {
		t.Errorf("multi sequential create = %q, want %s", res[1].String, p+"/s-0000000000")
	}
	if res[2].Stat == nil || res[2].Stat.Version != 1 {
		t.Errorf("multi setData stat = %+v, want version 1", res[2].Stat)
	}
	st := mustStat(t, c, p)
	child := mustStat(t, c, p+"/s-0000000000")
	// Every op of a multi carries the multi's zxid.
	if st.Mzxid != child.Czxid || st.Pzxid != child.Czxid {
		t.Errorf("multi zxids: parent mzxid %d pzxid %d, child czxid %d; want all equal", st.Mzxid, st.Pzxid, child.Czxid)
	}
	// Two creates and a delete: visible cversion 2×2−1 (see caseCRUDStat).
	wantCounts(t, "after multi", st, counts{version: 1, cversion: 3, dataLength: 2, numChildren: 1})
}

func caseSystemNodes(t *ct, tg target) {
	c := connect(t, tg)
	root, _, err := c.Children("/")
	if err != nil || !contains(root, "zookeeper") {
		t.Errorf("children of / = %v, %v; want zookeeper among them", root, err)
	}
	sys, _, err := c.Children("/zookeeper")
	if err != nil || !contains(sys, "config") || !contains(sys, "quota") || len(sys) != 2 {
		t.Errorf("children of /zookeeper = %v, %v; want [config quota]", sys, err)
	}
	data, _, err := c.Get("/zookeeper/config")
	if err != nil || len(data) != 0 {
		t.Errorf("get /zookeeper/config = %q, %v; want empty", data, err)
	}
	p := casePath(t)
	if got, err := c.Sync(p); err != nil || got != p {
		t.Errorf("sync %s = %q, %v; want the path echoed", p, got, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
