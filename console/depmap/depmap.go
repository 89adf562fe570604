// Package depmap draws the console's dependency map as inline SVG on the
// server: no script, no outside asset. The map is layered: each layer is
// a column (the console's are the calling applications, the services
// they call and the applications that provide them), and an edge runs
// from a node to a node of a later column. A node's place in its column
// follows the nodes its edges come from (their mean height: the
// barycentre heuristic of layered drawing), which keeps lines from
// crossing in the common shapes. Edges carry their label at their middle
// and name their ends in data attributes, so tests and screen readers can
// read the map.
package depmap

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
	"unicode/utf8"
)

// Node is a box in a column.
type Node struct {
	ID    string // unique in the map
	Label string
	Sub   string // a second, smaller line; may be ""
	Link  string // where a click on the box goes; may be ""
	Class string // CSS classes of the box, besides "node"
}

// Edge is an arrow from a node to a node of a later column.
type Edge struct {
	From, To string // node IDs
	Label    string // drawn at its middle; may be ""
	Title    string // its tooltip; may be ""
	Class    string // CSS classes, besides "edge"
}

// Map is what SVG draws.
type Map struct {
	Titles []string // a heading per column; may be shorter than Layers
	Layers [][]Node // columns, left to right, each in its preferred order
	Edges  []Edge
}

// Geometry, in SVG user units.
const (
	margin  = 12
	header  = 24   // the column titles' band
	nodeH   = 34   // a box's height
	pitch   = 44   // from a box's top to the next one's
	colGap  = 190  // between columns: room for the edges' labels
	charW   = 7.0  // the width of a character of a label, about
	padX    = 10   // inside a box
	minBoxW = 90.0 // the narrowest column
	maxBoxW = 380.0
)

type placed struct {
	x, y, w float64
	n       Node
}

