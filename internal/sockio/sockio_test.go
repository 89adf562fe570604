package sockio

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// socketPair is a connected pair of Unix stream sockets as net.Conns.
func socketPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conns[i].Close() })
	}
	return conns[0], conns[1]
}

// pipes are two PipeConns joined by a pipe each way.
func pipes(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ar, bw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	br, aw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a, b = NewPipeConn(ar, aw), NewPipeConn(br, bw)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A peer that does not read gets what its socket buffer (or pipe) takes,
// and the writer is not held up.
func TestTryWriteDoesNotBlock(t *testing.T) {
	for _, c := range []struct {
		name  string
		conns func(t *testing.T) (a, b net.Conn)
	}{{"socketpair", socketPair}, {"pipes", pipes}} {
		t.Run(c.name, func(t *testing.T) {
			a, _ := c.conns(t)
			w := New(a)
			b := make([]byte, 64<<20)
			start := time.Now()
			n, err := w.TryWrite(b)
			if err != nil || n <= 0 || n >= len(b) {
				t.Fatalf("TryWrite = %d, %v; want part of %d bytes", n, err, len(b))
			}
			if n2, err := w.TryWrite(b); err != nil || n2 != 0 {
				t.Errorf("TryWrite on a full socket = %d, %v; want 0, nil", n2, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			a.Close()
			if _, err := w.TryWrite(b); err == nil {
				t.Error("TryWrite on a closed connection succeeded")
			}
		})
	}
}

// Read waits for data as net.Conn's Read does, keeps the read deadline,
// and ends with io.EOF; over TCP, a socket pair and pipes.
func TestRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	tcpA, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tcpA.Close()
	tcpB := <-accepted
	if tcpB == nil {
		t.Fatal("accept failed")
	}
	defer tcpB.Close()
	pairA, pairB := socketPair(t)
	pipesA, pipesB := pipes(t)
	pipeA, pipeB := net.Pipe() // no descriptor: the conn's own Read
	defer pipeA.Close()
	defer pipeB.Close()

	for _, c := range []struct {
		name       string
		peer, conn net.Conn
	}{{"tcp", tcpA, tcpB}, {"socketpair", pairA, pairB}, {"pipes", pipesA, pipesB}, {"net.Pipe", pipeA, pipeB}} {
		t.Run(c.name, func(t *testing.T) {
			r := bufio.NewReader(New(c.conn))
			// Nothing sent yet: the deadline ends the wait.
			c.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			_, err := r.ReadByte()
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("read past the deadline: %v, want a timeout", err)
			}
			c.conn.SetReadDeadline(time.Time{})
			// The wait ends when data arrives.
			go func() {
				time.Sleep(20 * time.Millisecond)
				c.peer.Write([]byte("hello\nworld\n"))
				c.peer.Close()
			}()
			for _, want := range []string{"hello\n", "world\n"} {
				if got, err := r.ReadString('\n'); got != want || err != nil {
					t.Fatalf("ReadString = %q, %v; want %q", got, err, want)
				}
			}
			if _, err := r.ReadByte(); err != io.EOF {
				t.Errorf("after the peer closed: %v, want io.EOF", err)
			}
		})
	}
}

// A read or a write costs no allocation: they run once or twice per call
// on each side of the call path.
func TestReadWriteAllocateNothing(t *testing.T) {
	for _, c := range []struct {
		name  string
		conns func(t *testing.T) (a, b net.Conn)
	}{{"socketpair", socketPair}, {"pipes", pipes}} {
		t.Run(c.name, func(t *testing.T) {
			a, b := c.conns(t)
			w, r := New(a), New(b)
			out, in := []byte("frame"), make([]byte, 16)
			allocs := testing.AllocsPerRun(100, func() {
				if n, err := w.TryWrite(out); n != len(out) || err != nil {
					t.Fatalf("TryWrite = %d, %v", n, err)
				}
				if n, err := r.Read(in); n != len(out) || err != nil {
					t.Fatalf("Read = %d, %v", n, err)
				}
			})
			if allocs > 0 {
				t.Errorf("%.1f allocations per write and read, want none", allocs)
			}
		})
	}
}
