package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestStreamingAnswersFlushedAsTheyArrive: an SSE answer and a chunked
// one of unknown length reach the client piece by piece while the
// upstream is still writing.
func TestStreamingAnswersFlushedAsTheyArrive(t *testing.T) {
	for _, contentType := range []string{"text/event-stream", "application/octet-stream"} {
		t.Run(contentType, func(t *testing.T) {
			next := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", contentType)
				rc := http.NewResponseController(w)
				for i := 1; i <= 3; i++ {
					fmt.Fprintf(w, "data: %d\n\n", i)
					if err := rc.Flush(); err != nil {
						return
					}
					select {
					case <-next:
					case <-r.Context().Done():
						return
					}
				}
			}, true)
			e := newEnv(t, up.URL, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/api/streaming", nil)
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatalf("no answer (its headers were not flushed?): %v", err)
			}
			defer resp.Body.Close()
			if resp.Header.Get("Content-Type") != contentType || resp.ContentLength != -1 {
				t.Errorf("Content-Type %q, length %d; want %s of unknown length", resp.Header.Get("Content-Type"), resp.ContentLength, contentType)
			}
			br := bufio.NewReader(resp.Body)
			for i := 1; i <= 3; i++ {
				// The upstream waits for next before it writes more: this
				// line can only arrive if the gateway flushed it.
				line := readLineWithin(t, br, 10*time.Second)
				if line != "data: "+strconv.Itoa(i)+"\n" {
					t.Fatalf("got %q, want data: %d", line, i)
				}
				readLineWithin(t, br, 10*time.Second)
				next <- struct{}{}
			}
		})
	}
}

// readLineWithin reads a line, failing the test after d.
func readLineWithin(t *testing.T, br *bufio.Reader, d time.Duration) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := br.ReadString('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading a line: %v", r.err)
		}
		return r.line
	case <-time.After(d):
		t.Fatalf("no line within %v: the answer was not flushed", d)
	}
	return ""
}

// bodySize is the size of the large bodies: 100 MB each way.
const bodySize = 100 << 20

// TestLargeBodiesInConstantMemory: 100 MB to the upstream (chunked, as
// it streams) and 100 MB back pass through the gateway while the heap of
// the process (client, gateway and upstream together) grows by a few
// MiB, and the gateway allocates far less than it moves.
func TestLargeBodiesInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 200 MB; skipped with -short")
	}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/upload":
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, n)
		case "/download":
			w.Header().Set("Content-Length", strconv.Itoa(bodySize))
			_, _ = io.Copy(w, io.LimitReader(pattern{}, bodySize))
		}
	}, false)
	e := newEnv(t, up.URL, nil)

	watch := newHeapWatch()
	defer watch.stop()

	req, err := http.NewRequest(http.MethodPost, e.url+"/upload", io.NopCloser(io.LimitReader(pattern{}, bodySize)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != strconv.Itoa(bodySize) {
		t.Fatalf("upload: the upstream got %s bytes, want %d", got, bodySize)
	}

	resp, err = e.client.Get(e.url + "/download")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != bodySize {
		t.Fatalf("download: got %d bytes (%v), want %d", n, err, bodySize)
	}

	peak, allocated := watch.stop()
	t.Logf("200 MB moved: heap grew by at most %.1f MiB, %.1f MiB allocated", float64(peak)/(1<<20), float64(allocated)/(1<<20))
	if peak > 16<<20 {
		t.Errorf("the heap grew by %d MiB while moving 200 MB; want a few MiB", peak>>20)
	}
	if allocated > 16<<20 {
		t.Errorf("%d MiB allocated while moving 200 MB; want far less than the bytes moved", allocated>>20)
	}
}

// pattern is an endless reader of the bytes a..z.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a' + byte(i%26)
	}
	return len(p), nil
}

// heapWatch samples the heap (live and not yet swept objects) until
// stopped, and reports its largest growth over the start and the bytes
// allocated meanwhile.
type heapWatch struct {
	once              sync.Once
	done              chan struct{}
	finished          chan struct{}
	base, peak        uint64
	startAlloc, alloc uint64
}

func newHeapWatch() *heapWatch {
	runtime.GC()
	w := &heapWatch{done: make(chan struct{}), finished: make(chan struct{})}
	w.base = heapBytes()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.startAlloc = ms.TotalAlloc
	go func() {
		defer close(w.finished)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if h := heapBytes(); h > w.base && h-w.base > w.peak {
				w.peak = h - w.base
			}
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *heapWatch) stop() (peak, allocated uint64) {
	w.once.Do(func() {
		close(w.done)
		<-w.finished
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.alloc = ms.TotalAlloc - w.startAlloc
	})
	return w.peak, w.alloc
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
