package monitor

import (
	"fmt"
	"time"

	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Config is the [monitor] section: how every node reports its statistics,
// and (Server) how the monitor role runs.
type Config struct {
	// Enabled makes nodes count their calls and report them. Default true.
	Enabled *bool `koanf:"enabled"`
	// Address is the monitor's dubbo://host:port. Default "": nodes find
	// the MonitorService in the registry, where the monitor registers it.
	Address string `koanf:"address"`
	// Interval is how often a node sends its statistics. Default 60s
	// (Dubbo's), at least 1s.
	Interval time.Duration `koanf:"interval"`
	// Buffer is how many intervals a node keeps while the monitor cannot
	// be reached; past it the oldest are dropped. Default an hour of
	// intervals (60 at the default interval).
	Buffer int `koanf:"buffer"`
	// Spool is the directory where a stopping node leaves the statistics
	// a monitor that was there did not take (report.Spool, at most 32 MiB),
	// for the next process started with it to send, and the monitor role
	// to store: <data-dir>/spool, set by package config (not a key of
	// its own); "" = none.
	Spool string `koanf:"-"`
	// Server is the monitor role.
	Server ServerConfig `koanf:"server"`
}

// ServerConfig is the [monitor.server] section: the monitor role.
type ServerConfig struct {
	// Port is the MonitorService's dubbo port. Default 7070; -1 picks a
	// free port.
	Port int `koanf:"port"`
	// DB is the statistics database (SQLite). Required; dubbo.toml's
	// default is <data-dir>/monitor.db.
	DB string `koanf:"db"`
	// RawRetention is how long rows are kept as reported, before they are
	// folded into hourly rows. Default 24h, at least 1h.
	RawRetention time.Duration `koanf:"raw-retention"`
	// RollupRetention is how long hourly rows are kept. Default 720h (30
	// days), at least RawRetention.
	RollupRetention time.Duration `koanf:"rollup-retention"`
}

// Defaults of ServerConfig.
const (
	DefaultPort            = 7070
	DefaultRawRetention    = 24 * time.Hour
	DefaultRollupRetention = 30 * 24 * time.Hour
)

// IsEnabled says whether nodes count and report (Enabled, default true).
func (c Config) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Validate says what is wrong with the section, naming the key.
func (c Config) Validate() error {
	if c.Interval != 0 && c.Interval < report.MinInterval {
		return fmt.Errorf("monitor.interval: %s is shorter than %s", c.Interval, report.MinInterval)
	}
	if c.Buffer < 0 {
		return fmt.Errorf("monitor.buffer: %d is negative", c.Buffer)
	}
	if c.Address != "" {
		if _, err := directAddress(c.Address); err != nil {
			return fmt.Errorf("monitor.address: %w", err)
		}
	}
	s := c.Server
	if s.Port < -1 || s.Port > 65535 {
		return fmt.Errorf("monitor.server.port: %d is not a port (-1 picks a free one)", s.Port)
	}
	if s.RawRetention != 0 && s.RawRetention < time.Hour {
		return fmt.Errorf("monitor.server.raw-retention: %s is under 1h", s.RawRetention)
	}
	raw := s.RawRetention
	if raw == 0 {
		raw = DefaultRawRetention
	}
	if s.RollupRetention != 0 && s.RollupRetention < raw {
		return fmt.Errorf("monitor.server.rollup-retention: %s is shorter than raw-retention (%s)", s.RollupRetention, raw)
	}
	return nil
}

// directAddress reads monitor.address: dubbo://host:port.
func directAddress(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Protocol() != "dubbo" || u.Host() == "" || u.Port() == 0 {
		return "", fmt.Errorf("%q: want dubbo://host:port, or \"\" to find the monitor in the registry", s)
	}
	return u.Address(), nil
}
