package embeddedzk_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
)

// startEmbedded runs an in-process embedded server on a free loopback port
// with a fresh data dir and stops it when the test ends.
func startEmbedded(t testing.TB, tick time.Duration) net.Addr {
	t.Helper()
	return startEmbeddedConfig(t, embeddedzk.Config{TickTime: tick})
}

func startEmbeddedConfig(t testing.TB, cfg embeddedzk.Config) net.Addr {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.MaxClientCnxns == 0 {
		cfg.MaxClientCnxns = -1 // tests open many sessions from one address
	}
	srv, err := embeddedzk.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("embeddedzk.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := srv.Close(); err != nil {
			t.Errorf("embedded server Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
				t.Errorf("embedded server Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("embedded server Serve did not return within 10s of Close")
		}
	})
	return srv.Addr()
}
