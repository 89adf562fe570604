package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/triple"
	"github.com/dubbo-lab/dubbo/node/url"
)

// server is one protocol the provider serves: its listener's server and
// the address it registers.
type server struct {
	cfg     ProtocolConfig // Name set
	key     string         // its config table: protocol, protocols.tri
	host    string         // registered
	port    int            // registered
	bound   net.Addr
	anyhost bool
	ln      net.Listener
	dubbo   *transport.Server // dubbo
	tri     *triple.Server    // tri
	served  chan struct{}     // tri: closed when Serve returned
}

// addr is the registered host:port.
func (s *server) addr() string { return net.JoinHostPort(s.host, strconv.Itoa(s.port)) }

// ListenError is a protocol's port the provider could not bind.
type ListenError struct {
	Key  string // the config table of the protocol: protocol, protocols.tri
	Addr string // host:port
	Err  error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("listen on %s: %v; pick a free %s.port or -1 for any", e.Addr, e.Err, e.Key)
}

func (e *ListenError) Unwrap() error { return e.Err }

// listen binds a protocol's port and decides the address to register: the
// bound one unless its registry-host and registry-port say otherwise.
func (p *Provider) listen(pc ProtocolConfig) (*server, error) {
	bindHost, regHost, anyhost := hosts(pc.Host)
	if pc.RegistryHost != "" {
		regHost = pc.RegistryHost
	}
	port := pc.Port
	switch port {
	case 0:
		port = defaultPort(pc.Name)
	case -1:
		port = 0 // a free one
	}
	addr := net.JoinHostPort(bindHost, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("provider %s: %w", p.cfg.Application, &ListenError{Key: p.cfg.key(pc), Addr: addr, Err: err})
	}
	s := &server{cfg: pc, key: p.cfg.key(pc), ln: ln, bound: ln.Addr(), port: ln.Addr().(*net.TCPAddr).Port, host: regHost, anyhost: anyhost}
	if pc.RegistryPort > 0 {
		s.port = pc.RegistryPort
	}
	return s, nil
}

// hosts decides the address to bind and the one to register.
func hosts(configured string) (bind, register string, anyhost bool) {
	switch configured {
	case "":
		h := url.LocalIP()
		return h, h, false
	case "0.0.0.0", "::":
		return configured, url.LocalIP(), true
	}
	return configured, configured, false
}

// startServer starts s's server on its listener.
func (p *Provider) startServer(s *server) error {
	pc := s.cfg
	switch pc.Name {
	case ProtocolTriple:
		cfg := triple.Config{MaxMessage: pc.Payload, Accepts: pc.Accepts, FrameTimeout: pc.FrameTimeout,
			Logger: p.log.With("protocol", ProtocolTriple)}
		if pc.Heartbeat > 0 {
			cfg.IdleTimeout = 3 * pc.Heartbeat // as the dubbo server closes silent connections
		}
		s.tri = triple.NewServer(cfg, &tripleHandler{p: p, s: s})
		s.served = make(chan struct{})
		go func() {
			defer close(s.served)
			if err := s.tri.Serve(s.ln); !errors.Is(err, triple.ErrServerClosed) {
				p.log.Error("triple server stopped", "addr", s.bound.String(), "err", err)
			}
		}()
		return nil
	default:
		srv, err := transport.Serve(s.ln, p, transport.ServerConfig{
			Payload:          pc.Payload,
			Accepts:          pc.Accepts,
			FrameTimeout:     pc.FrameTimeout,
			BodyMemory:       pc.BodyMemory,
			HeartbeatTimeout: 3 * pc.Heartbeat,
			Dispatcher:       p.disp,
			PoolOnly:         pc.PoolOnly,
			OnConnect:        p.onConnect,
			OnDisconnect:     p.onDisconnect,
			Logger:           p.log,
		})
		if err != nil {
			return fmt.Errorf("provider %s: %w", p.cfg.Application, err)
		}
		s.dubbo = srv
		return nil
	}
}

// shutdown stops s gracefully: new connections are refused, the calls in
// flight finish (until ctx ends), then the connections close.
func (s *server) shutdown(ctx context.Context) error {
	switch {
	case s.dubbo != nil:
		return s.dubbo.Shutdown(ctx)
	case s.tri != nil:
		err := s.tri.Shutdown(ctx)
		<-s.served
		s.ln.Close() // left open by a Serve that found the server closed already
		return err
	}
	return s.ln.Close()
}

// close stops s at once.
func (s *server) close() {
	switch {
	case s.dubbo != nil:
		s.dubbo.Close()
	case s.tri != nil:
		s.tri.Close()
		<-s.served
		s.ln.Close()
	default:
		s.ln.Close()
	}
}

// main is the server of [protocol].
func (p *Provider) main() *server { return p.servers[0] }

// serverOf is the server of a protocol, nil when the provider does not
// serve it.
func (p *Provider) serverOf(name string) *server {
	for _, s := range p.servers {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

// Endpoints lists the protocols the provider serves, [protocol]'s first.
func (p *Provider) Endpoints() []Endpoint {
	out := make([]Endpoint, len(p.servers))
	for i, s := range p.servers {
		out[i] = Endpoint{Protocol: s.cfg.Name, Addr: s.addr(), Bound: s.bound}
	}
	return out
}

// shutdownServers shuts every server down at once, each within ctx.
func (p *Provider) shutdownServers(ctx context.Context) error {
	errs := make(chan error, len(p.servers))
	for _, s := range p.servers {
		go func() { errs <- s.shutdown(ctx) }()
	}
	var all []error
	for range p.servers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
