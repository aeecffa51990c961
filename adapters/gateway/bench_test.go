package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
)

// BenchmarkForwardAsset fetches a static asset through the Gateway (on a
// watched listener, with a JSON log line per request, as cmd/flagadmin
// serves it) and through a bare httputil.ReverseProxy in front of the same
// upstream, over loopback, from parallel clients: the CPU and allocations
// the Gateway adds to the standard library's proxy. Profile it with
// go test -run - -bench ForwardAsset -cpuprofile cpu.out ./adapters/gateway.
func BenchmarkForwardAsset(b *testing.B) {
	for _, size := range []int{4 << 10, 256 << 10, 2 << 20} {
		asset := bytes.Repeat([]byte("console.log('unleash');\n"), size/24+1)[:size]
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			w.Header().Set("Content-Length", strconv.Itoa(len(asset)))
			_, _ = w.Write(asset)
		}))
		b.Cleanup(up.Close)
		upURL, _ := url.Parse(up.URL)
		name := strconv.Itoa(size>>10) + "KiB"
		b.Run(name+"/gateway", func(b *testing.B) {
			e := newEnv(b, up.URL, func(c *Config) {
				c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
			})
			fetchParallel(b, e.url+"/static/app.js", size)
		})
		b.Run(name+"/bare", func(b *testing.B) {
			transport := http.DefaultTransport.(*http.Transport).Clone()
			transport.MaxIdleConnsPerHost, transport.DisableCompression = 512, true
			proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(upURL); pr.SetXForwarded() }, Transport: transport}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: proxy}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Close() })
			fetchParallel(b, "http://"+ln.Addr().String()+"/static/app.js", size)
		})
	}
}

// fetchParallel GETs url from parallel clients b.N times in all, checking
// each answer's size.
func fetchParallel(b *testing.B, url string, size int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	b.Cleanup(client.CloseIdleConnections)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != int64(size) || resp.StatusCode != http.StatusOK {
				b.Errorf("GET %s: %d, %d bytes (%v), want 200 and %d", url, resp.StatusCode, n, err, size)
				return
			}
		}
	})
}
