package stats

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Parameter keys of a statistics URL: Dubbo's MonitorService keys, two of
// ours that make a report recognisable when it is sent again, and the
// response-time histogram (ours; Java's monitor ignores what it does not
// know).
const (
	KeyApplication   = "application"
	KeyInterface     = "interface"
	KeyMethod        = "method"
	KeyGroup         = "group"
	KeyVersion       = "version"
	KeyConsumer      = "consumer" // on a provider's sample: the consumer's IP
	KeyProvider      = "provider" // on a consumer's sample: the provider's host:port
	KeyTimestamp     = "timestamp"
	KeySuccess       = "success"
	KeyFailure       = "failure"
	KeyInput         = "input"
	KeyOutput        = "output"
	KeyElapsed       = "elapsed"
	KeyConcurrent    = "concurrent"
	KeyMaxInput      = "max.input"
	KeyMaxOutput     = "max.output"
	KeyMaxElapsed    = "max.elapsed"
	KeyMaxConcurrent = "max.concurrent"
	// KeyNode is the reporting process's identity (ours; Java nodes omit it).
	KeyNode = "node"
	// KeyInterval is the length of the interval in milliseconds, Dubbo's
	// unit for durations in URLs (ours; Java nodes omit it).
	KeyInterval = "interval"
	// KeyHistogram is the interval's response times in the text form of
	// package histogram (ours; Java and dubbo-go nodes omit it).
	KeyHistogram = "elapsed.histogram"
)

// CountProtocol is the protocol of Dubbo's statistics URLs.
const CountProtocol = "count"

// Sample is one key's statistics over one interval, with the fields of
// Dubbo's statistics URL (see Dubbo 2.7's MonitorFilter and DubboMonitor).
type Sample struct {
	Side        Side
	Application string
	// Host and Port are the reporting node's address (Port 0 on a consumer).
	Host string
	Port int
	// Interface, Group, Version, Method and Peer are the Key.
	Interface, Group, Version, Method string
	Peer                              string

	Success, Failure int64 // calls
	Input, Output    int64 // request and response bytes, summed
	Elapsed          int64 // milliseconds, summed over the calls
	// Concurrent is the average, over the interval's calls, of the calls
	// of this key running when each began.
	Concurrent int64
	// The interval's maxima: of one request's and one response's bytes,
	// one call's milliseconds, and calls running at once.
	MaxInput, MaxOutput, MaxElapsed, MaxConcurrent int64

	// Timestamp is the end of the interval (Java nodes: when they sent it).
	Timestamp time.Time
	// Interval is the length of the interval; 0 when the sender did not say.
	Interval time.Duration
	// Node is the reporting process's identity; "" from a Java node.
	Node string
	// Histogram counts the interval's calls by response time; "" from a
	// node that sends none (Java, dubbo-go).
	Histogram histogram.Sparse
}

func (s Sample) key() Key {
	return Key{Interface: s.Interface, Group: s.Group, Version: s.Version, Method: s.Method, Peer: s.Peer}
}

// SampleID identifies one interval of one key of one reporting node: a
// sample sent again (after a lost answer) has the same ID, so a monitor
// that stores each ID once counts it once. For a Java node, which sends no
// Node, Application and Address stand in for it.
type SampleID struct {
	Node, Application, Address        string
	Side                              Side
	Interface, Group, Version, Method string
	Peer                              string
	Timestamp                         int64 // Unix milliseconds
}

// ID is the sample's identity for deduplication.
func (s Sample) ID() SampleID {
	return SampleID{
		Node: s.Node, Application: s.Application, Address: hostPort(s.Host, s.Port), Side: s.Side,
		Interface: s.Interface, Group: s.Group, Version: s.Version, Method: s.Method, Peer: s.Peer,
		Timestamp: s.Timestamp.UnixMilli(),
	}
}

