package console

import (
	"testing"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// Each service of the registry's list gets its own calls: its consumers'
// reports where they counted calls, else its providers'; a service
// registered at application level (no version) its interface's, when the
// reports name one version only.
func TestWithCalls(t *testing.T) {
	sum := store.Summary{Seconds: 300, Rows: []store.SummaryRow{
		{Interface: "A", Version: "1", Side: "provider", Calls: 90},
		{Interface: "A", Version: "1", Side: "consumer", Calls: 100},
		{Interface: "B", Version: "1", Side: "consumer", Calls: 0},
		{Interface: "B", Version: "1", Side: "provider", Calls: 7},
		{Interface: "C", Version: "2", Side: "provider", Calls: 5},
		{Interface: "D", Version: "1", Side: "provider", Calls: 3},
		{Interface: "E", Version: "1", Side: "provider", Calls: 1},
		{Interface: "E", Version: "2", Side: "provider", Calls: 2},
	}}
	app := catalog.LevelApplication
	for _, c := range []struct {
		name  string
		svcs  []catalog.Service
		calls []int64 // -1: none
		side  []string
	}{
		{"the consumers' count", []catalog.Service{{Interface: "A", Version: "1"}}, []int64{100}, []string{"consumer"}},
		{"the providers' when the consumers counted none", []catalog.Service{{Interface: "B", Version: "1"}}, []int64{7}, []string{"provider"}},
		{"another version's calls are not this one's", []catalog.Service{{Interface: "C", Version: "1", Registration: "interface"}}, []int64{-1}, nil},
		{"application level: the interface's one version", []catalog.Service{{Interface: "D", Registration: app}}, []int64{3}, []string{"provider"}},
		{"application level, two versions reported: neither", []catalog.Service{{Interface: "E", Registration: app}}, []int64{-1}, nil},
		{"two rows of an interface: each its own", []catalog.Service{{Interface: "D", Registration: app}, {Interface: "D", Version: "9"}}, []int64{-1, -1}, nil},
		{"no reports", []catalog.Service{{Interface: "F"}}, []int64{-1}, nil},
	} {
		rows := withCalls(c.svcs, callsOf(sum))
		for i, r := range rows {
			switch {
			case c.calls[i] < 0 && r.Traffic != nil:
				t.Errorf("%s: row %d has %+v, want none", c.name, i, *r.Traffic)
			case c.calls[i] >= 0 && (r.Traffic == nil || r.Traffic.Calls != c.calls[i] || r.Traffic.Side != c.side[i]):
				t.Errorf("%s: row %d has %+v, want %d calls from the %ss", c.name, i, r.Traffic, c.calls[i], c.side[i])
			}
		}
	}
	if got := callsOf(sum).total(Window{}); got.Calls != 100+7+5+3+1+2 || got.CallsPerSecond != 118.0/300 {
		t.Errorf("total %+v: want each service once, 118 calls in 300 s", got)
	}
}
