package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dubbo-lab/dubbo"

// importEdge is one import of one of this module's packages by another.
type importEdge struct {
	from, to string // package directories relative to the module root ("." is the root)
	test     bool   // from a _test.go file
	file     string
}

// moduleImports reads the imports of every Go file of the module (the
// examples' own modules excluded) from the source.
func moduleImports(t *testing.T) []importEdge {
	t.Helper()
	var edges []importEdge
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "examples") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			to := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if to == "" {
				to = "."
			}
			edges = append(edges, importEdge{from: filepath.ToSlash(filepath.Dir(path)), to: to,
				test: strings.HasSuffix(path, "_test.go"), file: path})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) < 100 {
		t.Fatalf("read only %d imports of the module's packages: is the test running at the module root?", len(edges))
	}
	return edges
}

// under reports whether dir is root or below it.
func under(dir, root string) bool { return dir == root || strings.HasPrefix(dir, root+"/") }

// importRules are the rules docs/ARCHITECTURE.md states ("Import rules"):
// which packages may never import which.
var importRules = []struct {
	name string
	bad  func(e importEdge) bool
}{
	{"embeddedzk imports nothing else of this module", func(e importEdge) bool {
		return under(e.from, "embeddedzk") && !under(e.to, "embeddedzk") && !under(e.to, "internal/testkit")
	}},
	{"node never imports embeddedzk, console, monitor, roles, config, plugins or tools", func(e importEdge) bool {
		if !under(e.from, "node") || e.test {
			return false
		}
		for _, no := range []string{"embeddedzk", "console", "monitor", "roles", "config", "plugins", "tools"} {
			if under(e.to, no) {
				return true
			}
		}
		return false
	}},
	{"only the root package imports roles", func(e importEdge) bool {
		return under(e.to, "roles") && e.from != "." && !under(e.from, "roles")
	}},
	{"only the root package and roles import config", func(e importEdge) bool {
		return under(e.to, "config") && e.from != "." && !under(e.from, "roles") && !under(e.from, "config") && !under(e.from, "test")
	}},
	{"internal/testkit is imported by tests only", func(e importEdge) bool {
		return under(e.to, "internal/testkit") && !e.test && !under(e.from, "internal/testkit") && !under(e.from, "test")
	}},
	{"plugins/sdk and its sdktest import no role of the node", func(e importEdge) bool {
		if (e.from != "plugins/sdk" && e.from != "plugins/sdk/sdktest") || e.test {
			return false
		}
		for _, ok := range []string{"plugins/sdk", "plugins/internal/wire", "node/rpc", "node/protocol", "node/url", "node/provider/settings", "internal/fastpath", "internal/sockio", "internal/callctx"} {
			if e.to == ok {
				return false
			}
		}
		return true
	}},
	{"monitor and console never import each other", func(e importEdge) bool {
		return !e.test && ((e.from == "monitor" && under(e.to, "console")) || (under(e.from, "console") && e.to == "monitor"))
	}},
	{"tools import nothing of the runtime", func(e importEdge) bool {
		return under(e.from, "tools") && !under(e.to, "tools")
	}},
}

// importViolations lists, per broken rule, the imports that break it.
func importViolations(edges []importEdge) map[string][]string {
	out := map[string][]string{}
	for _, r := range importRules {
		for _, e := range edges {
			if r.bad(e) {
				out[r.name] = append(out[r.name], e.file+" imports "+e.to)
			}
		}
		sort.Strings(out[r.name])
	}
	return out
}

func TestImportRules(t *testing.T) {
	for rule, bad := range importViolations(moduleImports(t)) {
		if len(bad) > 0 {
			t.Errorf("%s, but:\n\t%s", rule, strings.Join(bad, "\n\t"))
		}
	}
}

// Each rule catches the import it forbids, and lets an allowed one pass.
func TestImportRulesCatch(t *testing.T) {
	cases := []struct {
		e       importEdge
		allowed bool
	}{
		{importEdge{from: "embeddedzk/tree", to: "node/url"}, false},
		{importEdge{from: "embeddedzk/tree", to: "embeddedzk/wire"}, true},
		{importEdge{from: "node/consumer", to: "embeddedzk"}, false},
		{importEdge{from: "node/consumer", to: "embeddedzk", test: true}, true},
		{importEdge{from: "node/provider", to: "plugins"}, false},
		{importEdge{from: "console", to: "roles"}, false},
		{importEdge{from: ".", to: "roles"}, true},
		{importEdge{from: "monitor", to: "config"}, false},
		{importEdge{from: "roles", to: "config"}, true},
		{importEdge{from: "node/consumer", to: "internal/testkit/zktest"}, false},
		{importEdge{from: "node/consumer", to: "internal/testkit/zktest", test: true}, true},
		{importEdge{from: "plugins/sdk", to: "node/consumer"}, false},
		{importEdge{from: "plugins/sdk", to: "node/rpc"}, true},
		{importEdge{from: "plugins/sdk/sdktest", to: "node/provider"}, false},
		{importEdge{from: "plugins/sdk/sdktest", to: "plugins/sdk"}, true},
		{importEdge{from: "tools/benchreport", to: "node/url"}, false},
		{importEdge{from: "console", to: "monitor"}, false},
		{importEdge{from: "console", to: "monitor/store"}, true},
	}
	for _, c := range cases {
		c.e.file = c.e.from + "/x.go"
		bad := 0
		for _, v := range importViolations([]importEdge{c.e}) {
			bad += len(v)
		}
		if allowed := bad == 0; allowed != c.allowed {
			t.Errorf("%s -> %s (test %v): allowed %v, want %v", c.e.from, c.e.to, c.e.test, allowed, c.allowed)
		}
	}
}
