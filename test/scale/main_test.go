//go:build unix

package scale

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// envRole makes the test binary a child process of a test: "provider"
// runs runProvider.
const envRole = "SCALETEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "provider" {
		os.Exit(runProvider())
	}
	os.Exit(m.Run())
}

// runProvider is a provider process: Greeter on a dubbo port of its own,
// no registry (its consumers dial it directly). It prints "READY <addr>",
// answers each line on stdin with "GOROUTINES <n>", and exits when stdin
// closes (the test process is gone or done with it).
func runProvider() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := provider.Start(ctx, provider.Config{Application: "scale-provider",
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	defer p.Close()
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		return 2
	}
	fmt.Printf("READY %s\n", p.Addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Printf("GOROUTINES %d\n", runtime.NumGoroutine())
	}
	return 0
}
