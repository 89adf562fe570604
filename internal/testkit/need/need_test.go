package need

import (
	"testing"
)

// Outside CI a missing component skips the test; in CI it fails it.
func TestMissing(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			inner := &recorder{TB: t}
			func() {
				defer func() { _ = recover() }() // Skip and Fatal end the goroutine: here a panic
				Missing(inner, "protoc is not installed (apt-get install %s)", "protobuf-compiler")
			}()
			switch {
			case ci == "true" && (!inner.failed || inner.skipped):
				t.Errorf("CI=true: failed %v, skipped %v; want a failure", inner.failed, inner.skipped)
			case ci == "" && (inner.failed || !inner.skipped):
				t.Errorf("no CI: failed %v, skipped %v; want a skip", inner.failed, inner.skipped)
			}
			if inner.msg != "protoc is not installed (apt-get install protobuf-compiler)" && inner.msg != "protoc is not installed (apt-get install protobuf-compiler) (CI=true makes this a failure)" {
				t.Errorf("message %q", inner.msg)
			}
		})
	}
}

// recorder records a Skip or Fatal instead of ending the test.
type recorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.msg = true, args[0].(string)
	panic("fatal")
}

func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, args[0].(string)
	panic("skip")
}
