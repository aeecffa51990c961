package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with itself until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func newProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends a line and reads the answer, waiting at most wait.
func roundTrip(c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return readLine(c, r, wait)
}

func readLine(c net.Conn, r *bufio.Reader, wait time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(wait))
	got, err := r.ReadString('\n')
	return got, err
}

func TestPassForwards(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if got, err := roundTrip(c, r, "hello", time.Second); err != nil || got != "hello\n" {
		t.Fatalf("got %q, %v; want the echo", got, err)
	}
}

func TestStallHoldsBytesAndKeepsConnectionsOpen(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "before", time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Stall)
	_, err := roundTrip(c, r, "held", 200*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("while stalled: got %v, want no answer (a read timeout), the connection open", err)
	}
	// A new connection is accepted but gets nothing either.
	c2, r2 := dial(t, p)
	if _, err := roundTrip(c2, r2, "new", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection while stalled: got %v, want no answer", err)
	}
	p.Set(Pass)
	if got, err := readLine(c, r, time.Second); err != nil || got != "held\n" {
		t.Fatalf("after the stall: got %q, %v; want the held line", got, err)
	}
	if got, err := readLine(c2, r2, time.Second); err != nil || got != "new\n" {
		t.Fatalf("new connection after the stall: got %q, %v; want its line", got, err)
	}
}

func TestStallSeesClientsLeave(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "x", time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Stall)
	c.Write([]byte("never answered\n"))
	c.Close()
	deadline := time.Now().Add(2 * time.Second)
	for p.Conns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open after the client left during a stall", p.Conns())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCutClosesAndRefuses(t *testing.T) {
	p := newProxy(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "x", time.Second); err != nil {
		t.Fatal(err)
	}
	if n := p.Served(); n != 1 {
		t.Fatalf("served %d connections, want 1", n)
	}
	p.Set(Cut)
	if _, err := readLine(c, r, time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("open connection after a cut: got %v, want it closed", err)
	}
	c2, r2 := dial(t, p)
	if _, err := roundTrip(c2, r2, "y", time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection during a cut: got %v, want it closed", err)
	}
	p.Set(Pass)
	c3, r3 := dial(t, p)
	if got, err := roundTrip(c3, r3, "back", time.Second); err != nil || got != "back\n" {
		t.Fatalf("after the cut: got %q, %v; want the echo", got, err)
	}
	if n := p.Served(); n != 2 {
		t.Fatalf("served %d connections, want 2: the one before the cut and the one after, none during it", n)
	}
}
