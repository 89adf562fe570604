package sdk

import (
	"testing"
	"time"
)

// A method runs on the link's reader only after quickRuns quick runs in a
// row, and never again once it was slow or called through the node.
func TestMethodInline(t *testing.T) {
	quick, mid, slow := time.Microsecond, 2*quickRun, slowRun
	type run struct {
		d         time.Duration
		calledOut bool
	}
	times := func(n int, r run) []run {
		out := make([]run, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	for _, c := range []struct {
		name string
		runs []run
		want bool
	}{
		{"new", nil, false},
		{"almost", times(quickRuns-1, run{d: quick}), false},
		{"earned", times(quickRuns, run{d: quick}), true},
		{"one middling run starts over", append(times(quickRuns-1, run{d: quick}), append([]run{{d: mid}}, times(quickRuns-1, run{d: quick})...)...), false},
		{"earned again", append(times(quickRuns, run{d: quick}), append([]run{{d: mid}}, times(quickRuns, run{d: quick})...)...), true},
		{"slow once", append(append(times(quickRuns, run{d: quick}), run{d: slow}), times(100, run{d: quick})...), false},
		{"called the node", append(append(times(quickRuns, run{d: quick}), run{d: quick, calledOut: true}), times(100, run{d: quick})...), false},
	} {
		var m method
		for _, r := range c.runs {
			m.observe(r.d, r.calledOut)
		}
		if got := m.inline(); got != c.want {
			t.Errorf("%s: inline = %v, want %v", c.name, got, c.want)
		}
	}
}
