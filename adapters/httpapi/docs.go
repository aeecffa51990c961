package httpapi

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// docsAssets are the files of the /docs page: Swagger UI (docsui/README.md
// names its version and license) and the page that starts it.
//
//go:embed docsui/index.html docsui/init.js docsui/swagger-ui-bundle.js docsui/swagger-ui.css
var docsAssets embed.FS

// docsFiles is docsAssets without the docsui/ prefix.
var docsFiles = func() fs.FS {
	sub, err := fs.Sub(docsAssets, "docsui")
	if err != nil {
		panic(err) // docsui is embedded above
	}
	return sub
}()

// docsPage is the HTML of the docs page.
var docsPage = func() []byte {
	b, err := fs.ReadFile(docsFiles, "index.html")
	if err != nil {
		panic(err) // embedded above
	}
	return b
}()

// docsPolicy keeps the docs page to its own origin: scripts, styles and
// the requests "Try it out" sends all go to this server.
const docsPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'"

// registerDocs serves the interactive documentation of the OpenAPI
// document at /docs and its assets under /docs/, for GET and HEAD.
func (s *Server) registerDocs() {
	files := http.FileServerFS(docsFiles)
	page := func(w http.ResponseWriter, r *http.Request) {
		docsHeaders(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(docsPage))
	}
	s.mux.HandleFunc("/docs", func(w http.ResponseWriter, r *http.Request) {
		if s.readOnly(w, r) {
			page(w, r)
		}
	})
	s.mux.HandleFunc("/docs/", func(w http.ResponseWriter, r *http.Request) {
		if !s.readOnly(w, r) {
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/docs/")
		if name == "" {
			page(w, r) // never a redirect: paths are not redirected
			return
		}
		if !isDocsFile(name) {
			s.notFound(w, r)
			return
		}
		docsHeaders(w)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

// isDocsFile reports whether /docs/name is one of the page's files
// (the page itself is /docs and /docs/, never /docs/index.html).
func isDocsFile(name string) bool {
	if name == "" || strings.Contains(name, "/") || name == "index.html" {
		return false
	}
	_, err := fs.Stat(docsFiles, name)
	return err == nil
}

// docsHeaders sets the security headers of the docs page and its assets.
func docsHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", docsPolicy)
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

// readOnly answers a request other than GET or HEAD with 405
// MethodNotAllowedError and Allow: GET, HEAD, and reports whether r may
// go on.
func (s *Server) readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	s.writeError(w, r, newAPIError(http.StatusMethodNotAllowed, nameMethodNotAllowed,
		"The path "+flagadmin.QuoteInput(r.URL.Path)+" answers only GET and HEAD."))
	return false
}
