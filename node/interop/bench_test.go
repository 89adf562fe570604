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

	"github.com/dubbo-lab/dubbo/internal/benchcalls"
	"github.com/dubbo-lab/dubbo/internal/dubbogo"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/transport"
)

var rounds = flag.Int("interop.rounds", 2, "BenchmarkSayHello: how many times the whole set of targets runs, alternating")

// BenchmarkSayHello calls sayHello("world") on our provider and on a stock
// dubbo-go provider with the same client, node/transport.Client with one
// connection per provider as in Dubbo, at 1 and 32 concurrent callers:
//
//	ours         node/provider + providertest.Greeter, a copy of this test binary
//	dubbogo      examples/interop's dgprovider
//	ours-plugin  the dubbo binary, `run --role=provider` with the greeter handler plugin
//	rawtcp       a plain TCP echo of a frame the size of the sayHello request,
//	             one connection per caller: the floor
//
// Every server is a separate process on 127.0.0.1; the targets alternate,
// and the whole set runs -interop.rounds times (names of later rounds get
// #01, #02, which benchratio averages). qps, p50_us and p99_us are
// reported; allocs/op and B/op are the client's, in this process.
func BenchmarkSayHello(b *testing.B) {
	dubbogo.Build(b)
	ours := startSelfProvider(b)
	dg := dubbogo.StartProvider(b, dubbogo.ProviderOptions{})
	plugin := startPluginProvider(b, "")
	echo := startEchoServer(b)
	frame := sayHelloFrame(b)

	targets := []struct{ name, addr string }{
		{"ours", ours.Addr},
		{"dubbogo", dg.Addr},
		{"ours-plugin", plugin.Addr},
	}
	clients := make([]*transport.Client, len(targets))
	for i, tg := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := transport.Dial(ctx, tg.addr, transport.ClientConfig{Timeout: 5 * time.Second, Logger: quietLogger()})
		cancel()
		if err != nil {
			b.Fatalf("dial %s at %s: %v", tg.name, tg.addr, err)
		}
		b.Cleanup(func() { c.Close() })
		clients[i] = c
	}

	for range max(1, *rounds) {
		for _, conc := range []int{1, 32} {
			b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
				for i, tg := range targets {
					b.Run(tg.name, func(b *testing.B) { benchCalls(b, conc, clients[i]) })
				}
				b.Run("rawtcp", func(b *testing.B) { benchEcho(b, conc, echo, frame) })
			})
		}
	}
}

// benchCalls makes b.N sayHello calls from conc goroutines.
func benchCalls(b *testing.B, conc int, c *transport.Client) {
	inv := sayHello()
	benchcalls.Measure(b, conc, func(ctx context.Context) (string, error) {
		res, err := c.Invoke(ctx, inv)
		if err == nil && res.Value != "Hello, world" {
			err = fmt.Errorf("sayHello(world) = %#v, exception %v", res.Value, res.Exception)
			b.Error(err)
		}
		return "", err
	})
}

// benchEcho makes b.N raw round trips of frame from conc goroutines, each
// on a connection of its own.
func benchEcho(b *testing.B, conc int, addr string, frame []byte) {
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
	})
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
func startEchoServer(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=echo")
	return startProcess(b, cmd, "READY ", true).Addr
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
