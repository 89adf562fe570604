package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Builder rebuilds one plugin binary with `go build` whenever the Go
// sources it is built from change. The binary's directory holds its main
// package, as in the modules `dubbo new handler` writes and in examples/*.
// The sources are the .go files (tests aside) of that package and of the
// packages it imports from its own module, and the module's go.mod and
// go.sum; go list says which packages, again after each build, so a new
// import or file is watched from then on. The new binary is written
// beside the old one and renamed over it, so whoever watches the binary
// (the plugin's supervisor) sees it whole, once.
type Builder struct {
	// Binary is the plugin's path. Required.
	Binary string
	// Every is how often the sources are polled. Default DefaultEvery.
	Every time.Duration
	// Report gets the outcome of each build Run starts. Default none.
	Report func(Build)
	// Dir is the directory the paths of the compiler's messages are made
	// relative to, the user's. Default the current directory.
	Dir string

	listed *sourceSet // the sources go list named last; nil: ask again
}

// Build is the outcome of one build.
type Build struct {
	Binary string
	Took   time.Duration
	// Err says why the build failed; nil when the binary was built.
	Err error
	// Output is what go build printed (the compiler's errors), with the
	// paths of the messages relative to Builder.Dir; "" when none.
	Output string
}

// Run builds the binary each time its sources changed and stayed the same
// for one more poll, until ctx ends; a source newer than the binary when
// Run starts is a change too (saved before Run could see it).
func (b *Builder) Run(ctx context.Context) {
	every := b.Every
	if every <= 0 {
		every = DefaultEvery
	}
	files := b.sources(ctx)
	last := snapshot(files)
	if b.newer(last) {
		last = nil
	}
	var seen map[string]stamp // a different set, seen once: is it settled?
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		files.refresh()
		now := snapshot(files)
		switch {
		case sameStamps(now, last):
			seen = nil
		case seen != nil && sameStamps(now, seen):
			res := b.Build(ctx)
			if ctx.Err() != nil {
				return
			}
			if b.Report != nil {
				b.Report(res)
			}
			// The build may have made new sources known; a source edited
			// during the build is a change from what it was built from.
			files = b.sources(ctx)
			last, seen = snapshot(files), nil
			for f, st := range now {
				if _, ok := last[f]; ok {
					last[f] = st
				}
			}
		default:
			seen = now
		}
	}
}

// Build runs `go build -o` for the binary now, in its directory, and puts
// the result in place. Run it before Run, not beside it: Run builds.
func (b *Builder) Build(ctx context.Context) Build {
	start := time.Now()
	res := Build{Binary: b.Binary}
	bin, err := filepath.Abs(b.Binary)
	if err != nil {
		res.Err = err
		return res
	}
	dir, name := filepath.Split(bin)
	dir = filepath.Clean(dir)
	tmp := filepath.Join(dir, "."+name+".build")
	out, err := goCommand(ctx, dir, "build", "-o", tmp, ".")
	res.Took, res.Output = time.Since(start), b.relative(dir, out)
	b.listed = nil // a new import, or file, counts from now on
	if err == nil {
		err = os.Rename(tmp, bin)
	}
	if err != nil {
		os.Remove(tmp)
		res.Err = fmt.Errorf("go build in %s: %w", dir, err)
	}
	return res
}

// HasSources says whether the binary's directory holds Go sources to
// build it from. Run it before Run, not beside it.
func (b *Builder) HasSources(ctx context.Context) bool {
	return len(b.sources(ctx).files) > 0
}

// Stale says whether the binary is missing or older than a source. Run
// it before Run, not beside it.
func (b *Builder) Stale(ctx context.Context) bool {
	return b.newer(snapshot(b.sources(ctx)))
}

// newer says whether the binary is missing or older than a source.
func (b *Builder) newer(sources map[string]stamp) bool {
	bin := stat(b.Binary)
	if bin.fi == nil {
		return true
	}
	for _, s := range sources {
		if s.fi != nil && s.fi.ModTime().After(bin.fi.ModTime()) {
			return true
		}
	}
	return false
}

// sourceSet is where the sources of a binary are: the directories of its
// packages (each .go file in them but tests) and the module's files.
type sourceSet struct {
	dirs    []string
	modules []string // go.mod and go.sum
	files   []string // the .go files found in dirs by the last refresh
}

// refresh lists the .go files in the directories again.
func (s *sourceSet) refresh() {
	s.files = s.files[:0]
	for _, d := range s.dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				s.files = append(s.files, filepath.Join(d, n))
			}
		}
	}
}

// snapshot stats every source.
func snapshot(s *sourceSet) map[string]stamp {
	out := make(map[string]stamp, len(s.files)+len(s.modules))
	for _, f := range slices.Concat(s.files, s.modules) {
		out[f] = stat(f)
	}
	return out
}

func sameStamps(a, b map[string]stamp) bool {
	return maps.EqualFunc(a, b, stamp.equal)
}

// sources finds the binary's sources: go list names the packages of its
// own module it is built from (once, until a build); when go list cannot
// tell, the binary's directory and the go.mod above it.
func (b *Builder) sources(ctx context.Context) *sourceSet {
	if b.listed != nil {
		b.listed.refresh()
		return b.listed
	}
	b.listed = b.list(ctx)
	return b.listed
}

// list asks go list for the sources.
func (b *Builder) list(ctx context.Context) *sourceSet {
	dir, err := filepath.Abs(filepath.Dir(b.Binary))
	if err != nil {
		dir = filepath.Dir(b.Binary)
	}
	s := &sourceSet{}
	if out, err := goCommand(ctx, dir, "list", "-e", "-deps", "-json=Dir,Module", "."); err == nil {
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var pkg struct {
				Dir    string
				Module *struct {
					Main  bool
					GoMod string
				}
			}
			if err := dec.Decode(&pkg); err != nil {
				break
			}
			if pkg.Module == nil || !pkg.Module.Main || pkg.Dir == "" {
				continue
			}
			s.dirs = append(s.dirs, pkg.Dir)
			if len(s.modules) == 0 && pkg.Module.GoMod != "" {
				s.modules = []string{pkg.Module.GoMod, filepath.Join(filepath.Dir(pkg.Module.GoMod), "go.sum")}
			}
		}
	}
	if len(s.dirs) == 0 {
		s.dirs = []string{dir}
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				s.modules = []string{filepath.Join(d, "go.mod"), filepath.Join(d, "go.sum")}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	s.refresh()
	return s
}

// goCommand runs the go command in dir and returns what it printed, both
// streams; the error says how it ended.
func goCommand(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = fmt.Errorf("go %s: %s", args[0], ee.ProcessState)
	}
	return out.Bytes(), err
}

// position is the path at the start of a compiler message, file.go:line.
var position = regexp.MustCompile(`^(\S+\.go):\d+`)

// relative rewrites the paths of go's messages, relative to dir where it
// ran, relative to b.Dir, so that they open from the user's terminal.
func (b *Builder) relative(dir string, out []byte) string {
	base := b.Dir
	if base == "" {
		base, _ = os.Getwd()
	}
	var sb strings.Builder
	for line := range strings.Lines(string(out)) {
		if m := position.FindStringSubmatch(line); m != nil && !filepath.IsAbs(m[1]) {
			if rel, err := filepath.Rel(base, filepath.Join(dir, m[1])); err == nil {
				line = rel + line[len(m[1]):]
			}
		}
		sb.WriteString(line)
	}
	return strings.TrimRight(sb.String(), "\n")
}
