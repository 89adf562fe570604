package cluster

import (
	"fmt"
	"strings"
)

// UnknownNameError is the error for an extension name (load balancer,
// cluster, router) that no table holds. It matches ErrUnknownName.
type UnknownNameError struct {
	// Kind is what was named: "load balancer", "cluster", "router".
	Kind string
	Name string
	// Known are the names that exist, sorted.
	Known []string
	// Hint, if set, ends the message.
	Hint string
}

func (e *UnknownNameError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown %s %q", e.Kind, e.Name)
	if near := closest(e.Name, e.Known); near != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", near)
	}
	fmt.Fprintf(&b, "; known: %s", strings.Join(e.Known, ", "))
	if e.Hint != "" {
		b.WriteString(" " + e.Hint)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnknownName) hold.
func (e *UnknownNameError) Is(target error) bool { return target == ErrUnknownName }

// closest is the known name within two edits of name, "" when none is.
func closest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
