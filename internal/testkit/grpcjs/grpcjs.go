// Package grpcjs runs client.js, a gRPC client on Node's @grpc/grpc-js and
// @grpc/proto-loader: a client that shares no code with Go, for tests that
// a server works with the gRPC ecosystem beyond Go. The script loads a
// .proto file and makes the calls a test gives it (unary, server-, client-
// and bidi-streaming, as the proto says) on one plaintext channel,
// printing one JSON line per call, which Run returns as Results.
//
// The Node packages are pinned by package-lock.json and installed with
// `npm ci` once per machine (internal/testkit/toolbuild). Without node and
// npm, or without the npm registry on first use, the calling test is
// skipped with a hint, or fails when CI=true.
package grpcjs

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
	"github.com/dubbo-lab/dubbo/internal/testkit/toolbuild"
)

var (
	//go:embed client.js
	clientJS []byte
	//go:embed package.json
	packageJSON []byte
	//go:embed package-lock.json
	packageLock []byte
)

// Call is one call for the client to make.
type Call struct {
	// Method is the method's name in the service; one the proto does not
	// have is called as unary with an empty message.
	Method string `json:"method"`
	// Requests are the request messages in protobuf JSON: one for unary
	// and server-streaming methods, any number for the others.
	Requests []json.RawMessage `json:"requests,omitempty"`
	// Metadata are headers sent with the call.
	Metadata map[string]string `json:"metadata,omitempty"`
	// TimeoutMs is the call's deadline. Default 10s.
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// Result is what one call got.
type Result struct {
	Method string `json:"method"`
	// Responses are the messages received, as grpc-js's objects in JSON.
	Responses []json.RawMessage `json:"responses"`
	// Code and Details are the call's gRPC status; 0 and "" when OK.
	Code    int    `json:"code"`
	Details string `json:"details"`
}

// Client is client.js with its packages installed.
type Client struct {
	node, script string
	modules      string // node_modules of the installed packages
}

// Install returns the client, installing its Node packages on first use
// on this machine.
func Install(t testing.TB) *Client {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		need.Missing(t, "grpcjs: node not found in PATH: install Node.js (Debian: nodejs npm)")
	}
	sum := sha256.New()
	sum.Write(packageJSON)
	sum.Write(packageLock)
	key := hex.EncodeToString(sum.Sum(nil))[:16]
	dir := toolbuild.Dir(t, "grpcjs", key, func(dir string) error {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return fmt.Errorf("npm not found in PATH: install npm (Debian: npm)")
		}
		for name, data := range map[string][]byte{"package.json": packageJSON, "package-lock.json": packageLock} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return err
			}
		}
		cmd := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci (needs the npm registry on first use): %v\n%s", err, out)
		}
		return nil
	})
	// The script is not part of the install, so that an edit to it needs
	// none: it finds the packages through NODE_PATH.
	script := filepath.Join(t.TempDir(), "client.js")
	if err := os.WriteFile(script, clientJS, 0o644); err != nil {
		t.Fatalf("grpcjs: %v", err)
	}
	return &Client{node: node, script: script, modules: filepath.Join(dir, "node_modules")}
}

// Run makes calls of service (package.Service, as in proto) on the server
// at addr, one after another on one channel, and returns their results in
// order. proto is the path of the service's .proto file. The error says
// what the script printed when it did not finish (a bad proto, a crash).
func (c *Client) Run(addr, proto, service string, calls ...Call) ([]Result, error) {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, call := range calls {
		if err := enc.Encode(call); err != nil {
			return nil, fmt.Errorf("grpcjs: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, c.script, addr, proto, service)
	cmd.Env = append(os.Environ(), "NODE_PATH="+c.modules)
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var results []Result
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line == "" {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return results, fmt.Errorf("grpcjs printed %q: %v", line, err)
		}
		results = append(results, r)
	}
	if runErr != nil {
		return results, fmt.Errorf("node client.js %s %s %s: %v\n%s", addr, proto, service, runErr, stderr.String())
	}
	return results, nil
}
