// Package dubbogo runs stock dubbo-go v3.3.0 processes as peers in tests of
// the main module: dgprovider serves org.example.Greeter:1.0.0, dgconsumer
// calls it, and dgbench calls sayHello under load (a load generator built on
// dubbo-go's consumer), all over the dubbo protocol with hessian2; with
// ProviderOptions.Protocol "tri", dgprovider serves org.example.Greeter over
// Triple in wrapper mode (hessian2) and the protobuf service
// greet.GreetService, and with ConsumerOptions.Protocol "tri" dgconsumer
// calls either.
//
// The programs live in their own Go module, examples/interop, so that
// dubbo-go never enters this module's dependency graph; this package only
// builds and runs them. Build compiles them once per test binary;
// StartProvider runs a provider until the test ends; RunConsumer runs the
// consumer to completion and parses its JSON lines; StartBench connects a
// load generator to a provider, for runs of a given count and concurrency.
//
// When Go or dubbo-go's modules are not available the calling test is
// skipped with the reason, or fails when CI=true.
package dubbogo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

// Binaries are the built test peers.
type Binaries struct {
	Provider string // dgprovider
	Consumer string // dgconsumer
	Bench    string // dgbench
}

var build struct {
	sync.Mutex
	done bool
	bins Binaries
	// skip is set when the toolchain or modules are missing; err when our
	// code does not compile.
	skip, err string
	dir       string
}

const buildDirPrefix = "dubbogo-build-"

// Build compiles dgprovider and dgconsumer from examples/interop into a
// temporary directory, once per test binary; later calls return the same
// paths. The first build downloads dubbo-go and takes a minute or two.
// Call RemoveBuilds from TestMain to delete the directory at the end;
// directories left by earlier runs whose process is gone are removed here.
func Build(t testing.TB) Binaries {
	t.Helper()
	build.Lock()
	defer build.Unlock()
	if !build.done {
		build.bins, build.skip, build.err = buildPeers()
		build.done = true
	}
	switch {
	case build.skip != "":
		unavailable(t, build.skip)
	case build.err != "":
		t.Fatal(build.err)
	}
	return build.bins
}

// RemoveBuilds deletes the binaries made by Build in this process.
func RemoveBuilds() {
	build.Lock()
	defer build.Unlock()
	if build.dir != "" {
		os.RemoveAll(build.dir)
		build.dir, build.done = "", false
	}
}

func unavailable(t testing.TB, reason string) {
	t.Helper()
	need.Missing(t, "dubbo-go test peers unavailable: %s", reason)
}

func buildPeers() (bins Binaries, skip, fail string) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return bins, "go not found in PATH: install Go 1.26", ""
	}
	root, err := RepoRoot()
	if err != nil {
		return bins, "", err.Error()
	}
	interop := filepath.Join(root, "examples", "interop")
	removeStaleBuilds()
	dir, err := os.MkdirTemp("", buildDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return bins, "", fmt.Sprintf("dubbogo: %v", err)
	}
	build.dir = dir
	env := append(os.Environ(), "GOWORK=off")

	// A failed download (offline, proxy down) is an environment problem;
	// a failed compile is ours.
	dl := exec.Command(goBin, "mod", "download")
	dl.Dir = interop
	dl.Env = env
	if out, err := dl.CombinedOutput(); err != nil {
		return bins, fmt.Sprintf("go mod download in %s: %v\n%s", interop, err, out), ""
	}
	bins = Binaries{
		Provider: filepath.Join(dir, "dgprovider"),
		Consumer: filepath.Join(dir, "dgconsumer"),
		Bench:    filepath.Join(dir, "dgbench"),
	}
	cmd := exec.Command(goBin, "build", "-C", interop, "-o", dir+string(filepath.Separator), "./dgprovider", "./dgconsumer", "./dgbench")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return bins, "", fmt.Sprintf("go build in %s: %v\n%s", interop, err, out)
	}
	return bins, "", ""
}

// removeStaleBuilds deletes build directories of test processes that have
// exited without calling RemoveBuilds.
func removeStaleBuilds() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), buildDirPrefix+"*"))
	for _, m := range matches {
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(m), buildDirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(m)
		}
	}
}

// RepoRoot walks up from the working directory to the go.mod of module
// github.com/dubbo-lab/dubbo.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(data) == "github.com/dubbo-lab/dubbo" {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("dubbogo: no go.mod of module github.com/dubbo-lab/dubbo above the working directory")
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Registration modes of ProviderOptions.RegisterMode and
// ConsumerOptions.RegisterMode (dgprovider's and dgconsumer's -register-mode).
const (
	RegisterInterface = "interface" // registry.WithRegisterInterface()
	RegisterInstance  = "instance"  // dubbo-go's default: application level only
	RegisterAll       = "all"       // registry.WithRegisterServiceAndInterface()
)

