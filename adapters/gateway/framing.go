package gateway

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Request smuggling: a request whose length two servers could read two
// ways (Content-Length together with Transfer-Encoding, or Content-Length
// twice) is refused with 400 and the connection closed, before anything
// is forwarded.
//
// Go's server cannot tell the handler: it reads such a request by its
// Transfer-Encoding, removes the Content-Length (RFC 9112 §6.3 allows
// that), and folds identical Content-Length headers into one; conflicting
// ones it refuses itself. The request the proxy then sends is framed
// anew and unambiguous, but the attempt would still reach the upstream.
// So Listener watches the bytes of each connection as Go's server reads
// them, follows the framing of HTTP/1.1 requests (the header section,
// then the body by its Content-Length or its chunks, exactly as Go's
// server delimits them), and notes for each request whether its header
// section names Content-Length with Transfer-Encoding or Content-Length
// more than once. The handler takes the notes in order (checkFraming),
// checking that each belongs to its request (method and target). A
// connection whose bytes the watcher cannot follow (something Go's server
// refuses too, and then closes the connection) has its later requests
// refused: it never guesses.

// Listener returns ln whose connections are watched for requests of
// ambiguous length. Serve HTTP/1 on it (no TLS in between) with
// http.Server.ConnContext set to ConnContext and
// DisableGeneralOptionsHandler set (every request must reach the
// Gateway, in order). A Gateway served otherwise skips the check.
func Listener(ln net.Listener) net.Listener { return framingListener{ln} }

type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, scan: framingScanner{state: stRequestLine}}, nil
}

// ConnContext is the http.Server.ConnContext of a server on Listener: it
// lets the Gateway find the notes of its request's connection.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if wc, ok := c.(*watchedConn); ok {
		return context.WithValue(ctx, connKey{}, wc)
	}
	return ctx
}

type connKey struct{}

// checkFraming returns an error of kind flagadmin.ErrValidation when r's
// connection is watched and r's note says its length is ambiguous, or
// there is no note that belongs to r.
func checkFraming(r *http.Request) error {
	wc, ok := r.Context().Value(connKey{}).(*watchedConn)
	if !ok {
		return nil
	}
	n, ok := wc.take()
	switch {
	case !ok || n.lost || n.method != r.Method || !n.target.holds(r.RequestURI):
		return framingError("the request could not be delimited on its connection; send it again on a new connection")
	case n.ambiguous:
		return framingError("the request has Content-Length together with Transfer-Encoding, or Content-Length more than once: " +
			"its length is ambiguous (request smuggling), so it is refused")
	}
	return nil
}

func framingError(msg string) error {
	return &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Message: msg}}}
}

// watchedConn is a connection whose incoming bytes go through a
// framingScanner as the server reads them.
type watchedConn struct {
	net.Conn
	mu    sync.Mutex
	scan  framingScanner
	notes []note // of requests read, not yet taken
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.scan.feed(p[:n], func(nt note) { c.notes = append(c.notes, nt) })
		c.mu.Unlock()
	}
	return n, err
}

// take returns the note of the oldest request not yet taken.
func (c *watchedConn) take() (note, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.notes) == 0 {
		if c.scan.state == stLost {
			return note{lost: true}, true
		}
		return note{}, false
	}
	n := c.notes[0]
	c.notes = c.notes[1:]
	return n, true
}

// note is what the scanner saw of one request.
type note struct {
	method    string
	target    prefix
	ambiguous bool // Content-Length with Transfer-Encoding, or Content-Length twice
	lost      bool // the scanner lost the framing before this request
}

// prefixSize bounds what a note keeps of a request target.
const prefixSize = 256

// prefix is the start of a text and its length.
type prefix struct {
	head string
	n    int
}

func (p prefix) holds(s string) bool {
	return len(s) == p.n && s[:min(len(s), prefixSize)] == p.head
}

