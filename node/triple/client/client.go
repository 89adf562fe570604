package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// Defaults: the dubbo transport's, as a Dubbo consumer has them whatever
// the protocol.
const (
	DefaultTimeout        = transport.DefaultTimeout
	DefaultConnectTimeout = transport.DefaultConnectTimeout
	DefaultReconnectMin   = transport.DefaultReconnectMin
	DefaultReconnectMax   = transport.DefaultReconnectMax
)

// Config configures a Client. The zero value uses the defaults.
type Config struct {
	// Connections is the number of HTTP/2 connections to the provider
	// (Dubbo's connections); calls are spread over them. Default 1.
	Connections int
	// Timeout bounds a unary call whose context has no deadline (the
	// consumer's cluster gives each attempt one); streams get none.
	// Default 1s.
	Timeout time.Duration
	// ConnectTimeout bounds one dial. Default 3s.
	ConnectTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff between
	// failed dials. Defaults 100ms and 2s.
	ReconnectMin, ReconnectMax time.Duration
	// Payload is the largest message sent or accepted. Default 8 MiB, as
	// the dubbo protocol's.
	Payload int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Client is a consumer's connections to one Triple provider. It is an
// rpc.Invoker and an rpc.Streamer; safe for concurrent use.
type Client struct {
	addr  string
	cfg   Config
	log   *slog.Logger
	conns []*conn
	rr    atomic.Uint32

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var (
	_ rpc.Invoker  = (*Client)(nil)
	_ rpc.Streamer = (*Client)(nil)
)

// conn is one connection and its state as keepConnected last saw it, read
// without grpc-go's lock on every call and every Available.
type conn struct {
	cc    *grpc.ClientConn
	state atomic.Int32 // connectivity.State
}

func (cn *conn) ready() bool { return connectivity.State(cn.state.Load()) == connectivity.Ready }

// New starts connecting to addr (host:port) in the background and keeps
// reconnecting until Close. Calls fail with rpc.ErrConnection while no
// connection is up.
func New(addr string, cfg Config) *Client {
	if cfg.Connections <= 0 {
		cfg.Connections = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = DefaultReconnectMin
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = max(DefaultReconnectMax, cfg.ReconnectMin)
	}
	if cfg.Payload <= 0 {
		cfg.Payload = protocol.DefaultPayload
	}
	c := &Client{addr: addr, cfg: cfg, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("provider", "tri://"+addr)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), // h2c
		grpc.WithNoProxy(),      // a provider is called directly, as over dubbo://
		grpc.WithIdleTimeout(0), // keep connections up, as Dubbo's long connections
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: cfg.ReconnectMin, Multiplier: 1.6, Jitter: 0.2, MaxDelay: cfg.ReconnectMax},
			MinConnectTimeout: cfg.ConnectTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.Payload), grpc.MaxCallSendMsgSize(cfg.Payload)),
	}
	for range cfg.Connections {
		// passthrough: the address is dialled as it is, never resolved
		// again by grpc-go.
		cc, err := grpc.Dial("passthrough:///"+addr, opts...)
		if err != nil {
			// Only a bad option fails here, and ours are fixed.
			panic(fmt.Sprintf("triple client: dial %s: %v", addr, err))
		}
		cn := &conn{cc: cc}
		cn.state.Store(int32(cc.GetState()))
		c.conns = append(c.conns, cn)
		c.wg.Add(1)
		go c.keepConnected(ctx, cn)
	}
	return c
}

// keepConnected connects cc now and again whenever it goes idle: grpc-go
// leaves a connection that broke idle until the next call, and a client
// that is not Available gets no call, so it would never come back.
func (c *Client) keepConnected(ctx context.Context, cn *conn) {
	defer c.wg.Done()
	defer cn.state.Store(int32(connectivity.Shutdown))
	state := cn.cc.GetState()
	for {
		cn.state.Store(int32(state))
		if state == connectivity.Idle {
			cn.cc.Connect()
		}
		if !cn.cc.WaitForStateChange(ctx, state) {
			return // closed
		}
		next := cn.cc.GetState()
		if next == connectivity.Ready || state == connectivity.Ready {
			c.log.Debug("triple connection state", "from", state.String(), "to", next.String())
		}
		state = next
	}
}

// Address is the provider's host:port.
func (c *Client) Address() string { return c.addr }

// Available reports whether a call can be sent now: some connection is up.
func (c *Client) Available() bool {
	for _, cn := range c.conns {
		if cn.ready() {
			return true
		}
	}
	return false
}

// pick chooses a connection that is up, round robin.
func (c *Client) pick() (*grpc.ClientConn, error) {
	n := uint32(len(c.conns))
	start := c.rr.Add(1)
	var state connectivity.State
	for i := range n {
		cn := c.conns[(start+i)%n]
		if state = connectivity.State(cn.state.Load()); state == connectivity.Ready {
			return cn.cc, nil
		}
	}
	if state == connectivity.Shutdown {
		return nil, errors.New("client closed")
	}
	return nil, fmt.Errorf("not connected (%s)", state)
}

// Conn returns a connection that is up, for calls outside the rpc model
// (gRPC server reflection); rpc.ErrConnection when none is.
func (c *Client) Conn() (grpc.ClientConnInterface, error) {
	cc, err := c.pick()
	if err != nil {
		return nil, &rpc.CallError{Kind: rpc.ErrConnection, Address: c.addr, Detail: err.Error()}
	}
	return cc, nil
}

// Close closes every connection; calls in flight fail.
func (c *Client) Close() error {
	c.cancel()
	var errs []error
	for _, cn := range c.conns {
		errs = append(errs, cn.cc.Close())
	}
	c.wg.Wait()
	return errors.Join(errs...)
}
