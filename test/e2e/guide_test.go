package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/child"
)

// guide is the README's "Write your first handler", as a user reads it.
type guide struct {
	code                   string // hello/main.go
	build, up, call, wants string // the commands of steps 2 to 4, and what step 4 prints
}

// guideSection is README.md's "Write your first handler".
func guideSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## Write your first handler")
	if start < 0 {
		t.Fatal(`README.md has no "## Write your first handler" section`)
	}
	section := readme[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	return section
}

// checkoutModule writes dir/go.mod of module, which requires this checkout
// by a replace, with the checkout's go.sum: a handler author's module that
// the module cache serves offline.
func checkoutModule(t *testing.T, dir, module string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(rootMod)
	writeFile(t, filepath.Join(dir, "go.mod"), fmt.Sprintf("module %s\n\n%s\n\nrequire github.com/dubbo-lab/dubbo v0.0.0\n\nreplace github.com/dubbo-lab/dubbo => %s\n", module, goLine, root))
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(dir, "go.sum"), 0o644)
}

// readGuide takes the file and the commands out of README.md.
func readGuide(t *testing.T) guide {
	t.Helper()
	section := guideSection(t)
	find := func(what string, re *regexp.Regexp) []string {
		m := re.FindStringSubmatch(section)
		if m == nil {
			t.Fatalf("the guide lost %s (%s)", what, re)
		}
		return m
	}
	var g guide
	code := find("the code of hello/main.go", regexp.MustCompile("(?s)```go\n(.*?)\n *```"))[1]
	for _, line := range strings.Split(code, "\n") {
		g.code += strings.TrimPrefix(line, "   ") + "\n" // the list item's indent
	}
	if !strings.Contains(find("the file name", regexp.MustCompile("Create `([^`]+)`"))[1], "hello/main.go") {
		t.Fatal("step 1 no longer creates hello/main.go")
	}
	g.build = find("step 2", regexp.MustCompile("2\\. Build it: `([^`]+)`"))[1]
	g.up = find("step 3", regexp.MustCompile("3\\. Run it in a provider: `([^`]+)`"))[1]
	m := find("step 4", regexp.MustCompile("4\\. Call it: `([^`]+)`\\s+prints `([^`]+)`"))
	g.call, g.wants = m[1], m[2]
	return g
}

// TestFirstHandlerGuide follows the README's "Write your first handler"
// word for word: it writes hello/main.go in a module that requires
// github.com/dubbo-lab/dubbo, builds it with step 2's command, runs step
// 3's `./dubbo up` with the shipped dubbo.toml and makes step 4's call.
// The shipped consumer references org.example.Greeter, which nobody serves
// then: before, every role shut down 3s after start ("no provider
// available at start-up"); now dubbo up warns and keeps serving. The ports
// are the only change, through DUBBO_* variables, so the commands stay as
// written.
func TestFirstHandlerGuide(t *testing.T) {
	g := readGuide(t)
	dir := t.TempDir()
	// "or any module that requires github.com/dubbo-lab/dubbo": this one.
	checkoutModule(t, dir, "guide.example/hello")
	writeFile(t, filepath.Join(dir, "hello/main.go"), g.code)
	copyFile(t, filepath.Join("../..", "dubbo.toml"), filepath.Join(dir, "dubbo.toml"), 0o644)
	copyFile(t, binary("dubbo"), filepath.Join(dir, "dubbo"), 0o755)
	// The shipped dubbo.toml runs the example consumer plugin, which make
	// builds in the repository.
	copyFile(t, binary("greeter-caller"), filepath.Join(dir, "examples", "greeter-caller", "greeter-caller"), 0o755)
	if out, err := shell(dir, nil, "go mod tidy"); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}

	if out, err := shell(dir, nil, g.build); err != nil {
		t.Fatalf("step 2, %s: %v\n%s", g.build, err, out)
	}

	env := shippedPorts(t, child.Env())
	cmd := exec.Command("/bin/sh", "-c", "exec "+g.up)
	cmd.Dir, cmd.Env = dir, env
	launched := time.Now()
	up := startCmd(t, "step 3: "+g.up, cmd)

	var got string
	took, ok := waitFor(20*time.Second, func() bool {
		out, err := shell(dir, env, g.call)
		got = strings.TrimSpace(out)
		return err == nil && got == g.wants || up.exited()
	})
	if !ok || up.exited() {
		t.Fatalf("step 4, %s: printed %q, want %q (within 20s; dubbo up exited: %v)", g.call, got, g.wants, up.exited())
	}
	t.Logf("step 4 printed %s %v after step 3 was launched", got, took.Round(time.Millisecond))

	// The environment stays up past the consumer's 3s check and keeps
	// answering; the reference without a provider is a warning.
	time.Sleep(time.Until(launched.Add(5 * time.Second)))
	if up.exited() {
		t.Fatalf("dubbo up exited %v after it was launched", time.Since(launched).Round(time.Millisecond))
	}
	if out, err := shell(dir, env, g.call); err != nil || strings.TrimSpace(out) != g.wants {
		t.Errorf("step 4 again, 5s after the launch: %q, %v", out, err)
	}
	if log := up.stderr.String(); !strings.Contains(log, "no provider for these references yet") || !strings.Contains(log, "org.example.Greeter:1.0.0") {
		t.Errorf("dubbo up did not warn about the reference to org.example.Greeter:\n%s", lastLines(log, 20))
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}
}

