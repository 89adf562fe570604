package embeddedzk_test

import (
	"errors"
	"reflect"

	"github.com/go-zookeeper/zk"
)

// digestID is the digest id of user:password (PROTOCOLS.md §A.10 vector).
const digestID = "user:tpUq/4Pn5A64fVZyQ0gOJ8ZWqkY="

func aclCases() []conformanceCase {
	return []conformanceCase{
		{"acl_digest", caseACLDigest},
		{"acl_auth_scheme", caseACLAuthScheme},
		{"acl_world_read_only", caseACLReadOnly},
		{"acl_set_version", caseACLSetVersion},
		{"acl_super_user", caseACLSuper},
	}
}

func caseACLDigest(t *ct, tg target) {
	owner := connect(t, tg)
	if err := owner.AddAuth("digest", []byte("user:password")); err != nil {
		t.Fatalf("addAuth: %v", err)
	}
	stranger := connect(t, tg)
	wrong := connect(t, tg)
	if err := wrong.AddAuth("digest", []byte("user:wrong")); err != nil {
		t.Fatalf("addAuth with another password: %v", err)
	}
	p := casePath(t)
	if _, err := owner.Create(p, []byte("secret"), 0, zk.DigestACL(zk.PermAll, "user", "password")); err != nil {
		t.Fatalf("create with digest ACL: %v", err)
	}
	if data, _, err := owner.Get(p); err != nil || string(data) != "secret" {
		t.Errorf("owner get = %q, %v", data, err)
	}
	for name, c := range map[string]*zk.Conn{"no auth": stranger, "wrong password": wrong} {
		if _, _, err := c.Get(p); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: get = %v, want ErrNoAuth", name, err)
		}
		if _, err := c.Set(p, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: set = %v, want ErrNoAuth", name, err)
		}
		if _, err := c.Create(p+"/child", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: create child = %v, want ErrNoAuth", name, err)
		}
		if _, _, err := c.GetACL(p); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s: getACL = %v, want ErrNoAuth", name, err)
		}
		// exists checks no ACL in Apache 3.8 (PROTOCOLS.md §A.6 describes a
		// READ check from later versions).
		if ok, _, err := c.Exists(p); !ok || err != nil {
			t.Errorf("%s: exists = %v, %v; want true", name, ok, err)
		}
	}
	acl, st, err := owner.GetACL(p)
	want := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: digestID}}
	if err != nil || !reflect.DeepEqual(acl, want) || st.Aversion != 0 {
		t.Errorf("getACL = %+v (aversion %d), %v; want %+v", acl, st.Aversion, err, want)
	}
}

func caseACLAuthScheme(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	// auth:"" with no credentials on the connection is invalid.
	if _, err := c.Create(p, nil, 0, zk.AuthACL(zk.PermAll)); !errors.Is(err, zk.ErrInvalidACL) {
		t.Errorf("auth ACL without credentials: %v, want ErrInvalidACL", err)
	}
	if err := c.AddAuth("digest", []byte("user:password")); err != nil {
		t.Fatalf("addAuth: %v", err)
	}
	// auth:"" expands to every authenticated id of the connection.
	if _, err := c.Create(p, nil, 0, zk.AuthACL(zk.PermRead|zk.PermWrite)); err != nil {
		t.Fatalf("create with auth ACL: %v", err)
	}
	// getACL needs READ or ADMIN; without ADMIN digest ids come back
	// masked as user:x.
	acl, _, err := c.GetACL(p)
	want := []zk.ACL{{Perms: zk.PermRead | zk.PermWrite, Scheme: "digest", ID: "user:x"}}
	if err != nil || !reflect.DeepEqual(acl, want) {
		t.Errorf("getACL = %+v, %v; want %+v", acl, err, want)
	}
	// With ADMIN the full digest id is shown.
	if _, err := c.Create(p+"-admin", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("create with auth ACL: %v", err)
	}
	acl, _, err = c.GetACL(p + "-admin")
	want = []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: digestID}}
	if err != nil || !reflect.DeepEqual(acl, want) {
		t.Errorf("getACL with ADMIN = %+v, %v; want %+v", acl, err, want)
	}
	other := connect(t, tg)
	if _, _, err := other.Get(p); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("other session get = %v, want ErrNoAuth", err)
	}
}

func caseACLReadOnly(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagPersistent)
	if _, err := c.Create(p+"/ro", []byte("fixed"), 0, zk.WorldACL(zk.PermRead)); err != nil {
		t.Fatalf("create read-only: %v", err)
	}
	if data, _, err := c.Get(p + "/ro"); err != nil || string(data) != "fixed" {
		t.Errorf("get read-only node = %q, %v", data, err)
	}
	if _, err := c.Set(p+"/ro", []byte("changed"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("set read-only node = %v, want ErrNoAuth", err)
	}
	if _, err := c.Create(p+"/ro/child", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("create under read-only node = %v, want ErrNoAuth", err)
	}
	if _, err := c.SetACL(p+"/ro", zk.WorldACL(zk.PermAll), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("setACL without ADMIN = %v, want ErrNoAuth", err)
	}
	acl, _, err := c.GetACL(p + "/ro")
	if want := zk.WorldACL(zk.PermRead); err != nil || !reflect.DeepEqual(acl, want) {
		t.Errorf("getACL = %+v, %v; want %+v", acl, err, want)
	}
	// Delete is checked against the parent's ACL, which is open.
	if err := c.Delete(p+"/ro", -1); err != nil {
		t.Errorf("delete read-only node under open parent: %v", err)
	}
}

