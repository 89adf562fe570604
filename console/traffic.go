package console

import (
	"context"
	"html/template"
	"math"

	"github.com/dubbo-lab/dubbo/console/chart"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// ServiceTraffic is a service's calls over one chart range, on one side:
// the buckets its charts draw.
type ServiceTraffic struct {
	Range    string         `json:"range"`
	Side     string         `json:"side"`
	Step     int64          `json:"step"` // seconds per bucket
	Buckets  []store.Bucket `json:"buckets"`
	Calls    int64          `json:"calls"`
	Failures int64          `json:"failures"`
	Error    string         `json:"error,omitempty"`
}

// serviceTraffic reads the buckets of iface over the range named rng
// (default 15m) on side (default consumer).
func (c *Console) serviceTraffic(ctx context.Context, iface, rng, side string) ServiceTraffic {
	r := Ranges[0]
	for _, x := range Ranges {
		if x.Name == rng {
			r = x
		}
	}
	if side != store.SideProvider {
		side = store.SideConsumer
	}
	t := ServiceTraffic{Range: r.Name, Side: side, Step: r.Step, Buckets: []store.Bucket{}}
	if c.opts.Stats == nil {
		t.Error = errNoStats.msg
		return t
	}
	now := c.opts.Now().Unix()
	bs, err := c.opts.Stats.Series(ctx, store.SeriesQuery{Interface: iface, Side: side, From: now - r.Seconds + 1, To: now, Step: r.Step})
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.Buckets = bs
	for _, b := range bs {
		t.Calls += b.Calls
		t.Failures += b.Failure
	}
	return t
}

// Charts are a service's traffic drawn: calls/s, failures/s and latency
// (average, max).
type Charts struct {
	Calls template.HTML
	Fail  template.HTML
	Time  template.HTML
}

func charts(t ServiceTraffic) Charts {
	bs := t.Buckets
	times := make([]int64, len(bs))
	calls, fails, avg, peak := make([]float64, len(bs)), make([]float64, len(bs)), make([]float64, len(bs)), make([]float64, len(bs))
	for i, b := range bs {
		times[i] = b.Time
		calls[i] = float64(b.Calls) / float64(t.Step)
		fails[i] = float64(b.Failure) / float64(t.Step)
		if b.Calls > 0 {
			avg[i] = float64(b.ElapsedMs) / float64(b.Calls)
			peak[i] = float64(b.MaxElapsedMs)
		} else {
			avg[i], peak[i] = math.NaN(), math.NaN()
		}
	}
	return Charts{
		Calls: chart.SVG(chart.Chart{Title: "Calls", Unit: "per second", Times: times,
			Series: []chart.Series{{Name: "calls/s", Class: "s0", Values: calls}}}),
		Fail: chart.SVG(chart.Chart{Title: "Failures", Unit: "per second", Times: times,
			Series: []chart.Series{{Name: "failures/s", Class: "s2", Values: fails}}}),
		Time: chart.SVG(chart.Chart{Title: "Latency", Unit: "ms", Times: times,
			Series: []chart.Series{{Name: "avg", Class: "s0", Values: avg}, {Name: "max", Class: "s1", Values: peak}}}),
	}
}
