package toolbuild

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CI", "")

	builds := 0
	build := func(dir string) error {
		builds++
		return os.WriteFile(filepath.Join(dir, "tool"), []byte("v1"), 0o644)
	}
	first := Dir(t, "tool", "v1.0.0@x/y", build)
	second := Dir(t, "tool", "v1.0.0@x/y", build)
	if first != second || builds != 1 {
		t.Errorf("two calls gave %s and %s after %d builds, want one directory built once", first, second, builds)
	}
	if data, err := os.ReadFile(filepath.Join(first, "tool")); err != nil || string(data) != "v1" {
		t.Errorf("built file: %q, %v", data, err)
	}
	if other := Dir(t, "tool", "v2", build); other == first || builds != 2 {
		t.Errorf("another key gave %s after %d builds, want a new directory and a second build", other, builds)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(first), "*.tmp-*")); len(leftovers) != 0 {
		t.Errorf("build directories left behind: %v", leftovers)
	}

	// A tool that cannot be built skips the test (outside CI) and leaves
	// nothing cached: the next test tries again.
	t.Run("unavailable", func(t *testing.T) {
		defer func() {
			if !t.Skipped() {
				t.Errorf("a failed build did not skip the test")
			}
		}()
		Dir(t, "broken", "v1", func(string) error { return errors.New("no network") })
	})
	if dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(first), "broken*")); len(dirs) != 0 {
		t.Errorf("a failed build left %v", dirs)
	}
}
