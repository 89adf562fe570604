package tree

import (
	"crypto/sha1"
	"encoding/base64"
	"net"
	"strings"

	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

// Caller is who asks for an operation: the session (owner of ephemerals it
// creates) and the auth ids of its connection. Super skips ACL checks (used
// by the server's own reapers).
type Caller struct {
	Session int64
	IDs     []wire.ID
	Super   bool
}

// DigestID is the id ZooKeeper's digest scheme records for "user:password":
// user + ":" + base64(sha1("user:password")).
func DigestID(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// allowed reports whether the caller holds perm on a node with acl.
func allowed(acl []wire.ACL, perm int32, c Caller) bool {
	if c.Super || len(acl) == 0 {
		return true
	}
	for _, id := range c.IDs {
		if id.Scheme == "super" {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID == wire.WorldAnyone {
			return true
		}
		for _, id := range c.IDs {
			if id.Scheme == a.ID.Scheme && idMatches(id.Scheme, id.ID, a.ID.ID) {
				return true
			}
		}
	}
	return false
}

func idMatches(scheme, have, expr string) bool {
	if scheme != "ip" {
		return have == expr
	}
	ip := net.ParseIP(have)
	if ip == nil {
		return false
	}
	if strings.Contains(expr, "/") {
		_, n, err := net.ParseCIDR(expr)
		return err == nil && n.Contains(ip)
	}
	want := net.ParseIP(expr)
	return want != nil && want.Equal(ip)
}

// fixACL validates and expands an ACL list as ZooKeeper's fixupACL does:
// duplicates dropped, empty list refused, auth: replaced by the caller's
// authenticated (digest) ids, other schemes checked by their provider.
func fixACL(acl []wire.ACL, c Caller) ([]wire.ACL, bool) {
	var out []wire.ACL
	add := func(a wire.ACL) {
		for _, have := range out {
			if have == a {
				return
			}
		}
		out = append(out, a)
	}
	if len(acl) == 0 {
		return nil, false
	}
	for _, a := range acl {
		switch {
		case a.ID == wire.WorldAnyone:
			add(a)
		case a.ID.Scheme == "auth":
			found := false
			// Only ids of an authentication provider: Apache has none for
			// "super", so a super user's auth ACL names its digest id alone.
			for _, id := range c.IDs {
				if id.Scheme == "digest" {
					found = true
					add(wire.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !found {
				return nil, false
			}
		case a.ID.Scheme == "digest":
			_, hash, ok := strings.Cut(a.ID.ID, ":")
			if !ok || hash == "" || strings.Contains(hash, ":") {
				return nil, false
			}
			add(a)
		case a.ID.Scheme == "ip":
			if !validIPExpr(a.ID.ID) {
				return nil, false
			}
			add(a)
		default:
			return nil, false
		}
	}
	return out, true
}

func validIPExpr(s string) bool {
	if strings.Contains(s, "/") {
		_, _, err := net.ParseCIDR(s)
		return err == nil
	}
	return net.ParseIP(s) != nil
}

// maskDigests hides the hash of digest ids for callers without ADMIN.
func maskDigests(acl []wire.ACL) []wire.ACL {
	out := make([]wire.ACL, len(acl))
	for i, a := range acl {
		if a.ID.Scheme == "digest" {
			user, _, _ := strings.Cut(a.ID.ID, ":")
			a.ID.ID = user + ":x"
		}
		out[i] = a
	}
	return out
}
