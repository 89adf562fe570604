// Package need is the one rule of a test whose real component (Apache
// ZooKeeper, Chromium, Prometheus, protoc, Node, the dubbo-go peers, a
// capability of the machine) is missing: on a developer's machine the test
// is skipped with what is missing and how to get it; in CI (CI=true, set
// by .ci/run) it fails, so that a skipped test never counts as passing.
package need

import (
	"fmt"
	"os"
	"testing"
)

// Missing skips t, or fails it under CI=true, saying what is missing.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (CI=true makes this a failure)")
}
