// Command dgbench is a load generator built on the stock dubbo-go v3.3.0
// consumer: it calls sayHello("world") of org.example.Greeter:1.0.0 over
// the dubbo protocol with hessian2 from a fixed number of goroutines
// sharing one reference, as a dubbo-go application does, until it made -n
// calls or -d passed (whichever comes first), and prints one JSON line on
// stdout, the shape `dubbo bench` prints:
//
//	{"calls":60000,"errors":0,"qps":9876.5,"p50_us":3100,"p99_us":7400,"max_us":21000}
//
// A wrong answer counts as an error. It exits 0 when no call failed, 1
// otherwise, 2 on bad usage. dubbo-go logs go to stderr.
//
//	dgbench -url dubbo://127.0.0.1:20880 -c 32 -d 6s
//
// With -serve it connects once and then makes one run per line it reads on
// stdin, "CALLS CONCURRENCY", printing a line for each, until stdin ends:
// a Go benchmark drives it this way, timing only the calls.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/client"
	_ "dubbo.apache.org/dubbo-go/v3/imports"

	"github.com/dubbo-lab/dubbo/examples/interop/dgrun"
	"github.com/dubbo-lab/dubbo/examples/interop/greeter"
)

// summary is the output line.
type summary struct {
	Calls      int64   `json:"calls"`
	Errors     int64   `json:"errors"`
	QPS        float64 `json:"qps"`
	P50us      int64   `json:"p50_us"`
	P99us      int64   `json:"p99_us"`
	MaxUs      int64   `json:"max_us"`
	FirstError string  `json:"first_error,omitempty"`
}

func main() {
	out := dgrun.TakeStdout()
	var (
		direct   = flag.String("url", "", "provider URL, dubbo://host:port")
		conc     = flag.Int("c", 32, "concurrent callers")
		n        = flag.Int64("n", 0, "calls to make (0 = until -d)")
		dur      = flag.Duration("d", 0, "how long to call (0 = until -n)")
		warm     = flag.Int("warm", 100, "calls made before measuring (connection, pools)")
		version  = flag.String("version", greeter.Version, "service version")
		timeout  = flag.Duration("timeout", 3*time.Second, "per-call timeout (always sent: without it dubbo-go sends timeout=0)")
		serve    = flag.Bool("serve", false, "connect, then run \"CALLS CONCURRENCY\" per stdin line")
		logLevel = flag.String("log-level", "warn", "dubbo-go log level: debug, info, warn, error")
	)
	flag.Parse()
	if *direct == "" || (!*serve && (*conc < 1 || (*n <= 0 && *dur <= 0))) {
		fmt.Fprintln(os.Stderr, "dgbench: want -url, and -serve or -c ≥ 1 with at least one of -n and -d")
		os.Exit(2)
	}
	if *dur <= 0 || *dur > maxRun {
		*dur = maxRun
	}
	conn, err := connect(*direct, *version, *logLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dgbench:", err)
		os.Exit(1)
	}
	for range *warm {
		if err := sayHello(conn, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, "dgbench: warm-up call:", err)
			os.Exit(1)
		}
	}
	enc := json.NewEncoder(out)
	if *serve {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var calls int64
			var c int
			if _, err := fmt.Sscan(sc.Text(), &calls, &c); err != nil || calls < 1 || c < 1 {
				fmt.Fprintf(os.Stderr, "dgbench: want \"CALLS CONCURRENCY\", got %q\n", sc.Text())
				os.Exit(2)
			}
			if err := enc.Encode(run(conn, c, calls, maxRun, *timeout)); err != nil {
				fmt.Fprintln(os.Stderr, "dgbench:", err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	s := run(conn, *conc, *n, *dur, *timeout)
	if err := enc.Encode(s); err != nil {
		fmt.Fprintln(os.Stderr, "dgbench:", err)
		os.Exit(1)
	}
	if s.Errors > 0 {
		os.Exit(1)
	}
}

// maxRun bounds every run in time, whatever the count.
const maxRun = 10 * time.Minute

// run makes the calls from conc goroutines; each keeps its own latencies,
// merged at the end.
func run(conn *client.Connection, conc int, n int64, dur, timeout time.Duration) summary {
	var (
		started  atomic.Int64
		errs     atomic.Int64
		firstErr sync.Once
		s        summary
		wg       sync.WaitGroup
		lat      = make([][]time.Duration, conc)
	)
	stop := time.Now().Add(dur)
	begin := time.Now()
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for (n <= 0 || started.Add(1) <= n) && time.Now().Before(stop) {
				t := time.Now()
				err := sayHello(conn, timeout)
				lat[i] = append(lat[i], time.Since(t))
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { s.FirstError = err.Error() })
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	all := slices.Concat(lat...)
	slices.Sort(all)
	s.Calls = int64(len(all))
	s.Errors = errs.Load()
	if len(all) > 0 {
		s.QPS = float64(len(all)) / elapsed.Seconds()
		s.P50us = all[len(all)/2].Microseconds()
		s.P99us = all[len(all)*99/100].Microseconds()
		s.MaxUs = all[len(all)-1].Microseconds()
	}
	return s
}

// sayHello makes one call and checks its answer. dubbo-go's panics (a
// closed port) come back as errors.
func sayHello(conn *client.Connection, timeout time.Duration) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("dubbo-go panicked: %v", p)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Second)
	defer cancel()
	var reply any
	if err := conn.CallUnary(ctx, []any{"world"}, &reply, "sayHello", client.WithCallRequestTimeout(timeout)); err != nil {
		return err
	}
	if reply != "Hello, world" {
		return fmt.Errorf("sayHello(world) = %#v", reply)
	}
	return nil
}

// connect makes the reference to the provider at direct, as dgconsumer
// does. dubbo-go panics inside Dial when nobody listens there; that becomes
// an error.
func connect(direct, version, logLevel string) (conn *client.Connection, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("dubbo-go panicked while connecting: %v", p)
		}
	}()
	ins, err := dubbo.NewInstance(dubbo.WithName("dgbench"), dubbo.WithRemoteMetadata(),
		dubbo.WithLogger(dgrun.LoggerOptions(logLevel)...))
	if err != nil {
		return nil, fmt.Errorf("new instance: %w", err)
	}
	cli, err := ins.NewClient(client.WithClientProtocolDubbo(), client.WithClientSerialization("hessian2"))
	if err != nil {
		return nil, fmt.Errorf("new client: %w", err)
	}
	return cli.Dial(greeter.Interface, client.WithProtocolDubbo(), client.WithSerialization("hessian2"),
		client.WithVersion(version), client.WithURL(direct), client.WithRetries(0))
}