// shippedPorts is env with the ports of the shipped dubbo.toml (it runs 2
// replicas) moved to free ones, through DUBBO_* variables, so that the
// commands of a guide run as written.
func shippedPorts(t *testing.T, env []string) []string {
	p := freePorts(t, 2)
	return append(env,
		fmt.Sprintf("DUBBO_REGISTRY_SERVER_LISTEN=127.0.0.1:%d", p.registry),
		"DUBBO_REGISTRY_ADDRESS="+p.registryURL(),
		fmt.Sprintf("DUBBO_PROTOCOL_PORT=%d", p.provider),
		fmt.Sprintf("DUBBO_PROTOCOLS_TRI_PORT=%d", p.tri),
		fmt.Sprintf("DUBBO_CONSUMER_GATEWAY_LISTEN=127.0.0.1:%d", p.gateway),
		fmt.Sprintf("DUBBO_MONITOR_SERVER_PORT=%d", p.monitor),
		fmt.Sprintf("DUBBO_CONSOLE_LISTEN=127.0.0.1:%d", p.console),
		"DUBBO_QOS_LISTEN=")
}

// guideStep is one step of the README's handler loop: a shell line, or an
// edit a sentence asks for ("change `old` to `new` in `file`").
type guideStep struct {
	line   string // the command, its comment removed
	answer string // what it prints, when its comment says ("Hello, you")
	edit   []string
}

// readLoop takes the steps of the README's handler loop, the start of
// "Write your first handler" up to its steps by hand, in their order: the
// lines of its sh blocks and its edits.
func readLoop(t *testing.T) []guideStep {
	t.Helper()
	section := guideSection(t)
	end := strings.Index(section, "By hand, step by step")
	if end < 0 {
		t.Fatal(`README.md's "Write your first handler" has no steps "By hand, step by step"`)
	}
	section = section[:end]
	step := regexp.MustCompile("(?s)```sh\n(.*?)```|change `([^`]+)` to `([^`]+)` in\\s+`([^`]+)`")
	comment := regexp.MustCompile(`^(.*?)\s+#\s*(.*)$`)
	var steps []guideStep
	for _, m := range step.FindAllStringSubmatch(section, -1) {
		if m[1] == "" {
			steps = append(steps, guideStep{edit: m[2:5]})
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			s := guideStep{line: strings.TrimSpace(line)}
			if c := comment.FindStringSubmatch(line); c != nil {
				s.line = c[1]
				if strings.HasPrefix(c[2], `"`) {
					s.answer = c[2]
				}
			}
			steps = append(steps, s)
		}
	}
	return steps
}

