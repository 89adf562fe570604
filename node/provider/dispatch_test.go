package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
)

// eventsService serves org.example.Events, whose connected() and
// disconnected() are its onconnect and ondisconnect methods, hold() waits
// for a token on release, and quick() answers at once. It records what the
// provider does with connection events.
type eventsService struct {
	release  chan struct{} // one token per hold() to let go
	entered  chan struct{} // one per hold() entered
	holding  atomic.Int32
	mostHeld atomic.Int32

	// gate, while open (non-nil and not closed), holds connected() calls.
	gateMu    sync.Mutex
	gate      chan struct{}
	connected chan struct{} // one per connected() entered

	// Every event, in the order their calls started and ended, and how many
	// ran at once (each waits up to meetWait for another to run beside it).
	mu         sync.Mutex
	log        []string
	inEvents   atomic.Int32
	mostEvents atomic.Int32
	meet       atomic.Bool
}

const meetWait = 500 * time.Millisecond

func newEventsService() *eventsService {
	return &eventsService{release: make(chan struct{}), entered: make(chan struct{}, 64), connected: make(chan struct{}, 64)}
}

func raise(max *atomic.Int32, n int32) {
	for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
	}
}

func (s *eventsService) service() provider.Service {
	return provider.Service{Interface: "org.example.Events", Version: "1.0.0",
		Params: map[string]string{provider.KeyOnConnect: "connected", provider.KeyOnDisconnect: "disconnected"},
		Methods: []provider.Method{
			{Name: "connected", ReturnType: "void"},
			{Name: "disconnected", ReturnType: "void"},
			{Name: "hold", ReturnType: "java.lang.String"},
			{Name: "quick", ReturnType: "java.lang.String"},
		},
		Invoker: rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
			switch inv.Method {
			case "quick":
				return &rpc.Result{Value: "quick"}, nil
			case "hold":
				n := s.holding.Add(1)
				defer s.holding.Add(-1)
				raise(&s.mostHeld, n)
				s.entered <- struct{}{}
				select {
				case <-s.release:
					return &rpc.Result{Value: "held"}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			// connected, disconnected
			peer := transport.Peer(ctx)
			s.record(inv.Method + " " + peer.String())
			defer func() { s.record("end " + inv.Method + " " + peer.String()) }()
			n := s.inEvents.Add(1)
			defer s.inEvents.Add(-1)
			raise(&s.mostEvents, n)
			if inv.Method == "connected" {
				s.connected <- struct{}{}
				s.gateMu.Lock()
				gate := s.gate
				s.gateMu.Unlock()
				if gate != nil {
					<-gate
				}
			}
			if s.meet.Load() {
				for deadline := time.Now().Add(meetWait); s.inEvents.Load() < 2 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			return &rpc.Result{}, nil
		})}
}

func (s *eventsService) record(e string) {
	s.mu.Lock()
	s.log = append(s.log, e)
	s.mu.Unlock()
}

func (s *eventsService) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func eventsCall(method string) *rpc.Invocation {
	inv := &rpc.Invocation{Service: "org.example.Events", Version: "1.0.0", Method: method}
	inv.SetAttachment("timeout", "10000")
	return inv
}

// The dispatchers run a provider's events where Java's do, seen from a
// consumer and from the service's onconnect and ondisconnect methods:
//
//   - connect events on the connection's reader (direct, message,
//     execution) hold its first request until they are done; in the pool
//     (all) or on the ordered queue (connection) they do not;
//   - requests in the pool (all but direct) are refused once its threads
//     are busy; direct runs them one after another on the reader;
//   - connection runs the connect and disconnect events of all
//     connections one at a time, each connection's connect before its
//     disconnect; the others run those of different connections at once.
func TestDispatchersAtTheProvider(t *testing.T) {
	tests := []struct {
		dispatcher      string
		connectOnReader bool
		requestsPooled  bool
		serialEvents    bool
	}{
		{"all", false, true, false},
		{"direct", true, false, false},
		{"message", true, true, false},
		{"execution", true, true, false},
		{"connection", false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.dispatcher, func(t *testing.T) {
			s := newEventsService()
			p := startBare(t, provider.Config{Protocol: provider.ProtocolConfig{Dispatcher: tt.dispatcher, Threads: 2}})
			export(t, p, s.service())
			ctx := context.Background()

			// The connect event: its handler waits at the gate while the
			// consumer calls.
			gate := make(chan struct{})
			s.gateMu.Lock()
			s.gate = gate
			s.gateMu.Unlock()
			c := dial(t, p.Addr())
			select {
			case <-s.connected:
			case <-time.After(5 * time.Second):
				t.Fatal("connected() was not called within 5s of the connection")
			}
			quick := make(chan error, 1)
			go func() {
				_, err := c.Invoke(ctx, eventsCall("quick"))
				quick <- err
			}()
			if tt.connectOnReader {
				select {
				case err := <-quick:
					t.Fatalf("a call answered (%v) while the connect event still ran on its connection's reader", err)
				case <-time.After(300 * time.Millisecond):
				}
				close(gate)
				if err := <-quick; err != nil {
					t.Fatal(err)
				}
			} else {
				select {
				case err := <-quick:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a call waited for the connect event, which should not run on the reader")
				}
				close(gate)
			}
			s.gateMu.Lock()
			s.gate = nil
			s.gateMu.Unlock()
			waitPoolIdle(t, p) // the connect event's thread is free

			// Requests: two threads.
			var wg sync.WaitGroup
			held := func(n int) {
				for range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := c.Invoke(ctx, eventsCall("hold")); err != nil {
							t.Errorf("hold: %v", err)
						}
					}()
				}
			}
			if tt.requestsPooled {
				held(2)
				waitEntered(t, s.entered, 2)
				if _, err := c.Invoke(ctx, eventsCall("hold")); !errors.Is(err, rpc.ErrPoolExhausted) {
					t.Errorf("a third call while both threads are busy: %v, want pool exhausted", err)
				}
				s.release <- struct{}{}
				s.release <- struct{}{}
			} else {
				held(3)
				waitEntered(t, s.entered, 1)
				time.Sleep(300 * time.Millisecond)
				if n := s.holding.Load(); n != 1 {
					t.Errorf("%d calls run at once on the reader, want 1", n)
				}
				for range 3 {
					s.release <- struct{}{}
				}
			}
			wg.Wait()
			if tt.requestsPooled && s.mostHeld.Load() != 2 || !tt.requestsPooled && s.mostHeld.Load() != 1 {
				t.Errorf("at most %d calls ran at once", s.mostHeld.Load())
			}

			// Connection events of two connections at once.
			s.meet.Store(true)
			s.mostEvents.Store(0)
			before := len(s.events())
			var dialed sync.WaitGroup
			for range 2 {
				dialed.Add(1)
				go func() {
					defer dialed.Done()
					conn, err := net.Dial("tcp", p.Addr())
					if err != nil {
						t.Error(err)
						return
					}
					<-s.connected
					conn.Close()
				}()
			}
			dialed.Wait()
			deadline := time.Now().Add(10 * time.Second)
			for len(s.events()) < before+8 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			evs := s.events()[before:]
			if len(evs) != 8 {
				t.Fatalf("events %q, want the 4 calls of 2 connections", evs)
			}
			most := s.mostEvents.Load()
			if tt.serialEvents && most != 1 || !tt.serialEvents && most < 2 {
				t.Errorf("%d event calls ran at once; events %q", most, evs)
			}
			if tt.dispatcher != "all" {
				for i, e := range evs {
					var method, peer string
					fmt.Sscan(e, &method, &peer)
					if method != "disconnected" {
						continue
					}
					for _, later := range evs[i:] {
						if later == "connected "+peer || later == "end connected "+peer {
							t.Errorf("%s's disconnect began before its connect ended: %q", peer, evs)
						}
					}
				}
			}
		})
	}
}

func waitEntered(t *testing.T, entered chan struct{}, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d calls entered the handler within 5s", i, n)
		}
	}
}
