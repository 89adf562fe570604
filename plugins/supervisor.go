package plugins

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

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
// error wrapping rpc.ErrConnection. State says how the plugin is doing.
type Supervisor struct {
	cfg SupervisorConfig
	cur atomic.Pointer[Plugin]

	mu        sync.Mutex
	state     State
	tried     chan struct{} // closed once the first start attempt ended
	triedOnce sync.Once
}

// State is what a supervisor knows of its plugin, for readiness checks.
type State struct {
	Name string // Config.Name
	Path string // Config.Path
	// Up says whether a plugin process runs and serves.
	Up bool
	// Pid is the running process's id; 0 while the plugin is down.
	Pid int
	// Since is when the plugin last came up or went down; zero until the
	// first start attempt has ended.
	Since time.Time
	// Failures counts the failed starts and deaths since the plugin was
	// last up.
	Failures int
	// Err says why the plugin last failed to start or went down; nil if
	// it never did. It stays set while the plugin is up again.
	Err error
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
	return &Supervisor{cfg: cfg, state: State{Name: cfg.Name, Path: cfg.Path}, tried: make(chan struct{})}
}

// State returns what the supervisor knows of its plugin now.
func (s *Supervisor) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Tried is closed once the first attempt to start the plugin has ended,
// whether the plugin came up or not, or Run has returned: State then says
// which.
func (s *Supervisor) Tried() <-chan struct{} { return s.tried }

// setState records that p is up, or that the plugin failed (err), or that
// it was stopped (neither), and closes Tried.
func (s *Supervisor) setState(p *Plugin, err error) {
	s.mu.Lock()
	s.state.Up, s.state.Pid, s.state.Since = p != nil, 0, time.Now()
	switch {
	case p != nil:
		s.state.Pid, s.state.Failures = p.Pid(), 0
	case err != nil:
		s.state.Failures++
		s.state.Err = err
	}
	s.mu.Unlock()
	s.triedOnce.Do(func() { close(s.tried) })
}

// Run starts the plugin and restarts it whenever it dies or fails to start,
// until ctx ends; then it stops the plugin and returns nil. It returns an
// error only for a config it can never start (no Path).
func (s *Supervisor) Run(ctx context.Context) error {
	defer s.triedOnce.Do(func() { close(s.tried) })
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
			s.setState(nil, err)
			log.Error("plugin failed to start", "err", err, "retry_in", backoff, "failures", s.State().Failures)
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
		s.setState(p, nil)
		var why error
		select {
		case <-p.Done():
			why = p.Err()
		case <-ctx.Done():
			why = ctx.Err()
		}
		s.cur.CompareAndSwap(p, nil)
		if ctx.Err() == nil {
			s.setState(nil, why)
		} else {
			s.setState(nil, nil)
		}
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

// CallProto calls the running plugin (Plugin.CallProto); between
// processes the call fails at once with Unavailable.
func (s *Supervisor) CallProto(ctx context.Context, c ProtoCall, req []byte, done func(resp []byte, trailer Metadata, st *Status)) {
	p := s.cur.Load()
	if p == nil {
		done(nil, nil, s.notRunning())
		return
	}
	p.CallProto(ctx, c, req, done)
}

// OpenStream opens a stream to the running plugin (Plugin.OpenStream);
// between processes it fails at once with Unavailable.
func (s *Supervisor) OpenStream(ctx context.Context, c ProtoCall) (*Stream, error) {
	p := s.cur.Load()
	if p == nil {
		return nil, s.notRunning()
	}
	return p.OpenStream(ctx, c)
}

// notRunning is the status of protobuf calls between processes.
func (s *Supervisor) notRunning() *Status {
	return &Status{Code: codes.Unavailable, Message: "plugin " + s.cfg.Name + " is not running (starting or restarting)"}
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
