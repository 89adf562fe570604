package sdk

import (
	"testing"
	"time"
)

// A method runs on the link's reader once it has a score of inlineScore
// quick runs; longer runs cost it that place back, a few at once or more
// than about one in five, and calling through the node ends it for good.
func TestMethodInline(t *testing.T) {
	quick, mid, slow := time.Microsecond, 2*quickRun, slowRun
	type run struct {
		d         time.Duration
		calledOut bool
	}
	q, m, s := run{d: quick}, run{d: mid}, run{d: slow}
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
	// every returns n runs of which each k-th is r, the others quick.
	every := func(n, k int, r run) []run {
		out := times(n, q)
		for i := k - 1; i < n; i += k {
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
		{"almost", times(inlineScore-1, q), false},
		{"earned", times(inlineScore, q), true},
		{"a slow first run only delays it", join([]run{s}, times(inlineScore, q)), true},
		{"a preempted run now and then keeps it", join(times(maxScore, q), every(1000, 10, m)), true},
		{"a slow run now and then keeps it", join(times(maxScore, q), every(1000, 40, s)), true},
		{"one longer run in three loses it", join(times(maxScore, q), every(300, 3, m)), false},
		{"always longer", times(100, m), false},
		{"a few slow runs at once lose it", join(times(maxScore, q), times(4, s)), false},
		{"earned again", join(times(maxScore, q), times(4, s), times(inlineScore, q)), true},
		{"called the node", join(times(inlineScore, q), []run{{d: quick, calledOut: true}}, times(100, q)), false},
	} {
		var me method
		for _, r := range c.runs {
			me.observe(r.d, r.calledOut)
		}
		if got := me.inline.Load(); got != c.want {
			t.Errorf("%s: inline = %v (score %d), want %v", c.name, got, me.score, c.want)
		}
	}
}
