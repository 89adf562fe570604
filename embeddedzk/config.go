package embeddedzk

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is the [registry.server] section: how the embedded registry listens,
// where it keeps its data and the limits it enforces. Zero values mean the
// documented default, which is what Apache ZooKeeper 3.8 does unless noted.
type Config struct {
	// Listen is the client address. Default 127.0.0.1:2181.
	Listen string `koanf:"listen"`
	// DataDir holds the transaction log and snapshots. Default .dubbo/registry.
	DataDir string `koanf:"data-dir"`
	// TickTime is ZooKeeper's basic time unit. Default 2s.
	TickTime time.Duration `koanf:"tick-time"`
	// MinSessionTimeout bounds negotiated session timeouts. Default 2 × tick.
	MinSessionTimeout time.Duration `koanf:"min-session-timeout"`
	// MaxSessionTimeout bounds negotiated session timeouts. Default 20 × tick.
	MaxSessionTimeout time.Duration `koanf:"max-session-timeout"`
	// MaxClientCnxns is the per-IP connection limit; 0 means the default 60,
	// negative means unlimited.
	MaxClientCnxns int `koanf:"max-client-cnxns"`
	// MaxPacketSize is the largest frame accepted or sent, like jute.maxbuffer.
	// Default 0xfffff bytes.
	MaxPacketSize int `koanf:"max-packet-size"`
	// Fsync makes every acknowledged write durable before the reply. Default on.
	Fsync *bool `koanf:"fsync"`
	// SnapshotInterval is the longest time between snapshots while writes
	// arrive. Default 10m.
	SnapshotInterval time.Duration `koanf:"snapshot-interval"`
	// SnapshotCount forces a snapshot after this many logged transactions,
	// like ZooKeeper's snapCount. Default 100000.
	SnapshotCount int `koanf:"snapshot-count"`

	// FourLetterWhitelist names the four-letter words the server answers, as
	// ZooKeeper's 4lw.commands.whitelist: "*" enables all; srvr is always
	// on, as in Apache ZooKeeper. Any other word gets "<word> is not executed
	// because it is not in the whitelist.". An empty list leaves srvr only.
	// Default srvr, ruok: the others show sessions, paths and the
	// environment to anyone who can connect, or reset statistics.
	FourLetterWhitelist []string `koanf:"4lw-whitelist"`
	// SuperDigest enables ZooKeeper's super user, in the form of
	// zookeeper.DigestAuthenticationProvider.superDigest:
	// "super:<base64 sha1 of super:password>". A client that authenticates
	// (digest scheme) as super:password passes every ACL check. Default ""
	// (no super user).
	SuperDigest string `koanf:"super-digest"`

	// RecoverTruncate lets the server start on a transaction log damaged
	// before its last write: the damaged part and everything after it are
	// moved to side files next to the log (named *.damaged-*), and the
	// server starts from what precedes the damage. Default false: such damage
	// stops start-up with the file, the offset and this key.
	RecoverTruncate bool `koanf:"recover-truncate"`

	// handshakeTimeout bounds the wait for a new connection's first frame;
	// unexported so only tests change it. Default 5s.
	handshakeTimeout time.Duration
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:2181"
	}
	if c.DataDir == "" {
		c.DataDir = ".dubbo/registry"
	}
	if c.TickTime == 0 {
		c.TickTime = 2 * time.Second
	}
	if c.MinSessionTimeout == 0 {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == 0 {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.MaxClientCnxns == 0 {
		c.MaxClientCnxns = 60
	}
	if c.MaxPacketSize == 0 {
		c.MaxPacketSize = 0xfffff
	}
	if c.Fsync == nil {
		on := true
		c.Fsync = &on
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 10 * time.Minute
	}
	if c.SnapshotCount == 0 {
		c.SnapshotCount = 100000
	}
	if c.FourLetterWhitelist == nil {
		c.FourLetterWhitelist = []string{"srvr", "ruok"}
	}
	return c
}

// Validate reports the first setting that cannot work, naming its key.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.TickTime < time.Millisecond:
		return fmt.Errorf("tick-time %s: must be at least 1ms", c.TickTime)
	case c.MinSessionTimeout > c.MaxSessionTimeout:
		return fmt.Errorf("min-session-timeout %s is above max-session-timeout %s", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.MaxPacketSize < 1024:
		return fmt.Errorf("max-packet-size %d: must be at least 1024 bytes", c.MaxPacketSize)
	case c.SnapshotCount < 0:
		return fmt.Errorf("snapshot-count %d: must not be negative", c.SnapshotCount)
	case c.SnapshotInterval < 0:
		return fmt.Errorf("snapshot-interval %s: must not be negative", c.SnapshotInterval)
	}
	for _, w := range c.FourLetterWhitelist {
		if w = strings.TrimSpace(w); w != "" && w != "*" && !isFourLetterWord(w) {
			return fmt.Errorf("4lw-whitelist: unknown four-letter word %q (known: %s, or * for all)", w, strings.Join(fourLetterWords, ", "))
		}
	}
	if c.SuperDigest != "" && !validDigestID(c.SuperDigest) {
		return fmt.Errorf("super-digest: want super:<base64 of sha1(\"super:password\")>, as printed by "+
			"`printf %%s super:password | openssl dgst -binary -sha1 | base64` with super: before it (got %q)", c.SuperDigest)
	}
	return nil
}

// validDigestID reports whether id has the form user:<base64 sha1>.
func validDigestID(id string) bool {
	user, hash, ok := strings.Cut(id, ":")
	if !ok || user == "" {
		return false
	}
	sum, err := base64.StdEncoding.DecodeString(hash)
	return err == nil && len(sum) == 20
}

// enabledWords is the set of four-letter words the whitelist enables.
func (c Config) enabledWords() map[string]bool {
	on := map[string]bool{"srvr": true} // as Apache: zkServer.sh needs it
	for _, w := range c.FourLetterWhitelist {
		w = strings.TrimSpace(w)
		if w == "*" {
			for _, all := range fourLetterWords {
				on[all] = true
			}
		} else if slices.Contains(fourLetterWords, w) {
			on[w] = true
		}
	}
	return on
}

// FsyncOn reports whether writes are fsynced (default true).
func (c Config) FsyncOn() bool { return c.Fsync == nil || *c.Fsync }
