package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestRetentionSurvivesKill9 kills a process with SIGKILL while it folds
// hours (one transaction per interface and hour), at a different moment
// each time, then opens what it left: every call is still counted exactly
// once, and retention finishes the job.
func TestRetentionSurvivesKill9(t *testing.T) {
	if path := os.Getenv("STORE_TEST_RETAIN_CHILD"); path != "" {
		retainChild(path)
		return
	}
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.db")
	end := t0 + 30*3600
	clk := newClock(end)
	st, err := Open(seed, Options{Now: clk.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// 12 services, so that folding the six hours older than 24 h takes 72
	// transactions.
	var made []Row
	for svc := range 12 {
		for _, r := range thirtyHours() {
			if r.Method == "add" {
				r.Interface = fmt.Sprintf("org.example.Service%d", svc)
				made = append(made, r)
			}
		}
	}
	insertInBatches(t, st, made, 2000)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	seedBytes, err := os.ReadFile(seed)
	if err != nil {
		t.Fatal(err)
	}

	midway := 0
	for i, delay := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond} {
		path := filepath.Join(dir, fmt.Sprintf("killed%d.db", i))
		if err := os.WriteFile(path, seedBytes, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestRetentionSurvivesKill9$")
		cmd.Env = append(os.Environ(), "STORE_TEST_RETAIN_CHILD="+path, "STORE_TEST_NOW="+strconv.FormatInt(end, 10))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "folding\n" {
			t.Fatalf("child: %q, %v", line, err)
		}
		time.Sleep(delay)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, out)
		cmd.Wait()

		st := openAt(t, path, clk)
		var folded int
		if err := st.rdb.QueryRow(`SELECT count(DISTINCT interface_id || '/' || time) FROM hourly`).Scan(&folded); err != nil {
			t.Fatal(err)
		}
		if folded > 0 && folded < 12*6 {
			midway++
		}
		for _, svc := range []int{0, 5, 11} {
			iface := fmt.Sprintf("org.example.Service%d", svc)
			want := calls(made) / 12
			if got := calls(mustQuery(t, st, Filter{Interface: iface})); got != want {
				t.Errorf("killed after %s (%d hours folded): %s has %d calls, made %d", delay, folded, iface, got, want)
			}
			if got := bucketCalls(mustSeries(t, st, SeriesQuery{Interface: iface, From: t0 + 1, To: end, Step: 3600})); got != want {
				t.Errorf("killed after %s (%d hours folded): %s series has %d calls, made %d", delay, folded, iface, got, want)
			}
		}
		if err := st.Retain(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := st.rdb.QueryRow(`SELECT count(DISTINCT interface_id || '/' || time) FROM hourly`).Scan(&folded); err != nil || folded != 12*6 {
			t.Errorf("after finishing the retention: %d hours folded, %v; want %d", folded, err, 12*6)
		}
		if got := calls(mustQuery(t, st, Filter{Interface: "org.example.Service3"})); got != calls(made)/12 {
			t.Errorf("after finishing the retention: %d calls, made %d", got, calls(made)/12)
		}
		st.Close()
	}
	t.Logf("%d of 5 kills landed while hours were being folded", midway)
}

// retainChild is the process TestRetentionSurvivesKill9 kills.
func retainChild(path string) {
	now, _ := strconv.ParseInt(os.Getenv("STORE_TEST_NOW"), 10, 64)
	st, err := Open(path, Options{Now: func() time.Time { return time.Unix(now, 0) }, Logger: quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("folding")
	if err := st.Retain(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	st.Close()
	os.Exit(0)
}
