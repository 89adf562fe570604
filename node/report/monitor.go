package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Dubbo's monitor service: MonitorService.collect(URL statistics).
const (
	MonitorService = "org.apache.dubbo.monitor.MonitorService"
	CollectMethod  = "collect"
	// URLClass is the Java class the statistics URL travels as.
	URLClass = "org.apache.dubbo.common.URL"
)

// InvokerSender sends a report as Dubbo's DubboMonitor does: one
// MonitorService.collect(URL) call per sample, through Invoker (the node's
// consumer, or a direct dubbo:// client to monitor.address). Calls of one
// report run Parallel at a time.
type InvokerSender struct {
	Invoker rpc.Invoker
	// Interface is the monitor service; default MonitorService (Dubbo 2.5
	// monitors serve com.alibaba.dubbo.monitor.MonitorService).
	Interface string
	// URLClass is the statistics argument's Java class; default URLClass.
	URLClass       string
	Group, Version string
	// Parallel bounds the calls in flight; default 8.
	Parallel int
}

// Offerer is an Invoker that can say whether a service is registered
// (*consumer.Consumer is one): Offered answers an error matching
// rpc.ErrNoProvider when no provider of it is, nil when one is or it
// cannot tell. A node's consumer lists only the providers it can reach, so
// a monitor killed or restarting finds "no provider" too; Offered tells
// the two apart.
type Offerer interface {
	Offered(ctx context.Context, iface, version, group string) error
}

