package interop

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// envRole turns the test binary into a server process for the benchmark:
// "provider" serves providertest.Greeter with no registry ("ours"), "echo"
// echoes dubbo frames over plain TCP ("rawtcp").
const envRole = "INTEROP_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "provider":
		os.Exit(runProvider())
	case "echo":
		os.Exit(runEcho())
	}
	code := m.Run()
	dubbogo.RemoveBuilds()
	removeBuilds()
	os.Exit(code)
}

// runProvider serves Greeter on a free 127.0.0.1 port, prints
// "READY host:port", and runs until SIGTERM (graceful shutdown) or until its
// stdin closes (the test process is gone).
func runProvider() int {
	// INTEROP_CPUPROFILE=file profiles the provider process until it exits
	// (for looking into BenchmarkSayHello; unset in normal runs).
	if f := os.Getenv("INTEROP_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil && pprof.StartCPUProfile(out) == nil {
			defer func() { pprof.StopCPUProfile(); out.Close() }()
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, provider.Config{
		Application: "interop-provider",
		Protocol:    provider.ProtocolConfig{Host: "127.0.0.1", Port: -1},
	}, provider.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		p.Close()
		return 2
	}
	fmt.Printf("READY %s\n", p.Addr())

	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	select {
	case <-term:
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := p.Shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "shutdown:", err)
			return 1
		}
		return 0
	case <-orphaned:
		p.Close()
		return 3
	}
}
