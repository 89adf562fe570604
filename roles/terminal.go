package roles

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/plugins"
	"github.com/dubbo-lab/dubbo/watch"
)

// terminal is what a node prints for its user (Options.Out): where each
// role listens as it starts, then, once ready, a status block (each
// plugin, its processes and its services) and the ready line, and from
// then on one line per change: a plugin swapped for a new build, a new
// build refused, a plugin down or up again, a build of its sources, a
// referenced service's providers joining or leaving. Before the ready line
// changes are not news: the status block says how things are. The logs
// (stderr) say the rest, at --log-level.
type terminal struct {
	mu       sync.Mutex
	out      io.Writer
	ready    bool              // the status block is out: changes print
	refusals map[string]string // the refusal last printed, by plugin
}

func newTerminal(out io.Writer) *terminal {
	return &terminal{out: out, refusals: map[string]string{}}
}

// line prints a line of the status block.
func (t *terminal) line(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, format+"\n", args...)
}

// change prints a change, once the node is ready, with the time and what
// changed (a column as wide as the roles' names); more lines follow as
// they are.
func (t *terminal) change(what, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ready {
		return
	}
	fmt.Fprintf(t.out, "%s %-9s %s\n", time.Now().Format(time.TimeOnly), what, fmt.Sprintf(format, args...))
}

// setReady starts or (false: the node is stopping) ends the changes.
func (t *terminal) setReady(ready bool) {
	t.mu.Lock()
	t.ready = ready
	t.mu.Unlock()
}

// plugin names a supervised plugin in a change: greeter (provider 1).
func plugin(name, where string) string { return name + " (" + where + ")" }

func (t *terminal) pluginUp(name, where string, p *plugins.Plugin) {
	t.change("up", "%s: pid %d, %s", plugin(name, where), p.Pid(), serves(p.Services()))
}

func (t *terminal) pluginDown(name, where string, err error) {
	t.change("down", "%s: %v; restarting", plugin(name, where), firstLine(err))
}

func (t *terminal) swapped(name, where string, prev, next *plugins.Plugin, ch exportChanges) {
	took := ""
	if built := next.Built(); !built.IsZero() {
		took = fmt.Sprintf(", serving %v after the binary was written", time.Since(built).Round(time.Millisecond))
	}
	t.change("swapped", "%s: pid %d → %d%s; %s", plugin(name, where), prev.Pid(), next.Pid(), took, ch.describe())
}

// refused prints why a new binary was refused.
func (t *terminal) refused(name, where string, prev *plugins.Plugin, err error) {
	t.change("refused", "%s: pid %d serves on; the new binary did not start: %s", plugin(name, where), prev.Pid(), firstLine(err))
}

// built prints a build's outcome; the compiler's messages follow as it
// printed them.
func (t *terminal) built(b watch.Build) {
	if b.Err == nil {
		t.change("build", "%s: built in %v", shown(b.Binary), b.Took.Round(time.Millisecond))
		return
	}
	t.change("build", "%s: failed in %v; the running plugin serves on\n%s", shown(b.Binary), b.Took.Round(time.Millisecond), buildErrors(b))
}

// buildErrors is why a build failed: the compiler's messages, else the
// error.
func buildErrors(b watch.Build) string {
	if b.Output != "" {
		return b.Output
	}
	return b.Err.Error()
}

// shown is path as the terminal shows it: relative to the current
// directory when it is under it, as a user would type it.
func shown(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return path
}

// describe says what a swap changed in the provider's exports.
func (ch exportChanges) describe() string {
	var parts []string
	for _, p := range []struct {
		what string
		keys []string
	}{{"changed", ch.changed}, {"added", ch.added}, {"removed", ch.removed}} {
		if len(p.keys) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.keys, ", "))
		}
	}
	if len(parts) == 0 {
		return "registrations unchanged"
	}
	return strings.Join(parts, "; ") + " (registrations updated)"
}

// serves lists what a plugin serves, for the terminal.
func serves(services []plugins.ServiceDesc) string {
	if len(services) == 0 {
		return "calls only"
	}
	keys := make([]string, len(services))
	for i, s := range services {
		keys[i] = s.Key()
	}
	return "serves " + strings.Join(keys, ", ")
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// statusBlock prints one line for each plugin: its processes, by role,
// and what it serves. Plugins that are down get the warnings sayReady
// prints.
func (n *node) statusBlock() {
	n.mu.Lock()
	sups := slices.Clone(n.sups)
	n.mu.Unlock()
	type group struct {
		procs    []string
		services []plugins.ServiceDesc
	}
	groups := map[string]*group{}
	var paths []string
	for _, s := range sups {
		st := s.sup.State()
		p := s.sup.Plugin()
		if !st.Up || p == nil {
			continue
		}
		g := groups[st.Path]
		if g == nil {
			g = &group{services: p.Services()}
			groups[st.Path] = g
			paths = append(paths, st.Path)
		}
		g.procs = append(g.procs, fmt.Sprintf("%s pid %d", s.where, st.Pid))
	}
	for _, path := range paths {
		g := groups[path]
		n.term.line("plugin     %s   %s   %s", shown(path), strings.Join(g.procs, ", "), serves(g.services))
	}
	for _, path := range n.building {
		n.term.line("watch      %s   go build on each save of its sources (%s)", shown(path), shown(filepath.Dir(path))+string(filepath.Separator))
	}
}

// watchProviders prints, every second, the referenced services whose
// number of providers changed, until ctx ends.
func (n *node) watchProviders(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := map[string]int{}
	for {
		now := map[string]int{}
		if cons := n.made.Load(); cons != nil {
			for _, s := range cons.Services() {
				now[s.Key] = s.Providers
			}
		}
		keys := slices.Sorted(maps.Keys(now))
		for _, k := range keys {
			if was, ok := last[k]; ok && was != now[k] {
				n.term.change("providers", "%s: %d → %d", k, was, now[k])
			}
		}
		last = now
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