// ProviderOptions configure dgprovider. Zero values mean the defaults noted.
type ProviderOptions struct {
	// Registry is a registry URL, zookeeper://host:port. "" = no registry.
	Registry string
	// RegisterMode is what the provider writes to the registry:
	// RegisterInterface (the default) the classic
	// /dubbo/<interface>/providers node, RegisterInstance (dubbo-go's own
	// default) only the application-level /services/<app>/<host:port>
	// node, RegisterAll both. READY waits for all of them.
	RegisterMode string
	// IP to bind and register. Default 127.0.0.1.
	IP string
	// Protocol is "dubbo" (the default) or "tri" (see the package comment).
	Protocol string
	// Port of the protocol. Default: a free port.
	Port int
	// App is the application name. Default "dgprovider".
	App string
	// Version of the service. Default "1.0.0".
	Version string
	// Group of the service. Default none.
	Group string
	// ShutdownWait is how long the provider keeps serving after it
	// unregistered on SIGTERM. Default 100ms (dubbo-go's own is 3s).
	ShutdownWait time.Duration
	// SessionTimeout is the ZooKeeper session timeout dubbo-go asks for.
	// Default dubbo-go's, 5s.
	SessionTimeout time.Duration
	// ReadyTimeout bounds the wait for READY. Default 60s.
	ReadyTimeout time.Duration
	// Args are extra command-line flags.
	Args []string
}

// Process is a running dgprovider.
type Process struct {
	// Addr is the host:port it serves on.
	Addr     string
	protocol string
	cmd      *exec.Cmd
	done     chan struct{}
	log      *syncbuf.Buffer
	stop     sync.Once
}

// URL is the provider's direct address, dubbo://host:port or
// tri://host:port.
func (p *Process) URL() string { return p.protocol + "://" + p.Addr }

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Log is what the process wrote to stderr so far (dubbo-go's log).
func (p *Process) Log() string { return p.log.String() }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM (dubbo-go then unregisters and exits) and kills the
// process if it is still alive after timeout. It returns whether the
// process exited on its own. Later calls do nothing.
func (p *Process) Stop(timeout time.Duration) (graceful bool) {
	p.stop.Do(func() {
		_ = syscall.Kill(p.PID(), syscall.SIGTERM)
		select {
		case <-p.done:
			graceful = true
		case <-time.After(timeout):
			_ = syscall.Kill(p.PID(), syscall.SIGKILL)
			<-p.done
		}
	})
	return graceful
}

// Kill ends the process with SIGKILL: no unregistration, its ZooKeeper
// nodes stay until the session expires.
func (p *Process) Kill() {
	p.stop.Do(func() {
		_ = syscall.Kill(p.PID(), syscall.SIGKILL)
		<-p.done
	})
}

// StartProvider runs dgprovider and waits until it prints READY, which it
// does once it serves and, with a registry, once its provider node exists.
// The process is stopped (SIGTERM, then SIGKILL after 15s) when the test
// ends.
func StartProvider(t testing.TB, opts ProviderOptions) *Process {
	t.Helper()
	bins := Build(t)
	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}
	if opts.Protocol == "" {
		opts.Protocol = "dubbo"
	}
	if opts.Port == 0 {
		port, err := freePort(opts.IP)
		if err != nil {
			t.Fatalf("dubbogo: %v", err)
		}
		opts.Port = port
	}
	if opts.ShutdownWait == 0 {
		opts.ShutdownWait = 100 * time.Millisecond
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	args := []string{
		"-registry", opts.Registry,
		"-protocol", opts.Protocol,
		"-ip", opts.IP,
		"-port", strconv.Itoa(opts.Port),
		"-shutdown-wait", opts.ShutdownWait.String(),
		"-ready-timeout", opts.ReadyTimeout.String(),
	}
	if opts.App != "" {
		args = append(args, "-app", opts.App)
	}
	if opts.Version != "" {
		args = append(args, "-version", opts.Version)
	}
	if opts.Group != "" {
		args = append(args, "-group", opts.Group)
	}
	if opts.SessionTimeout > 0 {
		args = append(args, "-session-timeout", opts.SessionTimeout.String())
	}
	if opts.RegisterMode != "" {
		args = append(args, "-register-mode", opts.RegisterMode)
	}
	args = append(args, opts.Args...)

	cmd := exec.Command(bins.Provider, args...)
	log := &syncbuf.Buffer{}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("dubbogo: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dubbogo: start dgprovider: %v", err)
	}
	p := &Process{protocol: opts.Protocol, cmd: cmd, done: make(chan struct{}), log: log}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- strings.TrimSpace(addr)
			}
		}
		_ = cmd.Wait() // after stdout is drained, as Wait requires
		close(p.done)
	}()
	t.Cleanup(func() { p.Stop(15 * time.Second) })

	select {
	case p.Addr = <-ready:
		return p
	case <-p.done:
		t.Fatalf("dgprovider %v exited before READY: %v\n%s", args, cmd.ProcessState, log)
	case <-time.After(opts.ReadyTimeout + 5*time.Second):
		t.Fatalf("dgprovider %v not READY after %s\n%s", args, opts.ReadyTimeout, log)
	}
	return nil
}