// TestHandlerLoopGuide follows the README's handler loop word for word,
// from an empty directory shaped like the repository (./dubbo, the
// shipped dubbo.toml and the example consumer plugin it runs): a command
// must succeed, one whose comment is an answer must print it (a while
// after an edit: the build and the swap), `./dubbo up` runs in the
// background as in a second terminal, and an edit is made as written. The
// go command works offline; the ports are moved through DUBBO_*
// variables, so the commands stay as written.
func TestHandlerLoopGuide(t *testing.T) {
	steps := readLoop(t)
	if !slices.ContainsFunc(steps, func(s guideStep) bool { return s.edit != nil }) ||
		!slices.ContainsFunc(steps, func(s guideStep) bool { return strings.HasPrefix(s.line, "./dubbo up --watch") }) {
		t.Fatalf("README.md's handler loop lost its `./dubbo up --watch` or its edit (\"change `old` to `new` in `hello/main.go`\"): it must go from nothing to a handler served, then changed while it serves; it has %+v", steps)
	}
	dir := t.TempDir()
	copyFile(t, filepath.Join("../..", "dubbo.toml"), filepath.Join(dir, "dubbo.toml"), 0o644)
	copyFile(t, binary("dubbo"), filepath.Join(dir, "dubbo"), 0o755)
	copyFile(t, binary("greeter-caller"), filepath.Join(dir, "examples", "greeter-caller", "greeter-caller"), 0o755)
	env := shippedPorts(t, offline())

	var up *node
	edited := false
	for _, s := range steps {
		switch {
		case s.edit != nil:
			replaceInFile(t, filepath.Join(dir, s.edit[2]), s.edit[0], s.edit[1])
			edited = true
			t.Logf("edited %s: %s -> %s", s.edit[2], s.edit[0], s.edit[1])
		case strings.HasPrefix(s.line, "./dubbo up"):
			cmd := exec.Command("/bin/sh", "-c", "exec "+s.line)
			cmd.Dir, cmd.Env = dir, env
			up = startCmd(t, s.line, cmd)
			if _, ok := waitFor(60*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
				t.Fatalf("%s did not get ready within 60s", s.line)
			}
		case s.answer != "":
			var got string
			took, ok := waitFor(60*time.Second, func() bool {
				out, err := shell(dir, env, s.line)
				got = strings.TrimSpace(out)
				return err == nil && got == s.answer || up != nil && up.exited()
			})
			if !ok || got != s.answer {
				t.Fatalf("%s printed %q, want %q (within 60s)", s.line, got, s.answer)
			}
			if edited {
				t.Logf("%s printed %s %v after the edit", s.line, got, took.Round(time.Millisecond))
			}
		default:
			if out, err := shell(dir, env, s.line); err != nil {
				t.Fatalf("%s: %v\n%s", s.line, err, out)
			}
		}
	}
	// Each provider swaps on its own: the answer may have come from the
	// first to have done it.
	swapped := func() bool {
		out := up.stdout.String()
		return strings.Contains(out, "swapped   hello (provider 1)") && strings.Contains(out, "swapped   hello (provider 2)")
	}
	if _, ok := waitFor(10*time.Second, swapped); !ok || strings.Contains(up.stdout.String(), "down      hello") {
		t.Errorf("dubbo up did not swap the new build in without a restart in both providers:\n%s", up.stdout.String())
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("%s exited %d after Ctrl-C", up.name, code)
	}
}

// A consumer of its own still refuses to start when a reference with
// check = true has no provider, as a Dubbo consumer does.
func TestConsumerAloneChecksReferences(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{references: []string{"org.example.Greeter"}})
	registry := startNode(t, "registry", dir, "run", "--role=registry", "-c", cfg)
	if _, ok := waitFor(10*time.Second, func() bool {
		got, err := fourLetter(fmt.Sprintf("127.0.0.1:%d", p.registry), "ruok")
		return err == nil && got == "imok" || registry.exited()
	}); !ok || registry.exited() {
		t.Fatal("the registry did not answer ruok within 10s")
	}
	r := dubbo(t, dir, "run", "--role=consumer", "-c", cfg)
	if r.code != 1 || !strings.Contains(r.stderr, "org.example.Greeter:1.0.0") || !strings.Contains(r.stderr, "no provider available at start-up") {
		t.Errorf("dubbo run --role=consumer without a provider: exit %d, stderr %q; want exit 1 naming the reference", r.code, lastLines(r.stderr, 5))
	}
}

// shell runs a command line as a user's shell would, in dir.
func shell(dir string, env []string, line string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = env
	if env == nil {
		cmd.Env = child.Env()
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
