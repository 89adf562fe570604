package listener_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/listener"
)

// An http.Server serves the connections handed to it; once the listener is
// closed, Serve ends and Hand refuses the next one.
func TestHandoffServesHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hl := listener.NewHandoff(ln.Addr())
	if hl.Addr() != ln.Addr() {
		t.Errorf("Addr() = %v, want %v", hl.Addr(), ln.Addr())
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "handed") })}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(hl) }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !hl.Hand(c) {
				c.Close()
			}
		}
	}()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "handed" {
		t.Errorf("body %q", body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if hl.Hand(a) {
		t.Error("Hand after Close took the connection")
	}
	if _, err := hl.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	if err := hl.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// failing is a real listener whose first Accepts fail as when the process
// is out of file descriptors.
type failing struct {
	net.Listener
	fails int
}

func (l *failing) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, errors.New("accept: too many open files")
	}
	return l.Listener.Accept()
}

// Accept rides out failures until a connection comes, and ends at once
// when the listener is closed or the server is closing.
func TestAccept(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		fails   int
		closed  bool // the listener is closed
		closing bool // the server says it is closing
		wantErr bool
	}{
		{"connection", 0, false, false, false},
		{"after failures", 3, false, false, false},
		{"closed", 0, true, false, true},
		{"failing while closing", 1, false, true, true},
	}
	for _, tt := range tests {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if tt.closed {
			ln.Close()
		} else {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		start := time.Now()
		c, err := listener.Accept(&failing{ln, tt.fails}, log, func() bool { return tt.closing })
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: Accept: %v", tt.name, err)
		}
		if c != nil {
			c.Close()
		}
		// 5ms, 10ms, 20ms: the pauses grow from 5ms.
		if took := time.Since(start); tt.fails == 3 && took < 35*time.Millisecond {
			t.Errorf("%s: took %v, want the pauses of 35ms", tt.name, took)
		}
		ln.Close()
	}
}
