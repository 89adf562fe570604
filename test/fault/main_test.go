//go:build unix

package fault

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Environment of a provider process started by the tests.
const (
	envRole         = "FAULTTEST_ROLE"          // "provider" turns the test binary into a provider
	envRegistry     = "FAULTTEST_REGISTRY"      // zookeeper://host:port[?session=ms]
	envPort         = "FAULTTEST_PORT"          // dubbo port; default -1, a free one
	envGroup        = "FAULTTEST_GROUP"         // Greeter's group; default none
	envRegisterMode = "FAULTTEST_REGISTER_MODE" // interface, instance or all (the default)
	envStuck        = "FAULTTEST_STUCK"         // a duration: every call's handler is stuck that long, deaf to its deadline

	// servedByKey is the result attachment naming the provider that answered.
	servedByKey = "faulttest.served-by"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "provider" {
		os.Exit(runProvider())
	}
	os.Exit(m.Run())
}

// runProvider is the provider process: Greeter on a dubbo port, registered
// in the registry, until SIGTERM (graceful shutdown, exit 0) or until its
// stdin closes (the test process is gone: exit at once, exit 3).
func runProvider() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	port := -1
	if v := os.Getenv(envPort); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v\n", envPort, v, err)
			return 2
		}
		port = n
	}

	var stuck time.Duration
	if v := os.Getenv(envStuck); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v\n", envStuck, v, err)
			return 2
		}
		stuck = d
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	// Longer than provider.Start's own wait for the registry (30s), so a
	// provider started while the registry is down waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cfg := provider.Config{
		Application:  "faulttest-provider",
		Registry:     os.Getenv(envRegistry),
		RegisterMode: os.Getenv(envRegisterMode),
		Protocol:     provider.ProtocolConfig{Host: "127.0.0.1", Port: port},
	}
	p, err := provider.Start(ctx, cfg, provider.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	addr := p.Addr()
	svc := providertest.Greeter(nil)
	svc.Group = os.Getenv(envGroup)
	greet := svc.Invoker
	svc.Invoker = rpc.InvokerFunc(func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		if stuck > 0 {
			time.Sleep(stuck) // a handler stuck on something that ignores the caller's deadline
		}
		res, err := greet.Invoke(ctx, inv)
		if res != nil {
			if res.Attachments == nil {
				res.Attachments = make(map[string]any, 1)
			}
			res.Attachments[servedByKey] = addr
		}
		return res, err
	})
	if err := p.Export(ctx, svc); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		p.Close()
		return 2
	}
	fmt.Printf("READY %s\n", addr)

	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	select {
	case <-term:
		start := time.Now()
		sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer scancel()
		if err := p.Shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "shutdown:", err)
			return 1
		}
		fmt.Printf("SHUTDOWN %d\n", time.Since(start).Microseconds())
		return 0
	case <-orphaned:
		p.Close()
		return 3
	}
}
