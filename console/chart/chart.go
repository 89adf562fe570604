// Package chart draws the console's time-series charts as inline SVG on
// the server: no script, no outside asset, and the numbers are in the
// page (a title per point, the totals in data attributes) so tests and
// screen readers can read them.
package chart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Series is one line. Values line up with Chart.Times; NaN leaves a gap.
type Series struct {
	Name   string
	Class  string // CSS class of the line: s0, s1, ...
	Values []float64
}

// Chart is one chart.
type Chart struct {
	Title  string
	Unit   string
	Times  []int64 // bucket ends, Unix seconds
	Series []Series
	Loc    *time.Location // labels' zone; default time.Local
}

// Geometry of every chart, in SVG user units.
const (
	width, height          = 640, 180
	left, right, top, foot = 56, 12, 24, 24
)

// SVG renders c. Every text is escaped; the numbers are ours.
func SVG(c Chart) template.HTML {
	loc := c.Loc
	if loc == nil {
		loc = time.Local
	}
	var b strings.Builder
	total, peak := 0.0, 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				total += v
				peak = math.Max(peak, v)
			}
		}
	}
	ymax := niceCeil(peak)
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg" data-total="%s" data-points="%d">`,
		width, height, strconv.FormatFloat(total, 'f', -1, 64), len(c.Times))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<text class="chart-title" x="%d" y="14">%s</text>`, left, html.EscapeString(c.Title+unitSuffix(c.Unit)))
	pw, ph := float64(width-left-right), float64(height-top-foot)
	x := func(i int) float64 {
		if len(c.Times) <= 1 {
			return float64(left)
		}
		return float64(left) + pw*float64(i)/float64(len(c.Times)-1)
	}
	y := func(v float64) float64 { return float64(top) + ph*(1-v/ymax) }
	// Grid and y labels: 0, half, max.
	for _, f := range []float64{0, 0.5, 1} {
		yy := y(ymax * f)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, left, yy, width-right, yy)
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-6, yy+4, label(ymax*f))
	}
	// x labels: first, middle, last.
	if n := len(c.Times); n > 0 {
		for _, i := range []int{0, n / 2, n - 1} {
			anchor := "middle"
			switch i {
			case 0:
				anchor = "start"
			case n - 1:
				anchor = "end"
			}
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(i), height-6, anchor,
				timeLabel(c.Times[i], c.Times[n-1]-c.Times[0], loc))
		}
	}
	for _, s := range c.Series {
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, html.EscapeString(s.Class), strings.Join(pts, " "))
			} else if len(pts) == 1 {
				xy := strings.Split(pts[0], ",")
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="2"/>`, html.EscapeString(s.Class), xy[0], xy[1])
			}
			pts = pts[:0]
		}
		for i, v := range s.Values {
			if i >= len(c.Times) {
				break
			}
			if math.IsNaN(v) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
		}
		flush()
	}
	// Legend.
	lx := width - right
	for i := len(c.Series) - 1; i >= 0; i-- {
		s := c.Series[i]
		lx -= 8 + 7*len(s.Name)
		fmt.Fprintf(&b, `<text class="legend %s" x="%d" y="14">%s</text>`, html.EscapeString(s.Class), lx, html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func label(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func timeLabel(t, span int64, loc *time.Location) string {
	tt := time.Unix(t, 0).In(loc)
	if span > 2*86400 {
		return tt.Format("Jan 2")
	}
	return tt.Format("15:04")
}
