package plugins

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/watch"
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

	// Watch, when positive, is how often the supervisor looks at Path for
	// a new binary (package watch): once one has appeared, it starts it
	// beside the running process, and when it is up switches new calls to
	// it, lets the old process finish its calls and streams, and stops it
	// (a hot swap). A new binary that fails to start or to handshake
	// leaves the old process serving; it is tried again with the backoff
	// above, and at once when the file changes again. While the plugin is
	// down, a new binary ends the wait for the next start. Default 0: Path
	// is not watched.
	Watch time.Duration
	// DrainTimeout bounds how long a swapped-out process may finish its
	// calls and streams before it is stopped. Default 10s, the provider's
	// shutdown timeout.
	DrainTimeout time.Duration
	// OnSwap is called each time a new process took over (Watch), with
	// what it serves, so the owner can update what it registered: calls
	// from then on go to next; prev finishes those under way, then stops.
	// OnUp and OnDown are not called for a swap. Default none.
	OnSwap func(prev, next *Plugin, services []ServiceDesc)
	// OnRefused is called when a new binary failed to start while prev
	// keeps serving, with why, the attempt (1 for the first at this
	// binary, then each retry) and when it is tried again. Default none.
	OnRefused func(prev *Plugin, err error, attempt int, retry time.Duration)
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
	// Swaps counts the new binaries that took over from a running
	// process (SupervisorConfig.Watch).
	Swaps int
	// Refused says why the newest binary failed to start while an older
	// process keeps serving; nil when no new binary waits.
	Refused error
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
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 10 * time.Second
	}
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
		s.state.Pid, s.state.Failures, s.state.Refused = p.Pid(), 0, nil
	case err != nil:
		s.state.Failures++
		s.state.Err = err
	}
	s.mu.Unlock()
	s.triedOnce.Do(func() { close(s.tried) })
}

// Run starts the plugin and restarts it whenever it dies or fails to start,
// until ctx ends; then it stops the plugin and returns nil. With Watch it
// also swaps in each new binary. It returns an error only for a config it
// can never start (no Path).
func (s *Supervisor) Run(ctx context.Context) error {
	defer s.triedOnce.Do(func() { close(s.tried) })
	if s.cfg.Path == "" {
		return errors.New("plugins: SupervisorConfig.Path is empty")
	}
	log := s.cfg.Logger.With("plugin", s.cfg.Name)
	// The binary watcher, and the swapped-out processes finishing their
	// calls: Run returns once they are done.
	var bg sync.WaitGroup
	defer bg.Wait()
	changed := make(chan struct{}, 1) // a new binary is on disk
	if s.cfg.Watch > 0 {
		bg.Go(func() {
			watch.Binary(ctx, s.cfg.Path, s.cfg.Watch, func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
		})
	}
	backoff := s.cfg.MinBackoff
	var ok bool // false: ctx ended while pausing
	for {
		p, err := Start(ctx, s.cfg.Config)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.setState(nil, err)
			log.Error("plugin failed to start", "err", err, "retry_in", backoff, "failures", s.State().Failures)
			if backoff, ok = s.pause(ctx, backoff, changed); !ok {
				return nil
			}
			continue
		}
		started := time.Now()
		s.cur.Store(p)
		if s.cfg.OnUp != nil {
			s.cfg.OnUp(p, p.Services())
		}
		s.setState(p, nil)
		p, why := s.serve(ctx, p, changed, &bg, log)
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
		log.Info("restarting plugin", "reason", why, "in", backoff)
		if backoff, ok = s.pause(ctx, backoff, changed); !ok {
			return nil
		}
	}
}

// serve watches p, the running process, until it exits or ctx ends, and
// swaps it for each new binary that starts; it returns the process running
// then, and why it ended. A new binary that fails to start is tried again
// with backoff, and at once when another appears.
func (s *Supervisor) serve(ctx context.Context, p *Plugin, changed <-chan struct{}, drains *sync.WaitGroup, log *slog.Logger) (*Plugin, error) {
	backoff, attempt := s.cfg.MinBackoff, 0
	retry := time.NewTimer(0)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-p.Done():
			return p, p.Err()
		case <-ctx.Done():
			return p, ctx.Err()
		case <-changed:
			retry.Stop()
			backoff, attempt = s.cfg.MinBackoff, 0
		case <-retry.C:
		}
		attempt++
		next, err := Start(ctx, s.cfg.Config)
		if err != nil {
			if ctx.Err() != nil {
				return p, ctx.Err()
			}
			s.mu.Lock()
			s.state.Refused = err
			s.mu.Unlock()
			log.Info("new plugin binary refused; the running process keeps serving", "pid", p.Pid(), "err", err, "attempt", attempt, "retry_in", backoff)
			if s.cfg.OnRefused != nil {
				s.cfg.OnRefused(p, err, attempt, backoff)
			}
			retry.Reset(backoff)
			backoff = min(2*backoff, s.cfg.MaxBackoff)
			continue
		}
		s.swap(ctx, p, next, drains, log)
		p = next
	}
}

// swap switches the calls from prev to next, which is up, and stops prev
// once it has finished the calls and streams under way (in the
// background, counted in drains).
func (s *Supervisor) swap(ctx context.Context, prev, next *Plugin, drains *sync.WaitGroup, log *slog.Logger) {
	s.cur.Store(next)
	prev.handOver(next) // the calls that loaded prev just before go to next too
	// The state says so before OnSwap's work (re-exports) starts: next is
	// taking the calls already.
	s.setState(next, nil)
	s.mu.Lock()
	s.state.Swaps++
	s.mu.Unlock()
	if s.cfg.OnSwap != nil {
		s.cfg.OnSwap(prev, next, next.Services())
	}
	log.Info("plugin swapped", "pid", next.Pid(), "old_pid", prev.Pid(), "services", len(next.Services()))
	drains.Go(func() {
		dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
		defer cancel()
		if !prev.drain(dctx) && ctx.Err() == nil {
			log.Warn("the swapped-out plugin process still had calls under way; stopping it", "pid", prev.Pid(), "drain_timeout", s.cfg.DrainTimeout)
		}
		prev.Close()
	})
}

// pause waits backoff before the next start, or less when a new binary
// appears, which starts at once with the backoff reset; false when ctx
// ended. It returns the backoff after this one.
func (s *Supervisor) pause(ctx context.Context, backoff time.Duration, changed <-chan struct{}) (time.Duration, bool) {
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-t.C:
		return min(2*backoff, s.cfg.MaxBackoff), true
	case <-changed:
		return s.cfg.MinBackoff, true
	case <-ctx.Done():
		return backoff, false
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
func (s *Supervisor) CallProto(ctx context.Context, c ProtoCall, req []byte, done func(resp []byte, trailer rpc.Metadata, st *Status)) {
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