// SVG draws m. Every text is escaped.
func SVG(m Map) template.HTML {
	rows := 0
	for _, l := range m.Layers {
		rows = max(rows, len(l))
	}
	height := float64(margin + header + rows*pitch + margin)
	at := map[string]*placed{}
	into := map[string][]string{} // node ID -> the IDs its edges come from
	for _, e := range m.Edges {
		into[e.To] = append(into[e.To], e.From)
	}
	var cols [][]*placed
	x := float64(margin)
	for i, layer := range m.Layers {
		w := minBoxW
		if i < len(m.Titles) {
			w = max(w, textW(m.Titles[i], 1)) // upper case, at 11 px
		}
		for _, n := range layer {
			w = max(w, textW(n.Label, 1), textW(n.Sub, 0.85))
		}
		w = min(w, maxBoxW)
		col := orderByBarycentre(layer, into, at)
		top := float64(margin+header) + float64(rows-len(col))*pitch/2
		for i, p := range col {
			p.x, p.y, p.w = x, top+float64(i)*pitch, w
			at[p.n.ID] = p
		}
		cols = append(cols, col)
		x += w + colGap
	}
	width := max(x-colGap+margin, 2*margin)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="depmap" role="img" viewBox="0 0 %.0f %.0f" width="%.0f" xmlns="http://www.w3.org/2000/svg" data-nodes="%d" data-edges="%d">`,
		width, height, width, len(at), len(m.Edges))
	b.WriteString(`<title>Who calls whom</title>`)
	b.WriteString(`<defs>`)
	for _, id := range []string{"depmap-arrow", "depmap-arrow-bad"} {
		fmt.Fprintf(&b, `<marker id="%s" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker>`, id)
	}
	b.WriteString(`</defs>`)
	for i, t := range m.Titles {
		if i < len(cols) && len(cols[i]) > 0 {
			fmt.Fprintf(&b, `<text class="column-title" x="%.1f" y="%d">%s</text>`, cols[i][0].x, margin+12, html.EscapeString(t))
		}
	}
	var labels strings.Builder // drawn over every line
	for _, e := range m.Edges {
		from, to := at[e.From], at[e.To]
		if from == nil || to == nil {
			continue
		}
		x1, y1 := from.x+from.w, from.y+nodeH/2
		x2, y2 := to.x, to.y+nodeH/2
		mx, my := (x1+x2)/2, (y1+y2)/2
		marker := "depmap-arrow"
		if strings.Contains(" "+e.Class+" ", " bad ") {
			marker = "depmap-arrow-bad"
		}
		fmt.Fprintf(&b, `<g class="%s" data-from="%s" data-to="%s" data-label="%s">`, classes("edge", e.Class),
			html.EscapeString(from.n.Label), html.EscapeString(to.n.Label), html.EscapeString(e.Label))
		if e.Title != "" {
			fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(e.Title))
		}
		fmt.Fprintf(&b, `<path d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f" marker-end="url(#%s)"/></g>`, x1, y1, mx, y1, mx, y2, x2, y2, marker)
		if e.Label != "" {
			fmt.Fprintf(&labels, `<text class="%s" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, classes("edge-label", e.Class),
				mx, my-3, html.EscapeString(e.Label))
		}
	}
	b.WriteString(labels.String())
	for _, col := range cols {
		for _, p := range col {
			fmt.Fprintf(&b, `<g class="%s" data-label="%s">`, classes("node", p.n.Class), html.EscapeString(p.n.Label))
			if p.n.Link != "" {
				fmt.Fprintf(&b, `<a href="%s">`, html.EscapeString(p.n.Link))
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" rx="4"/>`, p.x, p.y, p.w, nodeH)
			ly := p.y + nodeH/2 + 4
			if p.n.Sub != "" {
				ly = p.y + 14
				fmt.Fprintf(&b, `<text class="sub" x="%.1f" y="%.1f">%s</text>`, p.x+padX, p.y+28, html.EscapeString(clip(p.n.Sub, p.w, 0.85)))
			}
			fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%.1f">%s</text>`, p.x+padX, ly, html.EscapeString(clip(p.n.Label, p.w, 1)))
			if p.n.Link != "" {
				b.WriteString(`</a>`)
			}
			b.WriteString(`</g>`)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// orderByBarycentre orders a column's nodes by the mean height of the
// placed nodes their edges come from; nodes with none keep their order,
// after the others.
func orderByBarycentre(layer []Node, into map[string][]string, at map[string]*placed) []*placed {
	type keyed struct {
		p      *placed
		centre float64
		has    bool
		i      int
	}
	ks := make([]keyed, len(layer))
	for i, n := range layer {
		k := keyed{p: &placed{n: n}, i: i}
		var sum float64
		var cnt int
		for _, from := range into[n.ID] {
			if p := at[from]; p != nil {
				sum += p.y
				cnt++
			}
		}
		if cnt > 0 {
			k.centre, k.has = sum/float64(cnt), true
		}
		ks[i] = k
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		switch {
		case a.has != b.has:
			if a.has {
				return -1
			}
			return 1
		case a.has:
			return cmp.Or(cmp.Compare(a.centre, b.centre), cmp.Compare(a.i, b.i))
		}
		return cmp.Compare(a.i, b.i)
	})
	out := make([]*placed, len(ks))
	for i, k := range ks {
		out[i] = k.p
	}
	return out
}

func classes(base, more string) string {
	if more == "" {
		return base
	}
	return base + " " + more
}

// textW is the width a box needs for s at the scale of a label.
func textW(s string, scale float64) float64 {
	return float64(utf8.RuneCountInString(s))*charW*scale + 2*padX
}

// clip shortens s with an ellipsis to fit a box w wide.
func clip(s string, w, scale float64) string {
	fit := int((w - 2*padX) / (charW * scale))
	if utf8.RuneCountInString(s) <= fit || fit < 2 {
		return s
	}
	r := []rune(s)
	return string(r[:fit-1]) + "…"
}
