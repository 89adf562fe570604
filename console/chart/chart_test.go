package chart

import (
	"math"
	"strings"
	"testing"
)

func TestSVG(t *testing.T) {
	nan := math.NaN()
	svg := string(SVG(Chart{Title: `Calls <b>&"`, Unit: "per second", Times: []int64{60, 120, 180, 240},
		Series: []Series{{Name: "calls/s", Class: "s0", Values: []float64{1, nan, 3, 4}}}}))
	for _, want := range []string{`data-total="8"`, `data-points="4"`, "Calls &lt;b&gt;&amp;&#34;", `<circle class="dot s0"`, `<polyline class="line s0"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("missing %q in\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "<b>") {
		t.Errorf("title not escaped:\n%s", svg)
	}
	empty := string(SVG(Chart{Title: "x"}))
	if !strings.HasPrefix(empty, "<svg") || !strings.Contains(empty, `data-total="0"`) {
		t.Errorf("empty chart %s", empty)
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 7: 10, 12: 20, 150: 200} {
		if got := niceCeil(v); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