// ConsumerOptions configure dgconsumer. Exactly one of Registry and URL.
type ConsumerOptions struct {
	// Registry is a registry URL, zookeeper://host:port.
	Registry string
	// RegisterMode is how the consumer registers and discovers providers:
	// RegisterInterface (the default) subscribes to
	// /dubbo/<interface>/providers; RegisterInstance discovers at
	// application level only (dubbo-go's service-discovery-registry:
	// /dubbo/mapping/<interface> → /services/<app> → each instance's
	// MetadataService, called over the protocol in its
	// dubbo.metadata-service.url-params, or the metadata report when
	// dubbo.metadata.storage-type is remote); RegisterAll does both.
	RegisterMode string
	// URL is a direct provider address, dubbo://host:port (tri://host:port
	// over Triple).
	URL string
	// Protocol is "dubbo" (the default) or "tri": org.example.Greeter in
	// wrapper mode (hessian2), or Service.
	Protocol string
	// Service is org.example.Greeter (the default) or, over tri,
	// greet.GreetService, whose calls are Greet, GreetServerStream,
	// GreetClientStream and GreetStream.
	Service string
	// Calls is "all" (default) or a comma-separated list of sayHello, add,
	// echoMap, fail, sleep (of greet.GreetService's methods).
	Calls string
	// N repeats the call list. Default 1.
	N int
	// Timeout is the per-call timeout. Default 3s.
	Timeout time.Duration
	// Retries are failover retries; nil = dubbo-go's default (2).
	Retries *int
	// SleepMS is the argument of sleep. Default 10.
	SleepMS int
	// Version and Group of the referenced service. Default 1.0.0, none.
	Version, Group string
	// RunTimeout bounds the whole run. Default 2 minutes.
	RunTimeout time.Duration
	// Args are extra command-line flags.
	Args []string
}

// CallResult is one call made by dgconsumer.
type CallResult struct {
	Method string `json:"method"`
	// Result is the decoded value as JSON (maps with string keys).
	Result any `json:"result"`
	// Error is the error text, "" on success.
	Error string `json:"error"`
	// Type is the Go type dubbo-go decoded the hessian result into, e.g.
	// "string", "int32", "map[interface {}]interface {}"; "" for null.
	Type string `json:"type"`
	// OK says whether the call behaved as the example service promises.
	OK bool `json:"ok"`
}

// RunConsumer runs dgconsumer to completion and returns the calls it made.
// The error is non-nil when it exited non-zero (a call did not behave as
// expected, or it could not start); the results parsed so far come with it.
func RunConsumer(t testing.TB, opts ConsumerOptions) ([]CallResult, error) {
	t.Helper()
	bins := Build(t)
	if opts.RunTimeout == 0 {
		opts.RunTimeout = 2 * time.Minute
	}
	var args []string
	if opts.Registry != "" {
		args = append(args, "-registry", opts.Registry)
	}
	if opts.URL != "" {
		args = append(args, "-url", opts.URL)
	}
	if opts.Protocol != "" {
		args = append(args, "-protocol", opts.Protocol)
	}
	if opts.Service != "" {
		args = append(args, "-service", opts.Service)
	}
	if opts.Calls != "" {
		args = append(args, "-calls", opts.Calls)
	}
	if opts.N > 0 {
		args = append(args, "-n", strconv.Itoa(opts.N))
	}
	if opts.Timeout > 0 {
		args = append(args, "-timeout", opts.Timeout.String())
	}
	if opts.Retries != nil {
		args = append(args, "-retries", strconv.Itoa(*opts.Retries))
	}
	if opts.SleepMS > 0 {
		args = append(args, "-sleep-ms", strconv.Itoa(opts.SleepMS))
	}
	if opts.Version != "" {
		args = append(args, "-version", opts.Version)
	}
	if opts.Group != "" {
		args = append(args, "-group", opts.Group)
	}
	if opts.RegisterMode != "" {
		args = append(args, "-register-mode", opts.RegisterMode)
	}
	args = append(args, opts.Args...)

	ctx, cancel := context.WithTimeout(context.Background(), opts.RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Consumer, args...)
	// In application-level mode dubbo-go keeps the MetadataInfo it fetched
	// in a cache keyed by revision only and dumps it every 10 minutes to
	// ./dubbo.metadata.<app>, reloaded at the next start: run in a fresh
	// directory so that no run sees another's cache or leaves one behind.
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()

	var results []CallResult
	for _, line := range strings.Split(stdout.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var r CallResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return results, fmt.Errorf("dgconsumer printed a line that is not a call result: %q: %v", line, err)
		}
		results = append(results, r)
	}
	if runErr != nil {
		return results, fmt.Errorf("dgconsumer %v: %v\n%s", args, runErr, tail(stderr.String(), 4000))
	}
	return results, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
