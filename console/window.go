package console

import (
	"strconv"
	"strings"
	"time"
)

// Range is a preset time range the pages offer.
type Range struct {
	Name    string
	Seconds int64
	Step    int64 // the charts' bucket length
}

// Ranges are the presets: 15 min, 1 h, 24 h and 30 days.
var Ranges = []Range{
	{"15m", 15 * 60, 60},
	{"1h", 3600, 60},
	{"24h", 86400, 600},
	{"30d", 30 * 86400, 6 * 3600},
}

// Window is the time a page's figures cover: a preset range ending now,
// or a custom from–to.
type Window struct {
	Range string `json:"range"` // a preset's name, "custom", or "recent" (the last five complete minutes)
	From  int64  `json:"from"`  // Unix seconds: the first second covered
	To    int64  `json:"to"`    // and the last
	Step  int64  `json:"step"`  // the charts' bucket length, seconds
}

const customRange = "custom"

// maxWindow bounds a custom window: a year, beyond the store's 30 days
// of rollups.
const maxWindow = 366 * 86400

// maxBuckets is the most buckets a custom window's charts draw.
const maxBuckets = 240

// steps are the bucket lengths a custom window picks from: the shortest
// that draws at most maxBuckets.
var steps = []int64{60, 120, 300, 600, 900, 1800, 3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 86400}

// recentRange names the window recent returns.
const recentRange = "recent"

// recent is the last five complete minutes: the window the lists rank
// services and processes by.
func recent(now time.Time) Window {
	to := now.Unix() / 60 * 60
	return Window{Range: recentRange, From: to - 5*60 + 1, To: to, Step: 60}
}

// windowOf is the window a request asks for: from= and to= (Unix seconds,
// or a local time as a datetime-local field sends it, 2006-01-02T15:04)
// for a custom one (to defaults to now), else the preset range= (default
// 15m) ending now. A window that reaches back further than raw (the
// store's RawRetention; 0: no store) has a step of whole hours: rows that
// old are hourly, and shorter buckets would draw each hour as a spike.
func windowOf(now time.Time, raw time.Duration, rng, from, to string) (Window, error) {
	w, err := askedWindow(now, rng, from, to)
	if err == nil && raw > 0 && w.From <= now.Unix()-int64(raw/time.Second) && w.Step < 3600 {
		w.Step = 3600 // steps of an hour or more are whole hours
	}
	return w, err
}

// askedWindow is the window the parameters name, at the step that draws
// it best.
func askedWindow(now time.Time, rng, from, to string) (Window, error) {
	n := now.Unix()
	if from == "" && to == "" {
		if rng == "" {
			rng = Ranges[0].Name
		}
		for _, r := range Ranges {
			if r.Name == rng {
				return Window{Range: r.Name, From: n - r.Seconds + 1, To: n, Step: r.Step}, nil
			}
		}
		names := make([]string, len(Ranges))
		for i, r := range Ranges {
			names[i] = r.Name
		}
		return Window{}, badRequest("range %q is not one of %s; or give from= and to=", rng, strings.Join(names, ", "))
	}
	if from == "" {
		return Window{}, badRequest("to= needs from=")
	}
	f, err := parseTime("from", from, now)
	if err != nil {
		return Window{}, err
	}
	t := n
	if to != "" {
		if t, err = parseTime("to", to, now); err != nil {
			return Window{}, err
		}
	}
	switch {
	case f >= t:
		return Window{}, badRequest("from %s is not before to %s", from, to)
	case t-f > maxWindow:
		return Window{}, badRequest("from %s to %s is longer than %d days", from, to, maxWindow/86400)
	}
	w := Window{Range: customRange, From: f, To: t, Step: steps[len(steps)-1]}
	for _, s := range steps {
		if (t-f+s-1)/s <= maxBuckets {
			w.Step = s
			break
		}
	}
	return w, nil
}

// localLayouts are the forms of a datetime-local field's value.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05"}

// parseTime reads a time parameter: Unix seconds, or a local time in the
// zone of now.
func parseTime(name, v string, now time.Time) (int64, error) {
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 {
		return s, nil
	}
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, v, now.Location()); err == nil && t.Unix() > 0 {
			return t.Unix(), nil
		}
	}
	return 0, badRequest("%s=%q is neither Unix seconds nor a local time like 2006-01-02T15:04", name, v)
}

// localInput is a Unix time as a datetime-local field shows it, in the
// zone parseTime reads it in (the console's clock's, local time).
func localInput(unix int64) string { return time.Unix(unix, 0).Format(localLayouts[0]) }

// Seconds is the window's length.
func (w Window) Seconds() int64 { return w.To - w.From + 1 }
