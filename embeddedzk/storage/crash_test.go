package storage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const crashChildEnv = "STORAGE_CRASH_CHILD_DIR"

// TestKill9KeepsAcknowledgedRecords runs a real writer process (this test
// binary again), kills it with SIGKILL mid-stream, and checks that every
// record it reported durable is there on reopen, with no gap, and that the
// log accepts new records afterwards.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9KeepsAcknowledgedRecords$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[int64]bool{}
	var maxAck int64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		z, ok := strings.CutPrefix(sc.Text(), "ack ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(z, 10, 64)
		if err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		acked[n] = true
		maxAck = max(maxAck, n)
		if len(acked) == 2000 {
			cmd.Process.Kill() // SIGKILL: no Close, no deferred code
		}
	}
	cmd.Wait()
	if len(acked) < 2000 {
		t.Fatalf("child acknowledged only %d records before exiting", len(acked))
	}

	l := mustOpen(t, dir, true)
	got := replayed(t, l, 0)
	if len(got) < int(maxAck) {
		t.Fatalf("replayed %d records, but the child acknowledged zxid %d", len(got), maxAck)
	}
	for i, z := range got {
		if z != int64(i+1) {
			t.Fatalf("replayed zxid %d at position %d: gap in the log", z, i)
		}
	}
	t.Logf("acknowledged %d (max %d), recovered %d", len(acked), maxAck, len(got))
	next := int64(len(got)) + 1
	appendRange(t, l, next, next+9)
	mustClose(t, l)
	l = mustOpen(t, dir, true)
	defer mustClose(t, l)
	if n := len(replayed(t, l, 0)); n != int(next+9) {
		t.Errorf("after appending to the recovered log: %d records, want %d", n, next+9)
	}
}

// crashChild appends from four goroutines, rolling now and then, and prints
// "ack <zxid>" once a record is durable, until it is killed. It exits by
// itself after ten seconds so that a broken parent leaves nothing behind.
func crashChild(dir string) {
	l, err := OpenLog(dir, LogOptions{Fsync: true, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	deadline := time.Now().Add(10 * time.Second)
	var (
		mu    sync.Mutex
		outMu sync.Mutex
		next  int64
		wg    sync.WaitGroup
	)
	w := bufio.NewWriter(os.Stdout)
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				mu.Lock()
				next++
				z := next
				err := l.Append(z, payload(z))
				if z%700 == 0 {
					l.Roll()
				}
				mu.Unlock()
				if err == nil {
					err = l.WaitDurable(context.Background(), z)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				outMu.Lock()
				fmt.Fprintf(w, "ack %d\n", z)
				w.Flush()
				outMu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(0)
}
