package scaffold

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
)

// ModulePath is this module's path, which a handler's module requires.
const ModulePath = "github.com/dubbo-lab/dubbo"

// Module is how a handler's go.mod requires this module.
type Module struct {
	// Version is the version required: a release, or in a development
	// build the placeholder v0.0.0-00010101000000-000000000000 (Replace
	// says where the code is).
	Version string
	// Replace is the directory of a checkout of this module that replaces
	// it; "" for none.
	Replace string
	// GoVersion is the go directive, e.g. 1.26.
	GoVersion string
	// GoSum seeds the module's go.sum, so that the go command has the
	// hashes of this module's dependencies without asking the checksum
	// database. Default none.
	GoSum []byte
	// Why says how the requirement was chosen, for people.
	Why string
}

// devVersion is the version a module requires of a module it replaces.
const devVersion = "v0.0.0-00010101000000-000000000000"

// pseudoVersion matches the tail of a Go pseudo-version: a commit, which
// the module proxy has only when it was pushed.
var pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}(\+.*)?$`)

// Running is the Module of the running binary: its own version when it is
// a release (goSum, this module's go.sum, seeds the new one); else a
// replace by the checkout it was built from, when that is still there, or
// by one that holds dir or a parent of it (whose go.sum seeds the new
// one). A development build without a checkout is an error saying what to
// do.
func Running(dir string, goSum []byte) (Module, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Module{}, errors.New("this binary has no build information: build it with module support")
	}
	_, self, _, _ := runtime.Caller(0)
	return requirement(bi, []string{sourceRoot(self), dir}, goSum)
}

// sourceRoot is the root of the checkout a source file of this package was
// compiled from, or "" when the binary does not say (built with -trimpath).
func sourceRoot(file string) string {
	if !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(filepath.Dir(file))
}

// requirement picks how to require this module for a binary built as bi:
// at bi's version when it is a release, else replaced by the first
// checkout found at or above one of dirs.
func requirement(bi *debug.BuildInfo, dirs []string, goSum []byte) (Module, error) {
	v := bi.Main.Version
	goVersion := goDirective(bi.GoVersion)
	release := v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) && !strings.Contains(v, "+")
	if release {
		return Module{Version: v, GoVersion: goVersion, GoSum: goSum,
			Why: fmt.Sprintf("go.mod requires %s %s, the version of this dubbo", ModulePath, v)}, nil
	}
	for _, d := range dirs {
		root, modGo, ok := findCheckout(d)
		if !ok {
			continue
		}
		sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return Module{}, err
		}
		if modGo != "" {
			goVersion = modGo
		}
		return Module{Version: devVersion, Replace: root, GoVersion: goVersion, GoSum: sum,
			Why: fmt.Sprintf("this dubbo is a development build%s: go.mod replaces %s with the checkout at %s", versionNote(v), ModulePath, root)}, nil
	}
	return Module{}, fmt.Errorf("this dubbo is a development build%s and no checkout of %s was found in the directory it was built in or here: run it inside a checkout, or install a release (go install %s@latest)",
		versionNote(v), ModulePath, ModulePath)
}

// versionNote names a development build's version, when it has one.
func versionNote(v string) string {
	if v == "" || v == "(devel)" {
		return ""
	}
	return " (" + v + ")"
}

// goDirective is the go directive for a toolchain version: go1.26.2 → 1.26.
func goDirective(toolchain string) string {
	v := strings.TrimPrefix(toolchain, "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	// Strip what follows the minor version in go1.27rc1.
	minor := strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	return parts[0] + "." + minor
}

// findCheckout looks for the root of a checkout of this module at or above
// dir: a go.mod whose module is ModulePath. It returns the root and its go
// directive.
func findCheckout(dir string) (root, goVersion string, ok bool) {
	if dir == "" {
		return "", "", false
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", "", false
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if module, goV := parseGoMod(b); module == ModulePath {
				return dir, goV, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", false
		}
		dir = parent
	}
}

// parseGoMod reads the module path and go directive of a go.mod.
func parseGoMod(b []byte) (module, goVersion string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "module" {
			module = strings.Trim(f[1], `"`)
		}
		if len(f) == 2 && f[0] == "go" {
			goVersion = f[1]
		}
	}
	return module, goVersion
}

// goMod is the go.mod of module name, and a note on how it requires this
// module.
func (m Module) goMod(name string) ([]byte, string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire %s %s\n", name, m.GoVersion, ModulePath, m.Version)
	if m.Replace != "" {
		fmt.Fprintf(&b, "\nreplace %s => %s\n", ModulePath, m.Replace)
	}
	return b.Bytes(), m.Why
}

// relativeTo makes m's replace relative to the module at dir when the
// checkout holds it, so that the two move together.
func (m Module) relativeTo(dir string) Module {
	if m.Replace == "" {
		return m
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return m
	}
	rel, err := filepath.Rel(abs, m.Replace)
	if err != nil {
		return m
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part != ".." {
			return m
		}
	}
	m.Replace = filepath.ToSlash(rel)
	return m
}

// Tidy runs `go mod tidy` in the module at dir, with env added to the go
// command's environment; it completes go.mod and go.sum, downloading what
// the module cache lacks.
func Tidy(ctx context.Context, dir string, env ...string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return errors.New("the go command is not on $PATH: install Go (https://go.dev/dl), then run `go mod tidy` in " + dir)
	}
	cmd := exec.CommandContext(ctx, gobin, "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go mod tidy in %s: %w\n%s", dir, err, bytes.TrimSpace(out))
	}
	return nil
}
