package fastpath

import "time"

// epoch anchors the stamps. time.Since reads the monotonic clock, so they
// survive wall-clock jumps.
var epoch = time.Now()

// MonoNow is the time as nanoseconds since the process's epoch: a stamp an
// atomic.Int64 holds, as a connection's last read or write does, on the
// call path where a time.Time and its lock would cost.
func MonoNow() int64 { return int64(time.Since(epoch)) }

// Mono is t as a stamp of MonoNow's clock.
func Mono(t time.Time) int64 { return int64(t.Sub(epoch)) }