func hostPort(host string, port int) string {
	if port == 0 {
		return host
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// URL is the sample as Dubbo's statistics URL:
//
//	count://host[:port]/interface/method?application=..&interface=..&method=..
//	  &group=..&version=..&consumer=ip (or &provider=host:port)
//	  &success=..&failure=..&input=..&output=..&elapsed=..&concurrent=..
//	  &max.input=..&max.output=..&max.elapsed=..&max.concurrent=..
//	  &timestamp=<ms>&node=..&interval=<ms>&elapsed.histogram=<µs>:<calls>,..
//
// Empty group, version, application, node and histogram, and a zero
// interval, are left out.
func (s Sample) URL() *url.URL {
	p := make(map[string]string, 20)
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	set(KeyApplication, s.Application)
	set(KeyInterface, s.Interface)
	set(KeyMethod, s.Method)
	set(KeyGroup, s.Group)
	set(KeyVersion, s.Version)
	if s.Side == Consumer {
		p[KeyProvider] = s.Peer
	} else {
		p[KeyConsumer] = s.Peer
	}
	for _, f := range s.numbers() {
		p[f.key] = strconv.FormatInt(*f.v, 10)
	}
	p[KeyTimestamp] = strconv.FormatInt(s.Timestamp.UnixMilli(), 10)
	set(KeyNode, s.Node)
	if s.Interval > 0 { // rounded up: a short last interval is not "no interval"
		p[KeyInterval] = strconv.FormatInt(int64((s.Interval+time.Millisecond-1)/time.Millisecond), 10)
	}
	if h, err := s.Histogram.Counts(); err == nil {
		set(KeyHistogram, h.Text())
	}
	return url.New(CountProtocol, s.Host, s.Port, s.Interface+"/"+s.Method, p)
}

type numberField struct {
	key string
	v   *int64
}

func (s *Sample) numbers() []numberField {
	return []numberField{
		{KeySuccess, &s.Success}, {KeyFailure, &s.Failure},
		{KeyInput, &s.Input}, {KeyOutput, &s.Output},
		{KeyElapsed, &s.Elapsed}, {KeyConcurrent, &s.Concurrent},
		{KeyMaxInput, &s.MaxInput}, {KeyMaxOutput, &s.MaxOutput},
		{KeyMaxElapsed, &s.MaxElapsed}, {KeyMaxConcurrent, &s.MaxConcurrent},
	}
}

// ParseSample reads a statistics URL as any Dubbo node sends it: ours, or
// a Java node's, which has no node, interval or histogram (they stay
// empty). The
// side is told by the consumer (provider side) or provider (consumer side)
// parameter; interface and method fall back to the path. Missing or empty
// numbers are 0, as Dubbo reads them; a number that is not a non-negative
// integer is an error, as is a histogram that package histogram cannot
// read, a URL that is not count://, has no side, no interface or method,
// or no timestamp.
func ParseSample(u *url.URL) (Sample, error) {
	if u.Protocol() != CountProtocol {
		return Sample{}, fmt.Errorf("statistics url %s: protocol %q, want %s", u, u.Protocol(), CountProtocol)
	}
	s := Sample{
		Application: u.Param(KeyApplication),
		Host:        u.Host(),
		Port:        u.Port(),
		Interface:   u.Param(KeyInterface),
		Method:      u.Param(KeyMethod),
		Group:       u.Param(KeyGroup),
		Version:     u.Param(KeyVersion),
		Node:        u.Param(KeyNode),
	}
	switch c, p := u.HasParam(KeyConsumer), u.HasParam(KeyProvider); {
	case c && !p:
		s.Side, s.Peer = Provider, u.Param(KeyConsumer)
	case p && !c:
		s.Side, s.Peer = Consumer, u.Param(KeyProvider)
	default:
		return Sample{}, fmt.Errorf("statistics url %s: want exactly one of the %s and %s parameters", u, KeyConsumer, KeyProvider)
	}
	if path := u.Path(); s.Interface == "" || s.Method == "" {
		if i := strings.LastIndexByte(path, '/'); i > 0 {
			if s.Interface == "" {
				s.Interface = path[:i]
			}
			if s.Method == "" {
				s.Method = path[i+1:]
			}
		}
	}
	if s.Interface == "" || s.Method == "" {
		return Sample{}, fmt.Errorf("statistics url %s: no interface or method", u)
	}
	// Taken from the path, they may hold what a parameter cannot: the
	// sample would not read back the same from its own URL.
	if strings.ContainsAny(s.Interface+s.Method, "&=") {
		return Sample{}, fmt.Errorf("statistics url %s: interface %q or method %q has a '&' or '='", u, s.Interface, s.Method)
	}
	for _, f := range s.numbers() {
		n, err := count(u, f.key)
		if err != nil {
			return Sample{}, err
		}
		*f.v = n
	}
	if !u.HasParam(KeyTimestamp) {
		return Sample{}, fmt.Errorf("statistics url %s: no %s", u, KeyTimestamp)
	}
	ts, err := count(u, KeyTimestamp)
	if err != nil {
		return Sample{}, err
	}
	s.Timestamp = time.UnixMilli(ts)
	iv, err := count(u, KeyInterval)
	if err != nil {
		return Sample{}, err
	}
	s.Interval = time.Duration(iv) * time.Millisecond
	if v := u.Param(KeyHistogram); v != "" {
		h, err := histogram.ParseText(v)
		if err != nil {
			return Sample{}, fmt.Errorf("statistics url %s: %s: %w", u, KeyHistogram, err)
		}
		s.Histogram = h.Sparse()
	}
	return s, nil
}

// count reads a non-negative integer parameter; absent or empty is 0.
func count(u *url.URL, key string) (int64, error) {
	v := strings.TrimSpace(u.Param(key))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("statistics url %s: %s=%q is not a non-negative integer", u, key, v)
	}
	if key == KeyInterval && n > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, fmt.Errorf("statistics url %s: %s=%q is too long", u, key, v)
	}
	return n, nil
}
