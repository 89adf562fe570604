// Package watch is the handler author's loop in `dubbo up`: it notices
// that a plugin binary was replaced (Binary), so that the node swaps the
// running process for it, and with --watch rebuilds a plugin from its Go
// sources whenever they change (Builder).
//
// Both poll: a stat of each file every Every (100-200 ms). Polling needs
// no dependency, sees a file replaced by a rename as well as one rewritten
// in place, and costs a few system calls a poll. A change counts once the
// files have stayed the same for one more poll, so that a file caught half
// written, or an editor's burst of writes, is seen once, whole.
package watch

import (
	"context"
	"io/fs"
	"os"
	"time"
)

// DefaultEvery is how often a watcher polls when its owner says nothing:
// the wait it adds before a change is seen is one to two polls.
const DefaultEvery = 100 * time.Millisecond

// stamp is what a poll sees of one file; two stamps are equal when the
// file is the same file (not replaced) with the same size, time and mode.
type stamp struct {
	fi fs.FileInfo // nil: the file is missing
}

func stat(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{fi}
}

func (a stamp) equal(b stamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil
	}
	return os.SameFile(a.fi, b.fi) && a.fi.Size() == b.fi.Size() &&
		a.fi.ModTime().Equal(b.fi.ModTime()) && a.fi.Mode() == b.fi.Mode()
}

// executable says whether the file is a regular file someone may run.
func (a stamp) executable() bool {
	return a.fi != nil && a.fi.Mode().IsRegular() && a.fi.Mode()&0o111 != 0
}

// Binary calls changed each time the file at path was replaced or
// rewritten, once the new file has stayed the same for one more poll and
// is an executable regular file, until ctx ends. The file as it is when
// Binary starts is not a change; a file removed and not (yet) back is not
// one either. changed runs on Binary's goroutine: the next poll waits for
// it. every <= 0 is DefaultEvery.
func Binary(ctx context.Context, path string, every time.Duration, changed func()) {
	if every <= 0 {
		every = DefaultEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := stat(path) // what the owner runs, or will
	var seen stamp     // a different file, seen once: is it whole?
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := stat(path)
		switch {
		case now.equal(last):
			seen = stamp{}
		case now.equal(seen) && now.executable():
			last, seen = now, stamp{}
			changed()
		default:
			seen = now
		}
	}
}
