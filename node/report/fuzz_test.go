package report_test

import (
	"testing"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/url"
)

// FuzzSampleFromArg feeds the decoder URL objects of both Java forms built
// from arbitrary parts: it never panics, and what it accepts survives
// URLObject and back.
func FuzzSampleFromArg(f *testing.F) {
	f.Add("count", "10.0.0.7", int64(0), "com.foo.Bar/echo", "provider=10.0.0.8:20880&success=3&timestamp=1", false, "")
	f.Add("count", "127.0.0.1", int64(20880), "I/m", "consumer=127.0.0.2&timestamp=5&interval=60000&node=n", true, "")
	f.Add("count", "h", int64(1), "I/m", "", true, "consumer=c&timestamp=1&max.elapsed=3")
	f.Add("dubbo", "", int64(-1), "", "x", false, "")
	f.Fuzz(func(t *testing.T, protocol, host string, port int64, path, query string, dubbo3 bool, raw string) {
		params := map[any]any{}
		if u, err := url.Parse("x://h?" + query); err == nil {
			for k, v := range u.Params() {
				params[k] = v
			}
		}
		var v map[string]any
		if dubbo3 {
			v = map[string]any{
				hessian.ClassKey: report.URLClass,
				"urlAddress":     map[string]any{"protocol": protocol, "host": host, "port": port, "path": path},
				"urlParam":       map[string]any{"EXTRA_PARAMS": params, "rawParam": raw},
			}
		} else {
			v = map[string]any{hessian.ClassKey: report.URLClass, "protocol": protocol, "host": host,
				"port": int32(port), "path": path, "parameters": params}
		}
		s, err := report.SampleFromArg(v)
		if err != nil {
			return
		}
		again, err := report.SampleFromArg(report.URLObject(s.URL(), ""))
		if err != nil {
			t.Fatalf("accepted %+v, but not its own URL object: %v", s, err)
		}
		if again.ID() != s.ID() || again.Success != s.Success || again.Elapsed != s.Elapsed {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, s)
		}
	})
}
