package triple

import (
	"time"

	"golang.org/x/net/http2"
)

// abuse tracks, on a connection's reader, the client behaviour that costs
// the server work without carrying calls, and ends the connection with
// GOAWAY ENHANCE_YOUR_CALM when it goes past what clients do:
//
//   - idle chatter: PING, SETTINGS, PRIORITY, empty DATA and unknown
//     frames. One that arrives within idleGap of the previous one, with
//     no response sent in between, is a strike; more than maxStrikes in a
//     row end the connection. gRPC's own ping policy counts the same way
//     (grpc-go resets its strikes whenever it sends data), with a
//     minimum interval of minutes; a second here leaves keepalive and
//     BDP pings alone.
//   - refused streams: a client that goes on opening streams past
//     MaxConcurrentStreams, more than that many in a row.
//   - rapid reset (CVE-2023-44487): once the client opened rapidWindow
//     streams, more than half of them reset by the client before their
//     response ends (Envoy's premature-reset rule). Counts halve every
//     2×rapidWindow streams, so an old connection is judged on recent
//     behaviour. (The handlers still running for reset streams are
//     bounded too: see conn.onReset.)
type abuse struct {
	strikes    int
	lastSent   int64
	lastAt     time.Time
	refusedRun int
	maxRefused int
	window     int
	open       int // streams opened, decayed
	resets     int // of them, reset early by the client
}

const (
	maxStrikes = 100
	idleGap    = time.Second
)

func (a *abuse) init(maxStreams int) {
	a.maxRefused = maxStreams
	a.window = max(2*maxStreams, 100)
}

// idleFrame counts a frame that carries no call; sent is the count of
// frames with responses the connection has sent so far.
func (a *abuse) idleFrame(sent int64) error {
	now := time.Now()
	if sent != a.lastSent || now.Sub(a.lastAt) >= idleGap {
		a.strikes = 0
	} else {
		a.strikes++
	}
	a.lastSent, a.lastAt = sent, now
	if a.strikes > maxStrikes {
		return connError{http2.ErrCodeEnhanceYourCalm, "too many control frames (PING, SETTINGS, empty DATA) without calls"}
	}
	return nil
}

// refused counts a stream refused for MaxConcurrentStreams.
func (a *abuse) refused() error {
	a.refusedRun++
	if a.refusedRun > a.maxRefused {
		return connError{http2.ErrCodeEnhanceYourCalm, "streams opened past SETTINGS_MAX_CONCURRENT_STREAMS"}
	}
	return nil
}

// opened counts a stream that became a call.
func (a *abuse) opened() {
	a.refusedRun = 0
	a.open++
	if a.open >= 2*a.window {
		a.open /= 2
		a.resets /= 2
	}
}

// reset counts a call the client reset before its response ended.
func (a *abuse) reset() error {
	a.resets++
	if a.open >= a.window && 2*a.resets > a.open {
		return connError{http2.ErrCodeEnhanceYourCalm, "rapid reset: most streams reset by the client"}
	}
	return nil
}
