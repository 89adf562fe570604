package monitor_test

import (
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/report"
)

// FuzzCollectArg feeds collect's reading of a statistics URL (given as
// text, which SampleFromArg accepts too) into a store row: it never
// panics, and a row it makes of any sample has the store's bounds on
// text and interval, so a sample is refused only for what it lacks.
func FuzzCollectArg(f *testing.F) {
	f.Add("count://10.0.0.7/com.foo.Bar/echo?provider=10.0.0.8:20880&success=3&timestamp=1700000000000")
	f.Add("count://127.0.0.1:20880/I/m?consumer=127.0.0.2&timestamp=5000&interval=60000&node=n&application=a")
	f.Add("count://h/I/m?consumer=c&timestamp=1&interval=99999999999&max.elapsed=3")
	f.Add("count://h/" + strings.Repeat("x", 2000) + "/m?consumer=c&timestamp=1000")
	f.Fuzz(func(t *testing.T, u string) {
		s, err := report.SampleFromArg(u)
		if err != nil {
			return
		}
		r := monitor.RowOf(s)
		for _, v := range []string{r.Application, r.Node, r.Interface, r.Group, r.Version, r.Method, r.Address, r.Consumer} {
			if len(v) > 1024 {
				t.Fatalf("a text field of %d bytes", len(v))
			}
		}
		if r.Interval < 1 || r.Interval > 3600 {
			t.Fatalf("interval %d", r.Interval)
		}
		if r.Calls() != s.Success+s.Failure {
			t.Fatalf("row counts %d calls of %d", r.Calls(), s.Success+s.Failure)
		}
		_ = r.Validate()
	})
}
