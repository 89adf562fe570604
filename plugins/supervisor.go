package plugins

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// SupervisorConfig describes a plugin to keep running.
type SupervisorConfig struct {
	Config
	// MinBackoff is the wait before restarting a plugin that died or failed
	// to start. Default 100ms.
	MinBackoff time.Duration
	// MaxBackoff caps the wait, which doubles after each failure in a row;
	// a plugin that stayed up at least MaxBackoff starts again from
	// MinBackoff. Default 5s.
	MaxBackoff time.Duration
	// OnUp is called each time the plugin is up, with what it serves, so
	// the owner can register those services. Default none.
	OnUp func(p *Plugin, services []ServiceDesc)
	// OnDown is called each time the plugin went away (it died, or Run's
	// context ended), with why, so the owner can unregister its services.
	// Calls already fail fast with rpc.ErrConnection when it runs.
	// Default none.
	OnDown func(p *Plugin, err error)
}

// Supervisor keeps one plugin running. It is an rpc.Invoker that calls the
// current plugin process; between processes calls fail at once with an
// error wrapping rpc.ErrConnection.
type Supervisor struct {
	cfg SupervisorConfig
	cur atomic.Pointer[Plugin]
}

// NewSupervisor returns a supervisor; Run starts it.
func NewSupervisor(cfg SupervisorConfig) *Supervisor {
	cfg.Config = cfg.Config.withDefaults()
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	return &Supervisor{cfg: cfg}
}

// Run starts the plugin and restarts it whenever it dies or fails to start,
// until ctx ends; then it stops the plugin and returns nil. It returns an
// error only for a config it can never start (no Path).
func (s *Supervisor) Run(ctx context.Context) error {
	if s.cfg.Path == "" {
		return errors.New("plugins: SupervisorConfig.Path is empty")
	}
	log := s.cfg.Logger.With("plugin", s.cfg.Name)
	backoff := s.cfg.MinBackoff
	for {
		p, err := Start(ctx, s.cfg.Config)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error("plugin failed to start", "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, s.cfg.MaxBackoff)
			continue
		}
		started := time.Now()
		s.cur.Store(p)
		if s.cfg.OnUp != nil {
			s.cfg.OnUp(p, p.Services())
		}
		var why error
		select {
		case <-p.Done():
			why = p.Err()
		case <-ctx.Done():
			why = ctx.Err()
		}
		s.cur.CompareAndSwap(p, nil)
		if s.cfg.OnDown != nil {
			s.cfg.OnDown(p, why)
		}
		p.Close()
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(started) >= s.cfg.MaxBackoff {
			backoff = s.cfg.MinBackoff
		}
		log.Warn("restarting plugin", "reason", why, "in", backoff)
		if !sleep(ctx, backoff) {
			return nil
		}
		backoff = min(2*backoff, s.cfg.MaxBackoff)
	}
}

// Plugin returns the running plugin, or nil between processes.
func (s *Supervisor) Plugin() *Plugin { return s.cur.Load() }

// Invoke calls the running plugin.
func (s *Supervisor) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	p := s.cur.Load()
	if p == nil {
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Service: inv.Service, Method: inv.Method,
			Detail: "plugin " + s.cfg.Name + " is not running (starting or restarting)"}
	}
	return p.Invoke(ctx, inv)
}

// InvokeAsync calls the running plugin without waiting (Plugin.InvokeAsync).
func (s *Supervisor) InvokeAsync(ctx context.Context, inv *rpc.Invocation, done func(*rpc.Result, error)) {
	p := s.cur.Load()
	if p == nil {
		done(nil, &rpc.CallError{Kind: rpc.ErrConnection, Service: inv.Service, Method: inv.Method,
			Detail: "plugin " + s.cfg.Name + " is not running (starting or restarting)"})
		return
	}
	p.InvokeAsync(ctx, inv, done)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