func caseACLSetVersion(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, []byte("d"), zk.FlagPersistent)
	st, err := c.SetACL(p, zk.WorldACL(zk.PermRead|zk.PermAdmin), 0)
	if err != nil {
		t.Fatalf("setACL version 0: %v", err)
	}
	// setACL bumps aversion only.
	wantCounts(t, "after setACL", st, counts{aversion: 1, dataLength: 1})
	if _, err := c.SetACL(p, zk.WorldACL(zk.PermAll), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("setACL with stale aversion = %v, want ErrBadVersion", err)
	}
	if _, err := c.SetACL(p, nil, -1); !errors.Is(err, zk.ErrInvalidACL) {
		t.Errorf("setACL empty = %v, want ErrInvalidACL", err)
	}
	acl, st, err := c.GetACL(p)
	if want := zk.WorldACL(zk.PermRead | zk.PermAdmin); err != nil || !reflect.DeepEqual(acl, want) || st.Aversion != 1 {
		t.Errorf("getACL = %+v (aversion %d), %v; want %+v, 1", acl, st.Aversion, err, want)
	}
}

// caseACLSuper: a client without auth locks a node with setAcl
// world:anyone:r and cannot undo it; the super user (superDigest) can, and
// passes every other ACL check too.
func caseACLSuper(t *ct, tg target) {
	p := casePath(t)
	stranger := connect(t, tg)
	mustCreate(t, stranger, p, []byte("v0"), zk.FlagPersistent)
	if _, err := stranger.SetACL(p, zk.WorldACL(zk.PermRead), -1); err != nil {
		t.Fatalf("setAcl world:anyone:r: %v", err)
	}
	if _, err := stranger.SetACL(p, zk.WorldACL(zk.PermAll), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("undo setAcl without auth = %v, want ErrNoAuth", err)
	}
	if _, err := stranger.Create(p+"/child", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("create under the locked node = %v, want ErrNoAuth", err)
	}

	// The super user's name with another password is an ordinary user.
	impostor := connect(t, tg)
	if err := impostor.AddAuth("digest", []byte("super:guess")); err != nil {
		t.Fatalf("addAuth super:guess: %v", err)
	}
	if _, err := impostor.SetACL(p, zk.WorldACL(zk.PermAll), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("setAcl as super:guess = %v, want ErrNoAuth", err)
	}

	super := connect(t, tg)
	if err := super.AddAuth("digest", []byte(confSuperAuth)); err != nil {
		t.Fatalf("addAuth super: %v", err)
	}
	if _, err := super.SetACL(p, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatalf("super undoes setAcl: %v", err)
	}
	if _, err := stranger.Set(p, []byte("v1"), -1); err != nil {
		t.Errorf("set after super restored the ACL: %v", err)
	}

	// Another user's node: no ACL stops the super user, and getACL shows
	// the digest id unmasked.
	owner := connect(t, tg)
	if err := owner.AddAuth("digest", []byte("user:password")); err != nil {
		t.Fatalf("addAuth: %v", err)
	}
	if _, err := owner.Create(p+"/private", []byte("secret"), 0, zk.DigestACL(zk.PermRead|zk.PermWrite, "user", "password")); err != nil {
		t.Fatalf("create private: %v", err)
	}
	if data, _, err := super.Get(p + "/private"); err != nil || string(data) != "secret" {
		t.Errorf("super get private = %q, %v", data, err)
	}
	acl, _, err := super.GetACL(p + "/private")
	if want := []zk.ACL{{Perms: zk.PermRead | zk.PermWrite, Scheme: "digest", ID: digestID}}; err != nil || !reflect.DeepEqual(acl, want) {
		t.Errorf("super getACL = %+v, %v; want %+v", acl, err, want)
	}
	if _, err := super.Create(p+"/private/kid", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("super creates under a node without CREATE for anyone: %v", err)
	}

	// auth:"" expands to the super user's digest id only.
	if _, err := super.Create(p+"/mine", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("super create with auth ACL: %v", err)
	}
	acl, _, err = super.GetACL(p + "/mine")
	if want := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: confSuperDigest}}; err != nil || !reflect.DeepEqual(acl, want) {
		t.Errorf("getACL of a node the super user created with auth ACL = %+v, %v; want %+v", acl, err, want)
	}
	if _, _, err := stranger.Get(p + "/mine"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("stranger get of the super user's node = %v, want ErrNoAuth", err)
	}

	raw, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	var e jute
	e.int(0)
	e.str("digest")
	e.buf([]byte(confSuperAuth))
	if code, _, err := raw.call(opAuth, e.b); err != nil || code != 0 {
		t.Fatalf("raw auth: code %d, %v", code, err)
	}
	want := []clientInfo{{"digest", "super"}, {"ip", "127.0.0.1"}, {"super", ""}}
	if got := whoAmI(t, raw); !reflect.DeepEqual(got, want) {
		t.Errorf("whoAmI of the super user = %+v, want %+v", got, want)
	}
}