// Scanner states.
const (
	stRequestLine = iota // the next line is a request line
	stHeader             // header field lines until an empty one
	stBody               // remaining bytes of a Content-Length body
	stChunkSize          // a chunk-size line
	stChunkData          // remaining bytes of a chunk
	stChunkEnd           // the CRLF after a chunk's data (crlf bytes seen)
	stTrailer            // trailer field lines until an empty one
	stLost               // the framing could not be followed
)

// Bounds of the scanner, at or above those of Go's server (which refuses
// longer lines and headers, and then closes the connection).
const (
	maxLineHead    = 512     // bytes of a line kept to look at it
	maxLineTail    = 16      // bytes of a line's end kept (a request line's protocol)
	maxHeaderTotal = 4 << 20 // bytes of a header section
	maxChunkLine   = 4096    // bytes of a chunk-size line (Go's limit)
)

// framingScanner follows the framing of the requests on one connection,
// byte by byte as they arrive, the way Go's server delimits them.
type framingScanner struct {
	state     int
	line      []byte // the head of the current line (at most maxLineHead bytes)
	tail      []byte // the last bytes of the current line (at most maxLineTail)
	lineLen   int    // the current line's full length so far
	headerLen int    // bytes of the current header section so far
	remaining int64  // of stBody or stChunkData
	crlf      int    // bytes of the CRLF after a chunk seen so far

	// The current request.
	cur                  note
	http10               bool // HTTP/1.0: Go ignores Transfer-Encoding
	cl, te               int  // Content-Length and Transfer-Encoding lines
	clValue, teValue     string
	lastWasFramingHeader bool // the previous field line was CL or TE (a continuation would change it)
}

// feed follows p, calling push with the note of each request whose
// header section ends in it.
func (s *framingScanner) feed(p []byte, push func(note)) {
	for len(p) > 0 {
		switch s.state {
		case stLost:
			return
		case stBody, stChunkData:
			n := int64(len(p))
			if n > s.remaining {
				n = s.remaining
			}
			s.remaining -= n
			p = p[n:]
			if s.remaining == 0 {
				if s.state == stBody {
					s.state = stRequestLine
				} else {
					s.state, s.crlf = stChunkEnd, 0
				}
			}
		case stChunkEnd:
			want := "\r\n"[s.crlf]
			if p[0] != want {
				s.state = stLost
				return
			}
			p = p[1:]
			if s.crlf++; s.crlf == 2 {
				s.state = stChunkSize
			}
		default: // line states
			i := bytes.IndexByte(p, '\n')
			chunk := p
			if i >= 0 {
				chunk = p[:i]
			}
			if room := maxLineHead - len(s.line); room > 0 {
				s.line = append(s.line, chunk[:min(room, len(chunk))]...)
			}
			s.lineLen += len(chunk)
			s.tail = append(s.tail, chunk[max(0, len(chunk)-maxLineTail):]...)
			s.tail = s.tail[max(0, len(s.tail)-maxLineTail):]
			if s.state != stChunkSize {
				s.headerLen += len(chunk) + 1
				if s.headerLen > maxHeaderTotal {
					s.state = stLost
					return
				}
			} else if s.lineLen > maxChunkLine {
				s.state = stLost
				return
			}
			if i < 0 {
				return
			}
			p = p[i+1:]
			line, full := bytes.TrimSuffix(s.line, []byte("\r")), s.lineLen <= maxLineHead
			s.lineEnded(line, full, push)
			s.line, s.tail, s.lineLen = s.line[:0], s.tail[:0], 0
		}
	}
}

// lineEnded handles a complete line (without its line ending), of which
// line is the head; full tells whether line is all of it.
func (s *framingScanner) lineEnded(line []byte, full bool, push func(note)) {
	switch s.state {
	case stRequestLine:
		s.requestLine(line, full)
	case stHeader:
		switch {
		case len(line) == 0:
			s.headerEnded(push)
		case line[0] == ' ' || line[0] == '\t':
			// A continuation of the previous field's value.
			if s.lastWasFramingHeader {
				s.cur.ambiguous = true
			}
		default:
			s.fieldLine(line, full)
		}
	case stChunkSize:
		size, ok := chunkSize(line)
		switch {
		case !ok || !full:
			s.state = stLost
		case size == 0:
			s.state, s.headerLen = stTrailer, 0
		default:
			s.state, s.remaining = stChunkData, size
		}
	case stTrailer:
		if len(line) == 0 {
			s.state = stRequestLine
		}
	}
}

