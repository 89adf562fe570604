package embeddedzk_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
	"github.com/dubbo-lab/dubbo/internal/testkit/smallfs"
)

// TestTornTailThatCannotBeCut makes cutting a torn log tail fail: the log
// file is append-only (chattr +a), so the truncate is refused the way a
// failing disk refuses it. The registry must refuse to start, say that the
// cut failed and why, and leave the file as it was. (It used to ignore the
// failure, keep the file open for appending after the torn bytes, and then
// call them mid-log corruption, with advice to set recover-truncate.) Once
// the file can be cut, the registry starts with every acknowledged write.
func TestTornTailThatCannotBeCut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the dubbo binary")
	}
	bin := buildDubbo(t)
	reg := newRegistryProcess(t, bin)
	// tmpfs takes the append-only flag on every kernel since 6.0, whatever
	// filesystem holds the temporary directory.
	reg.dataDir = filepath.Join(smallfs.Mount(t, 16<<20), "registry")
	reg.start(t)
	want := writeNodes(t, connect(t, reg.target()), "/torn", 100)
	reg.kill9(t)

	log := tearLog(t, reg.dataDir)
	torn, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}

	setAppendOnly(t, log, true)
	out := reg.startFails(t)
	t.Logf("refused start:\n%s", out)
	for _, w := range []string{"cut torn tail", log, "operation not permitted"} {
		if !strings.Contains(out, w) {
			t.Errorf("start-up error lacks %q:\n%s", w, out)
		}
	}
	setAppendOnly(t, log, false)
	if now, _ := os.ReadFile(log); !bytes.Equal(now, torn) {
		t.Fatalf("the refused start changed the log (%d bytes, was %d)", len(now), len(torn))
	}

	startsWithEverything(t, reg, want)
}

// fsAppendFL is FS_APPEND_FL of linux/fs.h, which x/sys/unix does not name.
const fsAppendFL = 0x20

// setAppendOnly sets or clears a file's append-only attribute (chattr +a):
// such a file opens for appending but refuses to be truncated. Setting it
// needs CAP_LINUX_IMMUTABLE, so the test skips without it, or fails when
// CI=true, like the other harnesses.
func setAppendOnly(t *testing.T, p string, on bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		if on {
			flags |= fsAppendFL
		} else {
			flags &^= fsAppendFL
		}
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
	}
	if err != nil {
		msg := "chattr +a " + p + ": " + err.Error()
		if errors.Is(err, syscall.EPERM) {
			msg += " (needs CAP_LINUX_IMMUTABLE)"
		}
		need.Missing(t, "%s", msg)
	}
}
