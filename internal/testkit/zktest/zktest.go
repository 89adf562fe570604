// Package zktest starts ZooKeeper servers for tests of code that talks to a
// registry: our embedded server in the test process, and both it and a real
// Apache ZooKeeper (internal/testkit/apachezk) for tests that must pass on both.
package zktest

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// StartEmbedded runs embeddedzk in the test process on a free loopback port
// with a temporary data dir (cfg's Listen and DataDir are filled in when
// empty), stops it when the test ends, and returns its address.
func StartEmbedded(t testing.TB, cfg embeddedzk.Config) string {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	srv, err := embeddedzk.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("embeddedzk.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx); err != nil {
			t.Errorf("embedded registry: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		<-done
	})
	return srv.Addr().String()
}

// Both runs fn as subtests against our embedded registry and against Apache
// ZooKeeper; the Apache one is skipped with -short (and, outside CI, when
// Apache ZooKeeper is not installed).
func Both(t *testing.T, fn func(t *testing.T, zkAddr string)) {
	t.Run("embedded", func(t *testing.T) { fn(t, StartEmbedded(t, embeddedzk.Config{})) })
	t.Run("apache", func(t *testing.T) {
		if testing.Short() {
			t.Skip("Apache ZooKeeper skipped with -short")
		}
		fn(t, apachezk.Start(t, apachezk.Options{}).Addr())
	})
}

// Unreachable is a loopback address where nothing listens: a registry
// that does not answer.
func Unreachable(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Secret is the password in SecretAddresses.
const Secret = "s3cret"

// SecretAddresses are registry addresses carrying Secret (as
// user:password@ and as a parameter) that a node cannot use: one whose
// registry does not answer, one that does not parse, one without a host,
// one of a registry other than ZooKeeper. The errors a node gives about
// them must not show Secret.
func SecretAddresses(t testing.TB) []string {
	dead := Unreachable(t)
	return []string{
		"zookeeper://admin:" + Secret + "@" + dead,
		"zookeeper://" + dead + "?username=admin&password=" + Secret,
		"zookeeper://admin:" + Secret + "@127.0.0.1:99999",
		"zookeeper://admin:" + Secret + "@",
		"etcd://admin:" + Secret + "@" + dead,
	}
}
