package interop

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/benchcalls"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/transport"
)

var rounds = flag.Int("interop.rounds", 2, "BenchmarkSayHello, BenchmarkTripleGreet: how many times the whole set of targets runs, alternating")

// BenchmarkSayHello calls sayHello("world") on our provider and on a stock
// dubbo-go provider from two load generators, at 1 and 32 concurrent
// callers:
//
//	client=ours     node/transport.Client with one connection per provider
//	                (as Dubbo), in this process: what `dubbo bench` uses
//	client=dubbogo  examples/interop's dgbench, the stock dubbo-go consumer
//	                in a process of its own: what dubbo-go applications send
//
// against
//
//	ours         node/provider + providertest.Greeter, a copy of this test binary
//	dubbogo      examples/interop's dgprovider
//	ours-plugin  the dubbo binary, `run --role=provider` with the greeter handler plugin
//	rawtcp       (client=ours only) a plain TCP echo of a frame the size of
//	             the sayHello request, one connection per caller: the floor
//
// Every server is a separate process on 127.0.0.1; the targets alternate,
// and the whole set runs -interop.rounds times (names of later rounds get
// #01, #02, which benchratio averages). qps, p50_us and p99_us are
// reported, and cpu_us: the CPU time the server's processes (node and
// plugin for ours-plugin) spent per call, from /proc. allocs/op and B/op
// are our client's, in this process.
func BenchmarkSayHello(b *testing.B) {
	dubbogo.Build(b)
	ours := startSelfProvider(b)
	dg := dubbogo.StartProvider(b, dubbogo.ProviderOptions{})
	plugin := startPluginProvider(b, "")
	echo := startEchoServer(b)
	frame := sayHelloFrame(b)

	targets := []struct {
		name, addr string
		pid        int
	}{
		{"ours", ours.Addr, ours.cmd.Process.Pid},
		{"dubbogo", dg.Addr, dg.PID()},
		{"ours-plugin", plugin.Addr, plugin.cmd.Process.Pid},
	}
	clients := make([]*transport.Client, len(targets))
	dgClients := make([]*dubbogo.Bench, len(targets))
	for i, tg := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := transport.Dial(ctx, tg.addr, transport.ClientConfig{Timeout: 5 * time.Second, Logger: quietLogger()})
		cancel()
		if err != nil {
			b.Fatalf("dial %s at %s: %v", tg.name, tg.addr, err)
		}
		b.Cleanup(func() { c.Close() })
		clients[i] = c
		dgClients[i] = dubbogo.StartBench(b, "dubbo://"+tg.addr)
	}

	for range max(1, *rounds) {
		for _, conc := range []int{1, 32} {
			b.Run(fmt.Sprintf("client=ours/c=%d", conc), func(b *testing.B) {
				for i, tg := range targets {
					b.Run(tg.name, func(b *testing.B) { benchCalls(b, conc, clients[i], tg.pid) })
				}
				b.Run("rawtcp", func(b *testing.B) { benchEcho(b, conc, echo.Addr, frame, echo.cmd.Process.Pid) })
			})
		}
		for _, conc := range []int{1, 32} {
			b.Run(fmt.Sprintf("client=dubbogo/c=%d", conc), func(b *testing.B) {
				for i, tg := range targets {
					b.Run(tg.name, func(b *testing.B) { benchDubbogo(b, conc, dgClients[i], tg.pid) })
				}
			})
		}
	}
}

// benchCalls makes b.N sayHello calls from conc goroutines; server is the
// provider's process.
func benchCalls(b *testing.B, conc int, c *transport.Client, server int) {
	inv := sayHello()
	benchcalls.Measure(b, conc, func(ctx context.Context) (string, error) {
		res, err := c.Invoke(ctx, inv)
		if err == nil && res.Value != "Hello, world" {
			err = fmt.Errorf("sayHello(world) = %#v, exception %v", res.Value, res.Exception)
			b.Error(err)
		}
		return "", err
	}, server)
}

// benchDubbogo makes b.N sayHello calls from conc goroutines of the
// dubbo-go consumer dg; server is the provider's process.
func benchDubbogo(b *testing.B, conc int, dg *dubbogo.Bench, server int) {
	cpu := benchcalls.StartCPU(b, server)
	b.ResetTimer()
	r, err := dg.Run(int64(b.N), conc)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if r.Errors > 0 {
		b.Fatalf("%d of %d calls failed, the first with: %s", r.Errors, r.Calls, r.FirstError)
	}
	b.ReportMetric(r.QPS, "qps")
	b.ReportMetric(float64(r.P50us), "p50_us")
	b.ReportMetric(float64(r.P99us), "p99_us")
	cpu.Report(b, r.Calls)
}

// benchEcho makes b.N raw round trips of frame from conc goroutines, each
// on a connection of its own.
func benchEcho(b *testing.B, conc int, addr string, frame []byte, server int) {
	conns := make(chan net.Conn, conc)
	for range conc {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		conns <- conn
	}
	b.SetBytes(int64(len(frame)))
	benchcalls.Measure(b, conc, func(context.Context) (string, error) {
		conn := <-conns // one is free: there are as many as callers
		defer func() { conns <- conn }()
		if _, err := conn.Write(frame); err != nil {
			return "", err
		}
		var buf [512]byte
		_, err := io.ReadFull(conn, buf[:len(frame)])
		return "", err
	}, server)
}

// sayHelloFrame is the request our client sends for sayHello("world").
func sayHelloFrame(b *testing.B) []byte {
	inv := sayHello()
	desc, err := protocol.Descriptor(inv.ParamTypes)
	if err != nil {
		b.Fatal(err)
	}
	frame, err := protocol.NewEncoder(0).AppendRequest(nil, &protocol.Request{
		ID: 1, TwoWay: true, Path: inv.Service, Version: inv.Version, Method: inv.Method,
		ParamDesc: desc, Args: inv.Args,
		Attachments: map[string]any{"path": inv.Service, "interface": inv.Service, "version": inv.Version, "timeout": "5000"},
	})
	if err != nil {
		b.Fatal(err)
	}
	return frame
}

// startEchoServer runs a copy of the test binary as the raw TCP echo.
func startEchoServer(b *testing.B) *process {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=echo")
	return startProcess(b, cmd, "READY ", true)
}

// runEcho echoes every dubbo frame it reads back on the same connection,
// until SIGTERM or until its stdin closes.
func runEcho() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	go func() { // ends when the process exits
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go echoFrames(conn)
		}
	}()
	fmt.Printf("READY %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // SIGTERM ends the process too
	return 0
}

func echoFrames(conn net.Conn) {
	defer conn.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(conn, buf[:16]); err != nil {
			return
		}
		n := 16 + int(binary.BigEndian.Uint32(buf[12:16]))
		if n > len(buf) {
			return
		}
		if _, err := io.ReadFull(conn, buf[16:n]); err != nil {
			return
		}
		if _, err := conn.Write(buf[:n]); err != nil {
			return
		}
	}
}
