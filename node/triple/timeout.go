package triple

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// parseTimeout reads a grpc-timeout value: at most 8 ASCII digits and a
// unit, H M S m u n (grpc/grpc doc/PROTOCOL-HTTP2.md "Timeout").
func parseTimeout(v string) (time.Duration, error) {
	if len(v) < 2 || len(v) > 9 {
		return 0, fmt.Errorf("grpc-timeout %q: want 1 to 8 digits and a unit", v)
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, fmt.Errorf("grpc-timeout %q: unknown unit %q (want H, M, S, m, u or n)", v, v[len(v)-1])
	}
	var n int64
	for i := 0; i < len(v)-1; i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("grpc-timeout %q: not a number of digits", v)
		}
		n = n*10 + int64(c-'0')
	}
	if n > math.MaxInt64/int64(unit) {
		return time.Duration(math.MaxInt64), nil // 8 digits of hours: no deadline to speak of
	}
	return time.Duration(n) * unit, nil
}

// parseTimeoutMillis reads Triple's HTTP/1.1 Triple-Timeout-Ms header: a
// count of milliseconds, at most 10 digits (as dubbo-go reads it).
func parseTimeoutMillis(v string) (time.Duration, error) {
	if len(v) == 0 || len(v) > 10 {
		return 0, fmt.Errorf("Triple-Timeout-Ms %q: want 1 to 10 digits", v)
	}
	ms, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Triple-Timeout-Ms %q: %w", v, err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
