// Package faultproxy is a TCP proxy for tests that puts faults between a
// client and a server such as a database: it passes bytes through, cuts
// every connection (and refuses new ones), or stalls (keeps connections
// open and accepts new ones, but forwards nothing), the way a frozen or
// unreachable server looks to its clients.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what the proxy does with connections.
type Mode int

// Modes of a Proxy.
const (
	// Pass forwards bytes both ways.
	Pass Mode = iota
	// Stall forwards nothing, in either direction, and accepts new
	// connections without connecting them to the server: a frozen server.
	Stall
	// Cut closes every connection and closes new ones at once: a server
	// that went away.
	Cut
)

// Proxy listens on a local address and forwards each connection to a
// target address, in its current Mode. It is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	changed chan struct{} // closed and replaced on every mode change
	conns   map[net.Conn]struct{}
	served  int // client connections connected to the target
	closed  bool
	wg      sync.WaitGroup
}

// New starts a proxy on 127.0.0.1 (a free port) that forwards to target
// (host:port), in mode Pass.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the host:port clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Set changes the mode. Cut closes every open connection; Pass after Stall
// resumes forwarding on the connections that stalled.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
	if m == Cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// Conns returns the number of open connections, on either side.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Served returns the number of client connections the proxy has connected
// to the target since it started: a client that opened new connections
// after a fault shows here, whether or not any of its requests failed.
func (p *Proxy) Served() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track registers c, or closes it and reports false when the proxy cuts
// or is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Cut {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// state returns the current mode and the channel closed at its next
// change; closed reports a closed proxy.
func (p *Proxy) state() (mode Mode, changed chan struct{}, closed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.changed, p.closed
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !p.track(client) {
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve connects client to the target (also while stalling: the server's
// kernel accepts connections even when the server is frozen) and copies
// both ways until either side ends or the proxy cuts.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(server) {
		if server != nil {
			server.Close()
		}
		return
	}
	defer p.untrack(server)
	p.mu.Lock()
	p.served++
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done
	// One side ended: end the other too.
	client.Close()
	server.Close()
	<-done
}

// copy forwards what src sends to dst. While the proxy stalls it keeps
// reading src, so that it sees src close, but holds the bytes; they are
// sent when the proxy passes again.
func (p *Proxy) copy(dst io.Writer, src io.Reader) {
	chunks := make(chan []byte, 64)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-quit:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var held [][]byte
	for {
		mode, changed, closed := p.state()
		if closed || mode == Cut {
			return
		}
		if mode == Pass {
			for _, b := range held {
				if _, err := dst.Write(b); err != nil {
					return
				}
			}
			held = held[:0]
		}
		select {
		case b, ok := <-chunks:
			if !ok {
				return // src ended (what it sent while stalled is dropped)
			}
			held = append(held, b)
		case <-changed:
		}
	}
}
