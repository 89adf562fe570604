package catalog

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Staleness marks a provider node left by a ZooKeeper session that is
// gone. ZooKeeper cannot be asked whether another session lives, but only
// one process can serve an address:port: when a node of a newer session
// names the same address as a node of an older one, the older one's
// provider has gone (killed with -9, its host lost) and ZooKeeper removes
// the node once that session expires. Until then the node is listed as
// stale, not as a second provider.
type Staleness struct {
	Stale bool `json:"stale,omitempty"`
	// StaleSince is when the address registered again, in the newer session.
	StaleSince time.Time `json:"stale_since,omitzero"`
	// StaleReason says what happened, for people.
	StaleReason string `json:"stale_reason,omitempty"`
	// ExpiresBy is when the node is gone at the latest, when that can be
	// known: StaleSince plus the session timeout its URL declares (the
	// "session" parameter, in ms, as Java names a registry's). Zero when
	// the URL declares none, as providers' URLs usually do not: then the
	// node goes when its session expires, the registry's session timeout
	// after its provider stopped.
	ExpiresBy time.Time `json:"expires_by,omitzero"`
}

// staleNodes finds the nodes of a providers folder left by sessions that
// are gone. Only addresses with more than one node cost a read each (of
// their nodes' owners and creation times): a folder of distinct providers
// costs none. names are the folder's children, decoded in urls.
func (c *Catalog) staleNodes(folder string, names []string, urls map[string]*url.URL) (map[*url.URL]Staleness, error) {
	byAddr := map[string][]string{}
	for _, name := range names {
		if u := urls[name]; u != nil {
			byAddr[u.Address()] = append(byAddr[u.Address()], name)
		}
	}
	var out map[*url.URL]Staleness
	for _, group := range byAddr {
		if len(group) < 2 {
			continue
		}
		stats := make(map[string]*zk.Stat, len(group))
		var newest *zk.Stat
		for _, name := range group {
			ok, st, err := c.conn.Exists(folder + "/" + name)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return nil, fmt.Errorf("read %s: %w", folder, err)
			}
			if !ok || st.EphemeralOwner == 0 {
				continue // gone meanwhile, or persistent (dynamic=false): never stale
			}
			stats[name] = st
			if newest == nil || st.Ctime > newest.Ctime {
				newest = st
			}
		}
		for name, st := range stats {
			if st.EphemeralOwner == newest.EphemeralOwner {
				continue
			}
			if out == nil {
				out = map[*url.URL]Staleness{}
			}
			u := urls[name]
			since := time.UnixMilli(newest.Ctime)
			s := Staleness{Stale: true, StaleSince: since,
				StaleReason: fmt.Sprintf("left by ZooKeeper session 0x%x, which is gone: %s registered again in session 0x%x at %s; "+
					"ZooKeeper removes this node when the old session expires",
					st.EphemeralOwner, u.Address(), newest.EphemeralOwner, since.Format(time.RFC3339))}
			if ms := u.IntParam("session", 0); ms > 0 {
				s.ExpiresBy = since.Add(time.Duration(ms) * time.Millisecond)
			}
			out[u] = s
		}
	}
	return out, nil
}
