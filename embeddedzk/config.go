package embeddedzk

import (
	"fmt"
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
	return nil
}

// FsyncOn reports whether writes are fsynced (default true).
func (c Config) FsyncOn() bool { return c.Fsync == nil || *c.Fsync }