// requestLine starts a request: METHOD SP TARGET SP PROTO, split as Go's
// server splits it.
func (s *framingScanner) requestLine(line []byte, full bool) {
	s.cur, s.cl, s.te, s.clValue, s.teValue, s.lastWasFramingHeader = note{}, 0, 0, "", "", false
	s.headerLen = s.lineLen + 1
	method, rest, ok := bytes.Cut(line, []byte(" "))
	target, _, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || (full && !ok2) {
		s.state = stLost // Go refuses it (and closes)
		return
	}
	n := len(target)
	tail := bytes.TrimSuffix(s.tail, []byte("\r"))
	if !full {
		// A long line: only the target's head is at hand; its length is
		// the line's but for the method and the protocol at the end.
		sp := bytes.LastIndexByte(tail, ' ')
		if sp < 0 {
			s.state = stLost // no protocol: Go refuses it (and closes)
			return
		}
		n = s.lineLen - (len(s.tail) - len(tail)) - len(method) - 1 - (len(tail) - sp)
	}
	s.cur.method = string(method)
	s.cur.target = prefix{head: string(target[:min(len(target), prefixSize)]), n: n}
	// The protocol ends the line (a target has no spaces).
	s.http10 = bytes.HasSuffix(tail, []byte(" HTTP/1.0"))
	s.state = stHeader
}

// fieldLine notes a Content-Length or Transfer-Encoding field.
func (s *framingScanner) fieldLine(line []byte, full bool) {
	name, value, ok := bytes.Cut(line, []byte(":"))
	s.lastWasFramingHeader = false
	if !ok {
		return // Go refuses it (and closes)
	}
	switch {
	case asciiEqualFold(name, "Content-Length"):
		s.cl++
		s.clValue = string(bytes.Trim(value, " \t"))
	case asciiEqualFold(name, "Transfer-Encoding"):
		s.te++
		s.teValue = string(bytes.Trim(value, " \t"))
	default:
		return
	}
	s.lastWasFramingHeader = true
	if !full {
		s.cur.ambiguous = true // a framing value too long to read
	}
}

// headerEnded pushes the request's note and finds how its body is
// delimited, as Go's server does: Transfer-Encoding chunked (ignored on
// HTTP/1.0), else Content-Length, else no body.
func (s *framingScanner) headerEnded(push func(note)) {
	if (s.cl > 0 && s.te > 0) || s.cl > 1 {
		s.cur.ambiguous = true
	}
	push(s.cur)
	if s.cur.ambiguous {
		s.state = stLost // refused, and the connection closed
		return
	}
	switch {
	case s.te > 0 && !s.http10:
		if !asciiEqualFold([]byte(s.teValue), "chunked") {
			s.state = stLost // Go refuses it (and closes)
			return
		}
		s.state = stChunkSize
	case s.cl == 1:
		n, err := strconv.ParseUint(s.clValue, 10, 63)
		if err != nil || s.clValue == "" || s.clValue[0] == '+' {
			s.state = stLost // Go refuses it (and closes)
			return
		}
		s.state, s.remaining = stBody, int64(n)
		if n == 0 {
			s.state = stRequestLine
		}
	default:
		s.state = stRequestLine
	}
}

// chunkSize parses a chunk-size line as Go's chunked reader does: trailing
// white space removed, an extension (from ';') ignored, then 1 to 16 hex
// digits.
func chunkSize(line []byte) (int64, bool) {
	line = bytes.TrimRight(line, " \t\r\n")
	line, _, _ = bytes.Cut(line, []byte(";"))
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	if n > 1<<62 {
		return 0, false
	}
	return int64(n), true
}

// asciiEqualFold compares b with the ASCII text s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
