// Package toolbuild installs the third-party tools that tests drive as a
// user would (grpcurl, ghz, Node packages) without them entering this
// module's go.mod: Go tools with `go install module@version`, Node
// packages with `npm ci`. Each goes into a directory of the user's cache
// named for what is in it (a version, a lockfile's hash), built aside and
// renamed into place, so that it is built once per machine and parallel
// test binaries never see half of one.
//
// A tool that cannot be had (no Go or npm, no network for the first
// download) skips the calling test with a hint, or fails it when CI=true.
package toolbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
)

// Dir returns the cached directory of name at key, calling build on a new
// empty directory first when there is none. An error from build means the
// tool cannot be had here: the test is skipped (failed under CI) with it.
// The rename that puts a built directory in place is atomic, so one that
// exists is whole.
func Dir(t testing.TB, name, key string, build func(dir string) error) string {
	t.Helper()
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "dubbo-testkit")
	final := filepath.Join(root, name+"-"+sanitize(key))
	if _, err := os.Stat(final); err == nil {
		return final
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatalf("toolbuild: %v", err)
	}
	tmp, err := os.MkdirTemp(root, name+".tmp-")
	if err != nil {
		t.Fatalf("toolbuild: %v", err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	if err := build(tmp); err != nil {
		need.Missing(t, "%s %s: %v", name, key, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another test binary got there first: use its copy.
		if _, serr := os.Stat(final); serr != nil {
			t.Fatalf("toolbuild: put %s in place: %v", final, err)
		}
	}
	return final
}

func sanitize(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '@' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, key)
}

// GoInstall returns the path of the command pkg at module version
// (`go install pkg@version`), built with this test's Go the first time.
// The module's own go.mod decides its dependencies; ours is not touched.
func GoInstall(t testing.TB, pkg, version string) string {
	t.Helper()
	name := filepath.Base(pkg)
	dir := Dir(t, name, version+"-"+runtime.Version(), func(dir string) error {
		goBin, err := exec.LookPath("go")
		if err != nil {
			return fmt.Errorf("go not found in PATH: install Go to build %s", pkg)
		}
		cmd := exec.Command(goBin, "install", pkg+"@"+version)
		cmd.Dir = dir // outside any module
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install %s@%s (needs the module proxy on first use): %v\n%s", pkg, version, err, out)
		}
		return nil
	})
	return filepath.Join(dir, name)
}
