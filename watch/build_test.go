package watch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// module writes a Go module with a main package in dir/hello that
// imports dir/hello/greeting, and returns the binary's path.
func module(t *testing.T, dir string) string {
	t.Helper()
	for name, data := range map[string]string{
		"go.mod":                     "module example.com/hello\n\ngo 1.22\n",
		"hello/main.go":              "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/hello/hello/greeting\"\n)\n\nfunc main() { fmt.Println(greeting.Word) }\n",
		"hello/main_test.go":         "package main\n",
		"hello/greeting/word.go":     "package greeting\n\nconst Word = \"hello\"\n",
		"elsewhere/unrelated.go":     "package elsewhere\n",
		"hello/testdata/ignored.txt": "",
	} {
		writeSource(t, filepath.Join(dir, name), data)
	}
	return filepath.Join(dir, "hello", "hello")
}

func writeSource(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// says runs the binary and returns what it printed.
func says(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return strings.TrimSpace(string(out))
}

// TestBuilderBuild: a binary missing or older than its sources is stale;
// a build puts a new one in place; a build that fails says why in the
// compiler's words, its paths relative to the user's directory, and leaves
// the old binary as it was.
func TestBuilderBuild(t *testing.T) {
	dir := t.TempDir()
	b := &Builder{Binary: module(t, dir), Dir: dir}
	ctx := context.Background()
	if !b.Stale(ctx) {
		t.Error("Stale = false with no binary")
	}
	if res := b.Build(ctx); res.Err != nil || res.Took <= 0 {
		t.Fatalf("Build = %+v", res)
	}
	if got := says(t, b.Binary); got != "hello" {
		t.Errorf("the binary says %q", got)
	}
	if b.Stale(ctx) {
		t.Error("Stale = true right after a build")
	}
	time.Sleep(10 * time.Millisecond) // a later modification time
	writeSource(t, filepath.Join(dir, "hello/greeting/word.go"), "package greeting\n\nconst Word = \"hi\"\n")
	if !b.Stale(ctx) {
		t.Error("Stale = false with a source of an imported package newer than the binary")
	}

	before, err := os.Stat(b.Binary)
	if err != nil {
		t.Fatal(err)
	}
	writeSource(t, filepath.Join(dir, "hello/main.go"), "package main\n\nfunc main() { undefinedThing() }\n")
	res := b.Build(ctx)
	if res.Err == nil || !strings.Contains(res.Output, "hello/main.go:3:15: undefined: undefinedThing") {
		t.Errorf("a failed build: err %v, output %q; want the compiler's message naming hello/main.go:3:15", res.Err, res.Output)
	}
	if after, err := os.Stat(b.Binary); err != nil || !os.SameFile(before, after) {
		t.Errorf("a failed build replaced the binary (%v)", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "hello", ".*")); len(leftovers) != 0 {
		t.Errorf("a failed build left %v", leftovers)
	}

	// A path relative to the current directory, as dubbo.toml gives it.
	writeSource(t, filepath.Join(dir, "hello/main.go"), "package main\n\nfunc main() { println(\"relative\") }\n")
	t.Chdir(dir)
	rel := &Builder{Binary: filepath.Join("hello", "hello")}
	if res := rel.Build(ctx); res.Err != nil {
		t.Fatalf("Build of a relative path = %+v", res)
	}
	if after, err := os.Stat(b.Binary); err != nil || os.SameFile(before, after) || !after.Mode().IsRegular() {
		t.Errorf("the build of a relative path did not replace the binary (%v)", err)
	}
}

// TestBuilderRun: a saved source is built once, even one saved after the
// last build but before Run watched; a new file of the package and a
// source of an imported package of the module count; tests and other
// packages do not.
func TestBuilderRun(t *testing.T) {
	dir := t.TempDir()
	reports := make(chan Build, 8)
	b := &Builder{Binary: module(t, dir), Dir: dir, Every: 20 * time.Millisecond, Report: func(r Build) { reports <- r }}
	ctx, cancel := context.WithCancel(context.Background())
	if res := b.Build(ctx); res.Err != nil {
		t.Fatal(res.Err)
	}
	time.Sleep(10 * time.Millisecond) // a later modification time
	writeSource(t, filepath.Join(dir, "hello/greeting/word.go"), "package greeting\n\nconst Word = \"hey\"\n")
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	built := func(what string) {
		t.Helper()
		select {
		case r := <-reports:
			if r.Err != nil {
				t.Fatalf("%s: build failed: %v\n%s", what, r.Err, r.Output)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no build within 30s", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case r := <-reports:
			t.Errorf("%s: a build (%+v)", what, r)
		case <-time.After(300 * time.Millisecond):
		}
	}
	built("a source saved before Run")
	if got := says(t, b.Binary); got != "hey" {
		t.Errorf("after the build the binary says %q, want hey", got)
	}
	quiet("nothing more saved")
	writeSource(t, filepath.Join(dir, "hello/greeting/word.go"), "package greeting\n\nconst Word = \"hi\"\n")
	built("an imported package's source saved")
	if got := says(t, b.Binary); got != "hi" {
		t.Errorf("after the build the binary says %q, want hi", got)
	}
	quiet("nothing more saved")
	writeSource(t, filepath.Join(dir, "hello/main_test.go"), "package main\n\n// changed\n")
	quiet("a test saved")
	writeSource(t, filepath.Join(dir, "elsewhere/unrelated.go"), "package elsewhere\n\n// changed\n")
	quiet("a package the binary does not import saved")
	writeSource(t, filepath.Join(dir, "hello/extra.go"), "package main\n\nfunc init() { println(\"extra\") }\n")
	built("a new file in the package")
}

// TestBuilderNoSources: a binary with no Go package beside it has nothing
// to build from.
func TestBuilderNoSources(t *testing.T) {
	dir := t.TempDir()
	writeSource(t, filepath.Join(dir, "plugin.sh"), "#!/bin/sh\n")
	if b := (&Builder{Binary: filepath.Join(dir, "plugin.sh")}); b.HasSources(context.Background()) {
		t.Error("HasSources = true for a directory without Go files")
	}
	if b := (&Builder{Binary: module(t, dir)}); !b.HasSources(context.Background()) {
		t.Error("HasSources = false for a main package's directory")
	}
}
