package depmap

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// top is the y of the box labelled label in svg.
func top(t *testing.T, svg, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(`data-label="` + regexp.QuoteMeta(label) + `">(?:<a [^>]*>)?<rect x="[0-9.]+" y="([0-9.]+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no box %q in %s", label, svg)
	}
	y, _ := strconv.ParseFloat(m[1], 64)
	return y
}

func TestSVG(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     Map
		want  []string
		above [][2]string // the first box above the second
		not   []string
	}{
		{
			name: "a caller, a service, its provider",
			m: Map{Titles: []string{"callers", "services", "providers"},
				Layers: [][]Node{{{ID: "c:web", Label: "web", Link: "/dependencies?application=web"}},
					{{ID: "s:G", Label: "org.example.Greeter", Sub: "1.0.0", Link: "/services/org.example.Greeter", Class: "service"}},
					{{ID: "p:app", Label: "greeter-app"}}},
				Edges: []Edge{{From: "c:web", To: "s:G", Label: "2.50/s · 1.00%", Title: "web calls org.example.Greeter", Class: "bad"},
					{From: "s:G", To: "p:app", Class: "provides"}}},
			want: []string{`data-nodes="3" data-edges="2"`, `<g class="edge bad" data-from="web" data-to="org.example.Greeter" data-label="2.50/s · 1.00%">`,
				`<title>web calls org.example.Greeter</title>`, `marker-end="url(#depmap-arrow-bad)"`, `>2.50/s · 1.00%</text>`,
				`<g class="edge provides" data-from="org.example.Greeter" data-to="greeter-app"`, `marker-end="url(#depmap-arrow)"`,
				`<g class="node service" data-label="org.example.Greeter"><a href="/services/org.example.Greeter">`, `<text class="sub"`,
				`>callers</text>`, `>providers</text>`},
		},
		{
			name: "crossing edges are uncrossed",
			m: Map{Layers: [][]Node{{{ID: "a", Label: "a"}, {ID: "b", Label: "b"}, {ID: "c", Label: "c"}},
				{{ID: "y", Label: "y"}, {ID: "lonely", Label: "lonely"}, {ID: "x", Label: "x"}}},
				Edges: []Edge{{From: "a", To: "x"}, {From: "c", To: "y"}, {From: "b", To: "x"}}},
			above: [][2]string{{"a", "b"}, {"b", "c"}, {"x", "y"}, {"y", "lonely"}},
		},
		{
			name: "text is escaped; edges to unknown nodes are left out",
			m: Map{Layers: [][]Node{{{ID: "1", Label: "<script>x</script>", Link: `/a?b=1&c="2"`}}},
				Edges: []Edge{{From: "1", To: "nowhere", Label: "<b>"}}},
			want: []string{"&lt;script&gt;x&lt;/script&gt;", `href="/a?b=1&amp;c=&#34;2&#34;"`},
			not:  []string{"<script>", "<b>", `class="edge"`},
		},
		{
			name: "a long name is clipped in its box, whole in its data",
			m:    Map{Layers: [][]Node{{{ID: "1", Label: strings.Repeat("x", 100)}}}},
			want: []string{`data-label="` + strings.Repeat("x", 100) + `"`, strings.Repeat("x", 50) + "…</text>"},
		},
		{name: "empty", m: Map{}, want: []string{`data-nodes="0" data-edges="0"`, "</svg>"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svg := string(SVG(c.m))
			for _, w := range c.want {
				if !strings.Contains(svg, w) {
					t.Errorf("no %s in\n%s", w, svg)
				}
			}
			for _, n := range c.not {
				if strings.Contains(svg, n) {
					t.Errorf("%s in\n%s", n, svg)
				}
			}
			for _, a := range c.above {
				if top(t, svg, a[0]) >= top(t, svg, a[1]) {
					t.Errorf("%s is not above %s in\n%s", a[0], a[1], svg)
				}
			}
		})
	}
}