// Send calls collect for every sample of r; it fails if any call failed,
// with ErrNoMonitor when no monitor is registered: no provider of the
// service, and the Invoker, when it is an Offerer, says none is
// registered. A monitor registered but not reached (no connection) is an
// ordinary failure: it may be restarting.
func (s *InvokerSender) Send(ctx context.Context, r *Report) error {
	iface := cmpOr(s.Interface, MonitorService)
	class := cmpOr(s.URLClass, URLClass)
	sem := make(chan struct{}, max(1, cmpOrInt(s.Parallel, 8)))
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
		first  error
	)
	for _, sample := range r.Samples {
		inv := &rpc.Invocation{
			Service: iface, Group: s.Group, Version: s.Version, Method: CollectMethod,
			ParamTypes: []string{class},
			Args:       []any{URLObject(sample.URL(), class)},
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			failed++
			if first == nil {
				first = ctx.Err()
			}
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := s.Invoker.Invoke(ctx, inv)
			if err == nil && res != nil && res.Exception != nil {
				err = res.Exception
			}
			if err != nil {
				mu.Lock()
				failed++
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if failed == 0 {
		return nil
	}
	err := fmt.Errorf("%s.%s: %d of %d samples not taken: %w", iface, CollectMethod, failed, len(r.Samples), first)
	if errors.Is(first, rpc.ErrNoProvider) && !s.registered(ctx, iface) {
		err = fmt.Errorf("%w: %w", ErrNoMonitor, err)
	}
	return err
}

// registered says whether the registry may list the monitor though the
// Invoker found no provider of it it could reach.
func (s *InvokerSender) registered(ctx context.Context, iface string) bool {
	o, ok := s.Invoker.(Offerer)
	if !ok {
		return false
	}
	return !errors.Is(o.Offered(ctx, iface, s.Version, s.Group), rpc.ErrNoProvider)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cmpOrInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// URLObject renders u as the hessian object Java deserializes into class
// (org.apache.dubbo.common.URL), with Dubbo 2.7's serialized fields:
// protocol, username, password, host, port, path, parameters. (Dubbo 3
// serializes its URL as urlAddress and urlParam instead; URLFromArg reads
// both.) A map with hessian's class key is written as a typed object, so
// no Go type goes into hessian's process-wide registry.
func URLObject(u *url.URL, class string) map[string]any {
	params := u.Params()
	return map[string]any{
		hessian.ClassKey: cmpOr(class, URLClass),
		"protocol":       u.Protocol(),
		"username":       nilIfEmpty(u.Username()),
		"password":       nilIfEmpty(u.Password()),
		"host":           u.Host(),
		"port":           int32(u.Port()),
		"path":           nilIfEmpty(u.Path()),
		"parameters":     params,
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// SampleFromArg reads the argument of a collect call as the monitor's
// decoder hands it over, from any Dubbo node, into a Sample.
func SampleFromArg(v any) (stats.Sample, error) {
	u, err := URLFromArg(v)
	if err != nil {
		return stats.Sample{}, err
	}
	return stats.ParseSample(u)
}

// URLFromArg reads a decoded org.apache.dubbo.common.URL: Dubbo 2.7's form
// (protocol, host, port, path, parameters: what URLObject writes) or Dubbo
// 3's (urlAddress with protocol, host, port, path; urlParam with
// EXTRA_PARAMS or rawParam), as a string-keyed map (an object of an
// unregistered class) or an any-keyed one; a URL string is accepted too.
// Username and password are not kept.
func URLFromArg(v any) (*url.URL, error) {
	switch x := v.(type) {
	case *url.URL:
		return x, nil
	case string:
		return url.Parse(x)
	}
	m, ok := protocol.Fields(v)
	if !ok {
		return nil, fmt.Errorf("statistics url: want a %s object, got %T", URLClass, v)
	}
	addr, params := m, map[string]string{}
	if a, ok := protocol.Fields(m["urlAddress"]); ok { // Dubbo 3
		addr = a
		if p, ok := protocol.Fields(m["urlParam"]); ok {
			extra, _ := protocol.Fields(p["EXTRA_PARAMS"])
			if len(extra) == 0 {
				extra, _ = protocol.Fields(p["extraParams"])
			}
			if err := stringMap(extra, params); err != nil {
				return nil, err
			}
			if raw, _ := p["rawParam"].(string); len(params) == 0 && raw != "" {
				u, err := url.Parse("x://h?" + raw)
				if err != nil {
					return nil, fmt.Errorf("statistics url: rawParam %q: %w", raw, err)
				}
				params = u.Params()
			}
		}
	} else if p, ok := protocol.Fields(m["parameters"]); ok {
		if err := stringMap(p, params); err != nil {
			return nil, err
		}
	} else if m["parameters"] != nil {
		return nil, fmt.Errorf("statistics url: parameters: want a map, got %T", m["parameters"])
	}
	protocol, err := str(addr["protocol"], "protocol")
	if err != nil {
		return nil, err
	}
	host, err := str(addr["host"], "host")
	if err != nil {
		return nil, err
	}
	path, err := str(addr["path"], "path")
	if err != nil {
		return nil, err
	}
	port, err := portOf(addr["port"])
	if err != nil {
		return nil, err
	}
	if protocol == "" {
		return nil, fmt.Errorf("statistics url: no protocol")
	}
	return url.New(protocol, host, port, path, params), nil
}

func stringMap(in map[string]any, out map[string]string) error {
	for k, v := range in {
		s, err := str(v, "parameter "+k)
		if err != nil {
			return err
		}
		out[k] = s
	}
	return nil
}

func str(v any, what string) (string, error) {
	switch s := v.(type) {
	case nil:
		return "", nil
	case string:
		return s, nil
	case int32:
		return strconv.Itoa(int(s)), nil
	case int64:
		return strconv.FormatInt(s, 10), nil
	}
	return "", fmt.Errorf("statistics url: %s: want a string, got %T", what, v)
}

func portOf(v any) (int, error) {
	var n int64
	switch p := v.(type) {
	case nil:
		return 0, nil
	case int32:
		n = int64(p)
	case int64:
		n = p
	case int:
		n = int64(p)
	case float64:
		if p != math.Trunc(p) {
			return 0, fmt.Errorf("statistics url: port %v is not an integer", p)
		}
		n = int64(p)
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return 0, fmt.Errorf("statistics url: port %q is not a number", p)
		}
		n = int64(i)
	default:
		return 0, fmt.Errorf("statistics url: port: want an int, got %T", v)
	}
	if n < 0 || n > 65535 {
		return 0, fmt.Errorf("statistics url: port %d out of range", n)
	}
	return int(n), nil
}
