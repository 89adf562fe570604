package transport

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/dubbo-lab/dubbo/node/protocol"
)

// parallelism sets RunParallel to about n goroutines.
func parallelism(b *testing.B, n int) {
	b.SetParallelism(max(1, n/runtime.GOMAXPROCS(0)))
}

// BenchmarkRoundTrip is a sayHello call over one client connection.
func BenchmarkRoundTrip(b *testing.B) {
	for _, p := range []int{1, 32} {
		b.Run(parName(p), func(b *testing.B) {
			s := startServer(b, "", greeter, ServerConfig{})
			c := dial(b, s, ClientConfig{})
			b.ReportAllocs()
			b.ResetTimer()
			if p == 1 {
				inv := hello("world")
				for i := 0; i < b.N; i++ {
					if _, err := c.Invoke(context.Background(), inv); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			parallelism(b, p)
			b.RunParallel(func(pb *testing.PB) {
				inv := hello("world")
				for pb.Next() {
					if _, err := c.Invoke(context.Background(), inv); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkRawTCP is the floor: a plain echo of a frame the size of the
// sayHello request over loopback, one connection per caller.
func BenchmarkRawTCP(b *testing.B) {
	req, err := requestFor(hello("world"), DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	frame, err := protocol.NewEncoder(0).AppendRequest(nil, req)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when ln closes
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go echo(conn) // ends when the benchmark closes the connection
		}
	}()
	for _, p := range []int{1, 32} {
		b.Run(parName(p), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			run := func(pb func() bool) {
				conn, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer conn.Close()
				buf := make([]byte, len(frame))
				for pb() {
					if _, err := conn.Write(frame); err != nil {
						b.Error(err)
						return
					}
					if _, err := io.ReadFull(conn, buf); err != nil {
						b.Error(err)
						return
					}
				}
			}
			if p == 1 {
				i := 0
				run(func() bool { i++; return i <= b.N })
				return
			}
			parallelism(b, p)
			b.RunParallel(func(pb *testing.PB) { run(pb.Next) })
		})
	}
}

func echo(conn net.Conn) {
	defer conn.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(conn, buf[:16]); err != nil {
			return
		}
		n := 16 + int(binary.BigEndian.Uint32(buf[12:16]))
		if _, err := io.ReadFull(conn, buf[16:n]); err != nil {
			return
		}
		if _, err := conn.Write(buf[:n]); err != nil {
			return
		}
	}
}

func parName(p int) string {
	if p == 1 {
		return "p1"
	}
	return "p32"
}
