package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func snapFiles(t testing.TB, dir string) []int64 {
	t.Helper()
	refs, err := listFiles(dir, snapPrefix)
	if err != nil {
		t.Fatal(err)
	}
	var z []int64
	for _, r := range refs {
		z = append(z, r.zxid)
	}
	return z
}

func logNames(zxids ...int64) []string {
	var names []string
	for _, z := range zxids {
		names = append(names, fileName(logPrefix, z))
	}
	return names
}

// TestPurge builds log.1 (1..10), log.b (11..20), log.15 (21..30) and
// snapshots, purges with the log open, and checks what is left still
// replays everything after the oldest kept snapshot.
func TestPurge(t *testing.T) {
	tests := []struct {
		name      string
		snaps     []int64
		damaged   []int64
		keep      int
		wantSnaps []int64
		wantLogs  []string
	}{
		{"keep 2 of 3", []int64{10, 20, 25}, nil, 2, []int64{20, 25}, logNames(21)},
		{"keep 3 of 3", []int64{10, 20, 25}, nil, 3, []int64{10, 20, 25}, logNames(11, 21)},
		{"keep 1", []int64{10, 20, 25}, nil, 1, []int64{25}, logNames(21)},
		{"snapshot inside a file", []int64{5, 15}, nil, 1, []int64{15}, logNames(11, 21)},
		{"snapshot before all logs", []int64{0}, nil, 1, []int64{0}, logNames(1, 11, 21)},
		{"keep more than exist", []int64{20}, nil, 5, []int64{20}, logNames(21)},
		{"no snapshot", nil, nil, 1, nil, logNames(1, 11, 21)},
		{"damaged newest is removed and not counted", []int64{10, 20, 25}, []int64{25}, 1, []int64{20}, logNames(21)},
		{"only damaged", []int64{25}, []int64{25}, 1, nil, logNames(1, 11, 21)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, false)
			appendRange(t, l, 1, 10)
			l.Roll()
			appendRange(t, l, 11, 20)
			l.Roll()
			appendRange(t, l, 21, 30)
			for _, z := range tt.snaps {
				writeSnap(t, dir, z, snapData(z))
			}
			for _, z := range tt.damaged {
				flipByte(t, filepath.Join(dir, fileName(snapPrefix, z)), snapHeaderSize+1)
			}

			if err := Purge(dir, tt.keep); err != nil {
				t.Fatalf("Purge: %v", err)
			}
			if got := snapFiles(t, dir); !slices.Equal(got, tt.wantSnaps) {
				t.Errorf("snapshots left %v, want %v", got, tt.wantSnaps)
			}
			if got := logFiles(t, dir); !slices.Equal(got, tt.wantLogs) {
				t.Errorf("logs left %v, want %v", got, tt.wantLogs)
			}
			// The open log keeps working after a purge.
			appendRange(t, l, 31, 35)
			mustClose(t, l)

			from := int64(0)
			if len(tt.wantSnaps) > 0 {
				from = tt.wantSnaps[0]
			}
			if len(tt.wantSnaps) > 0 {
				zxid, data, err := readLatest(t, dir)
				if err != nil || zxid != tt.wantSnaps[len(tt.wantSnaps)-1] || string(data) != string(snapData(zxid)) {
					t.Errorf("LatestSnapshot after purge = %d, %v", zxid, err)
				}
			}
			l = mustOpen(t, dir, false)
			defer mustClose(t, l)
			if got := replayed(t, l, from); !slices.Equal(got, seq(from+1, 35)) {
				t.Errorf("Replay(%d) after purge = %v, want %d..35", from, got, from+1)
			}
		})
	}
}

func TestPurgeRejectsKeepZero(t *testing.T) {
	if err := Purge(t.TempDir(), 0); err == nil {
		t.Error("Purge(dir, 0) succeeded; it would remove every snapshot")
	}
}

func TestPurgeLeavesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, false)
	appendRange(t, l, 1, 3)
	l.Roll()
	appendRange(t, l, 4, 6)
	mustClose(t, l)
	writeSnap(t, dir, 6, snapData(6))
	other := filepath.Join(dir, "myid")
	os.WriteFile(other, []byte("1"), 0o644)
	if err := Purge(dir, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("Purge removed a file it does not own: %v", err)
	}
	if got := fmt.Sprint(logFiles(t, dir)); got != fmt.Sprint(logNames(4)) {
		t.Errorf("logs left %s, want %v", got, logNames(4))
	}
}
