package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
)

// Purge keeps the newest keepSnapshots valid snapshots and the log files
// needed to replay from the oldest of them, and removes the rest, including
// damaged snapshots. With no valid snapshot it removes no log file. It is
// safe while the Log is open: the file being appended to is always kept.
func Purge(dir string, keepSnapshots int) error {
	if keepSnapshots < 1 {
		return fmt.Errorf("storage: purge: keep %d snapshots: must keep at least 1", keepSnapshots)
	}
	snaps, err := listFiles(dir, snapPrefix)
	if err != nil {
		return err
	}
	var kept []int64
	for _, ref := range slices.Backward(snaps) {
		p := filepath.Join(dir, ref.name)
		if len(kept) < keepSnapshots {
			rc, err := openSnapshot(dir, ref)
			if err == nil {
				rc.Close()
				kept = append(kept, ref.zxid)
				continue
			}
			if !errors.Is(err, errDamaged) {
				return fmt.Errorf("storage: purge: %w", err)
			}
			slog.Warn("storage: removing damaged snapshot", "file", p, "reason", err)
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("storage: purge: %w", err)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	oldest := kept[len(kept)-1]
	logs, err := listFiles(dir, logPrefix)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(logs); i++ {
		// Every zxid in logs[i] is below the next file's first zxid, so the
		// file is not needed once that is at most oldest+1.
		if logs[i+1].zxid-1 > oldest {
			break
		}
		if err := os.Remove(filepath.Join(dir, logs[i].name)); err != nil {
			return fmt.Errorf("storage: purge: %w", err)
		}
	}
	return nil
}
