package roles

import (
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTerminal follows what dubbo up prints for its user: a status block
// naming the plugin, its process and what it serves, then one line per
// change: a swap with the registrations unchanged, a swap with a changed
// service, a new binary refused (once, though it is retried), the plugin
// killed and back up.
func TestTerminal(t *testing.T) {
	s := newSwapSetup(t)
	plugin, pidFile := s.plugin, s.pidFile
	out, stop := startRunWith(t, s.config(t, ""), []string{Provider}, Options{Logger: slog.New(slog.DiscardHandler), Swap: true})
	defer stop()
	first := readPid(t, pidFile)

	wantLine := func(what string, re string) {
		t.Helper()
		line := regexp.MustCompile(`(?m)^` + re + `$`)
		waitFor(t, what, func() (bool, string) { return line.MatchString(out.String()), out.String() })
	}
	wantLine("the plugin in the status block",
		fmt.Sprintf(`plugin     %s   provider 1 pid %d   serves org.example.Greeter:1.0.0`, regexp.QuoteMeta(plugin), first))
	change := `\d\d:\d\d:\d\d `

	installPlugin(t, plugin, false)
	second := waitNewPid(t, pidFile, first)
	wantLine("a swap", fmt.Sprintf(change+`swapped   greeter \(provider 1\): pid %d → %d, serving \d+ms after the binary was written; registrations unchanged`, first, second))

	installPlugin(t, plugin, true)
	third := waitNewPid(t, pidFile, second)
	wantLine("a swap with another method", fmt.Sprintf(change+`swapped   greeter \(provider 1\): pid %d → %d, .*; changed org.example.Greeter:1.0.0 \(registrations updated\)`, second, third))

	installScript(t, plugin, "#!/bin/sh\necho 'cannot open config' >&2\nexit 3\n")
	wantLine("the new binary refused", fmt.Sprintf(change+`refused   greeter \(provider 1\): pid %d serves on; the new binary did not start: .*it exited with status 3 before the handshake; its stderr ended with: cannot open config`, third))
	time.Sleep(time.Second) // retried meanwhile, with backoff
	if n := strings.Count(out.String(), "refused   "); n != 1 {
		t.Errorf("the refusal was printed %d times, want once:\n%s", n, out.String())
	}

	installPlugin(t, plugin, true)
	// The pid file is written before the handshake: the swap says when
	// the new process serves.
	swapped := regexp.MustCompile(fmt.Sprintf(change+`swapped   greeter \(provider 1\): pid %d → (\d+), `, third))
	var fourth int
	waitFor(t, "the swap to a good binary", func() (bool, string) {
		m := swapped.FindStringSubmatch(out.String())
		if m != nil {
			fmt.Sscan(m[1], &fourth)
		}
		return m != nil, out.String()
	})
	if err := syscall.Kill(fourth, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wantLine("the plugin down", change+`down      greeter \(provider 1\): process exited \(signal: killed\); restarting`)
	fifth := waitNewPid(t, pidFile, fourth)
	wantLine("the plugin up again", fmt.Sprintf(change+`up        greeter \(provider 1\): pid %d, serves org.example.Greeter:1.0.0`, fifth))
}

// TestTerminalProviders: the terminal says when a referenced service's
// providers come and go: one of two providers' plugin killed, then back.
func TestTerminalProviders(t *testing.T) {
	s := newSwapSetup(t)
	pidFile, downFile := s.pidFile, s.downFile
	cfg := s.config(t, "[[consumer.references]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\n")
	out, stop := startRunWith(t, cfg, []string{Provider, Consumer}, Options{Logger: slog.New(slog.DiscardHandler), Replicas: 2})
	defer stop()
	waitFor(t, "both providers in the status block", func() (bool, string) {
		return regexp.MustCompile(`provider 1 pid \d+, provider 2 pid \d+`).MatchString(out.String()), out.String()
	})
	// The terminal samples the consumer's providers each second: a
	// provider gone before a sample saw it would never have been counted.
	// Both registered, the consumer notified and a sample or two taken:
	waitChildren(t, zkConn(t, s.zkAddr), greeterProviders, 2, "both providers registered")
	time.Sleep(2500 * time.Millisecond)
	pid := readPid(t, pidFile) // one of the two
	if err := os.WriteFile(downFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	line := func(re string) func() (bool, string) {
		return func() (bool, string) {
			return regexp.MustCompile(`(?m)^` + re + `$`).MatchString(out.String()), out.String()
		}
	}
	waitFor(t, "a provider left", line(`\d\d:\d\d:\d\d providers org.example.Greeter:1.0.0: 2 → 1`))
	if err := os.Remove(downFile); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the provider back", line(`\d\d:\d\d:\d\d providers org.example.Greeter:1.0.0: 1 → 2`))
}
