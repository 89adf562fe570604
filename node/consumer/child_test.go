package consumer_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// childProviderEnv, set to a registry address, makes the test binary a
// Greeter provider registered there (TestMain), which prints its address
// and serves until killed: a provider a test can kill -9.
const childProviderEnv = "DUBBO_CONSUMER_TEST_PROVIDER"

func serveChildProvider(zkAddr string) {
	ctx := context.Background()
	p, err := provider.Start(ctx, provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	svc := providertest.Greeter(nil)
	svc.Params = map[string]string{"warmup": "0"}
	if err := p.Export(ctx, svc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(p.Addr())
	// Serve until stdin closes (the test ended without killing us).
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.Close()
	os.Exit(0)
}

// childProvider is a Greeter provider in a child process.
type childProvider struct {
	cmd  *exec.Cmd
	Addr string
}

// startChildProvider starts a provider process registered at zkAddr; it
// is killed when the test ends if the test has not killed it.
func startChildProvider(t *testing.T, zkAddr string) *childProvider {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childProviderEnv+"="+zkAddr)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cp := &childProvider{cmd: cmd}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child provider: %v", err)
	}
	cp.Addr = strings.TrimSpace(line)
	return cp
}

// Kill kills the provider as kill -9 does: its connections reset, its
// registry nodes stay until its session expires.
func (p *childProvider) Kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}
