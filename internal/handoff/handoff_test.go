package handoff_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/handoff"
)

// An http.Server serves the connections handed to it; once the listener is
// closed, Serve ends and Hand refuses the next one.
func TestServeHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hl := handoff.NewListener(ln.Addr())
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
