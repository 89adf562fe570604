package scaffold

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want string // in the error; "" for valid
	}{
		{"hello", ""},
		{"order_service2", ""},
		{"", "needs a name"},
		{"Hello", "not a valid name"},
		{"my-handler", "not a valid name"},
		{"2fa", "not a valid name"},
		{"../x", "not a valid name"},
		{"func", "reserved"},
		{"main", "reserved"},
		{"std", "reserved"},
	}
	for _, tt := range tests {
		err := checkName(tt.name)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkName(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	mod := Module{Version: "v1.0.0", GoVersion: "1.26"}
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, Spec{Name: "taken"}, mod); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("an existing directory: err = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "taken")); len(entries) != 0 {
		t.Errorf("the existing directory was written to: %v", entries)
	}
	if _, err := Write(dir, Spec{Name: "Bad"}, mod); err == nil {
		t.Error("a bad name was accepted")
	}
	if _, err := Write(dir, Spec{Name: "both", Proto: "x.proto", Existing: &Existing{}}, mod); err == nil {
		t.Error("a proto and an existing service were accepted together")
	}
	for _, iface := range []string{"com.example.", "com..Hello", "com.example.Hello<T>", "1a.B"} {
		if _, err := Write(dir, Spec{Name: "badiface", Interface: iface}, mod); err == nil || !strings.Contains(err.Error(), "not a Java class name") {
			t.Errorf("interface %q: err = %v", iface, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "both")); !os.IsNotExist(err) {
		t.Errorf("a refused handler left its directory: %v", err)
	}
}

func TestRequirement(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module "+ModulePath+"\n\ngo 1.26\n")
	writeFile(t, filepath.Join(root, "go.sum"), "example.com/x v1.0.0 h1:abc=\n")
	inside := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "go.mod"), "module example.com/other\n\ngo 1.22\n")
	embedded := []byte("embedded go.sum\n")

	tests := []struct {
		version string
		dirs    []string
		want    Module // Why not compared
		err     string
	}{
		{"v1.2.3", []string{root}, Module{Version: "v1.2.3", GoVersion: "1.26", GoSum: embedded}, ""},
		{"(devel)", []string{"", inside}, Module{Version: devVersion, Replace: root, GoVersion: "1.26", GoSum: []byte("example.com/x v1.0.0 h1:abc=\n")}, ""},
		// A pseudo-version or a dirty build names a commit the proxy may not have.
		{"v0.0.0-20260101120000-abcdefabcdef", []string{root}, Module{Version: devVersion, Replace: root, GoVersion: "1.26", GoSum: []byte("example.com/x v1.0.0 h1:abc=\n")}, ""},
		{"v1.2.4-0.20260101120000-abcdefabcdef+dirty", []string{root}, Module{Version: devVersion, Replace: root, GoVersion: "1.26", GoSum: []byte("example.com/x v1.0.0 h1:abc=\n")}, ""},
		{"(devel)", []string{other}, Module{}, "no checkout of " + ModulePath},
	}
	for _, tt := range tests {
		bi := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: ModulePath, Version: tt.version}}
		got, err := requirement(bi, tt.dirs, embedded)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.version, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.version, err)
			continue
		}
		if got.Version != tt.want.Version || got.Replace != tt.want.Replace || got.GoVersion != tt.want.GoVersion || string(got.GoSum) != string(tt.want.GoSum) || got.Why == "" {
			t.Errorf("%s: %+v, want %+v", tt.version, got, tt.want)
		}
	}
}

func TestGoMod(t *testing.T) {
	root := t.TempDir()
	m := Module{Version: devVersion, Replace: root, GoVersion: "1.26"}
	tests := []struct {
		dir, replace string
	}{
		{filepath.Join(root, "hello"), ".."},
		{filepath.Join(root, "a", "hello"), "../.."},
		{filepath.Join(t.TempDir(), "hello"), root},
	}
	for _, tt := range tests {
		b, _ := m.relativeTo(tt.dir).goMod("hello")
		want := "module hello\n\ngo 1.26\n\nrequire " + ModulePath + " " + devVersion + "\n\nreplace " + ModulePath + " => " + tt.replace + "\n"
		if string(b) != want {
			t.Errorf("go.mod in %s:\n%s\nwant\n%s", tt.dir, b, want)
		}
	}
	b, _ := Module{Version: "v1.2.3", GoVersion: "1.26"}.relativeTo(root).goMod("x")
	if want := "module x\n\ngo 1.26\n\nrequire " + ModulePath + " v1.2.3\n"; string(b) != want {
		t.Errorf("go.mod of a release:\n%s", b)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
