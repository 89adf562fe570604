package sdk

import (
	"testing"
	"time"
)

// A method runs on the link's reader after quickRuns quick runs in a row;
// a longer run sends it back to the workers, a slow one on the reader
// doubles the runs needed, and calling through the node ends it for good.
func TestMethodInline(t *testing.T) {
	quick, mid, slow := time.Microsecond, 2*quickRun, slowRun
	type run struct {
		d                 time.Duration
		inline, calledOut bool
	}
	times := func(n int, r run) []run {
		out := make([]run, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	join := func(rs ...[]run) []run {
		var out []run
		for _, r := range rs {
			out = append(out, r...)
		}
		return out
	}
	q := run{d: quick}
	for _, c := range []struct {
		name string
		runs []run
		want bool
	}{
		{"new", nil, false},
		{"almost", times(quickRuns-1, q), false},
		{"earned", times(quickRuns, q), true},
		{"a slow first run only delays it", join([]run{{d: slow}}, times(quickRuns, q)), true},
		{"one middling run starts over", join(times(quickRuns, q), []run{{d: mid, inline: true}}, times(quickRuns-1, q)), false},
		{"earned again", join(times(quickRuns, q), []run{{d: mid, inline: true}}, times(quickRuns, q)), true},
		{"slow on the reader: twice the runs", join(times(quickRuns, q), []run{{d: slow, inline: true}}, times(2*quickRuns-1, q)), false},
		{"slow on the reader: earned again", join(times(quickRuns, q), []run{{d: slow, inline: true}}, times(2*quickRuns, q)), true},
		{"called the node", join(times(quickRuns, q), []run{{d: quick, calledOut: true}}, times(100, q)), false},
	} {
		var m method
		for _, r := range c.runs {
			m.observe(r.d, r.inline, r.calledOut)
		}
		if got := m.inline.Load(); got != c.want {
			t.Errorf("%s: inline = %v, want %v", c.name, got, c.want)
		}
	}
}
