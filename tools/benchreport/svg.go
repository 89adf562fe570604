package main

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Bar is one value of a chart.
type Bar struct {
	Target string
	Value  float64
}

// Group is a row of bars under one label (one benchmark case).
type Group struct {
	Label string
	Bars  []Bar
}

// BarChart is a horizontal grouped bar chart: a group per benchmark case,
// a bar per target, every bar labelled with its value.
type BarChart struct {
	Title  string
	Unit   string
	Groups []Group
}

// Geometry, in SVG user units.
const (
	chartWidth = 720
	labelWidth = 230 // group labels, right-aligned
	valueWidth = 80  // room for the value after the longest bar
	barHeight  = 14
	barGap     = 2
	groupGap   = 10
	titleSpace = 28
	legendRow  = 18
)

// palette colours targets in the order the report meets them; ours are
// the blues, the peers the oranges and greys.
var palette = map[string]string{
	"ours": "#1f5fa8", "embedded": "#1f5fa8", "inprocess": "#1f5fa8",
	"ours-plugin": "#5b9bd5", "plugin": "#5b9bd5",
	"dubbogo": "#e07b24", "apache": "#e07b24",
	"rawtcp": "#8c8c8c", "floor": "#8c8c8c",
	"": "#1f5fa8",
}

func colour(target string) string {
	if c, ok := palette[target]; ok {
		return c
	}
	return "#6a4c93"
}

// SVG draws c as a standalone SVG document. Every text is escaped; a
// <title> on each bar names it and its value for readers without sight.
func (c BarChart) SVG() string {
	peak := 0.0
	var legend []string
	rows := 0
	for _, g := range c.Groups {
		for _, b := range g.Bars {
			peak = math.Max(peak, b.Value)
			if !slices.Contains(legend, b.Target) {
				legend = append(legend, b.Target)
			}
		}
		rows += len(g.Bars)
	}
	if peak == 0 {
		peak = 1
	}
	plot := float64(chartWidth - labelWidth - valueWidth)
	height := titleSpace + legendRow + rows*(barHeight+barGap) + len(c.Groups)*groupGap + 8

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 %d %d" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n",
		chartWidth, height, chartWidth, height)
	title := c.Title
	if c.Unit != "" {
		title += " (" + c.Unit + ")"
	}
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartWidth, height)
	fmt.Fprintf(&b, `<text x="8" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", esc(title))
	x := 8.0
	for _, t := range legend {
		name := targetName(t)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="10" height="10" fill="%s"/><text x="%.0f" y="%d">%s</text>`+"\n",
			x, titleSpace-4, colour(t), x+14, titleSpace+5, esc(name))
		x += 24 + 7*float64(len(name))
	}
	y := titleSpace + legendRow
	for _, g := range c.Groups {
		top := y
		for _, bar := range g.Bars {
			w := plot * bar.Value / peak
			if bar.Value > 0 && w < 1 {
				w = 1 // a value too small to see still shows
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %s %s</title></rect>`,
				labelWidth, y, w, barHeight, colour(bar.Target), esc(g.Label), esc(targetName(bar.Target)), num(bar.Value), esc(c.Unit))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(labelWidth)+w+4, y+barHeight-3, num(bar.Value))
			y += barHeight + barGap
		}
		mid := (top + y - barGap) / 2
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-6, mid+4, esc(g.Label))
		y += groupGap
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/>`+"\n", labelWidth, titleSpace+legendRow-4, labelWidth, y-groupGap+2)
	b.WriteString("</svg>\n")
	return b.String()
}

// esc escapes s for XML text and attributes; a character XML cannot hold
// at all (a control character in a benchmark's name) becomes U+FFFD.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
