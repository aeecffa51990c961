// Package httpapi serves the admin API of flagadmin over HTTP with Huma v2
// on the standard library's ServeMux: the five operations of Unleash's admin
// API it implements, the export of the event log and, given a feed, its live
// stream, with the errors, authentication and limits docs/api.md describes,
// the OpenAPI 3.1 document at /openapi.json and /openapi.yaml (3.0 at /openapi-3.0.json
// and /openapi-3.0.yaml), its interactive documentation at /docs (Swagger
// UI, embedded), and the operational endpoints /health and /ready.
//
// The package is a transport only: handlers authenticate through the
// Service, call it with the raw parameters, and map its error kinds to
// responses in one place (toAPIError). Every rule lives in flagadmin.
//
// Huma keeps its error constructor in a package variable (huma.NewError);
// New replaces it, once per process, so Huma's own errors have this API's
// error body. Other Huma APIs in the same process get that body too.
package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes int64 = 1 << 20

// DefaultMaxHeaderBytes is the limit of a request's line and headers when
// Config.MaxHeaderBytes is 0. An http.Server serving Handler should set its
// MaxHeaderBytes above it (ServerMaxHeaderBytes), so that this API answers
// a request over it with a JSON 400 before Go's server answers a plain-text 431.
const DefaultMaxHeaderBytes int64 = 1 << 20

// ServerMaxHeaderBytes is the http.Server.MaxHeaderBytes that goes with
// DefaultMaxHeaderBytes: twice it, so requests between the two get this
// API's 400 and only larger ones Go's own 431.
const ServerMaxHeaderBytes = 2 * int(DefaultMaxHeaderBytes)

// DefaultBodyReadTimeout is the time a request body may take to arrive
// when Config.BodyReadTimeout is 0 (Huma's default).
const DefaultBodyReadTimeout = 5 * time.Second

// readyTimeout bounds the store ping of GET /ready.
const readyTimeout = 2 * time.Second

// Config configures a Server. The zero value is usable.
type Config struct {
	// Logger receives the access log (one line per request) and the causes
	// of server errors. Nil discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies; larger ones get 413
	// ContentTooLarge. 0 means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// BodyReadTimeout bounds the reading of a request body; one that stops
	// arriving gets 408 RequestTimeout. 0 means DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; larger ones get
	// 400 BadDataError. 0 means DefaultMaxHeaderBytes (1 MiB).
	MaxHeaderBytes int64
	// Version is the version shown in the OpenAPI document; "" means "dev".
	Version string
	// StorageTimeout is the storage deadline of a request: its context
	// ends this long after the request arrives, before authentication, so
	// that every store call the request makes (the token check included,
	// and the shared reads it waits for) ends by then; the request then
	// gets 503 ServiceUnavailable with Retry-After. 0 means no deadline.
	// A store may bound each of its operations too (bunstore.WithTimeout);
	// this bounds them all together.
	StorageTimeout time.Duration
	// BodyCache, when not nil, keeps the encoded project list (whose body
	// is megabytes at 10,000 projects) between requests; see BodyCache.
	// Nil streams the list as it encodes it, in bounded memory.
	BodyCache BodyCache
	// Feed is the source of the live stream (GET /api/admin/events/stream,
	// such as an eventfeed.Feed); nil leaves the route out.
	Feed flagadmin.EventFeed
	// MaxStreams bounds the live streams held at once; beyond it a new one
	// gets 503 ServiceUnavailable. 0 means DefaultMaxStreams (1000).
	MaxStreams int
	// StreamKeepAlive is the longest a stream stays silent before a
	// keep-alive comment. 0 means DefaultStreamKeepAlive (15 s).
	StreamKeepAlive time.Duration
	// StreamTokenCheck is how often a stream re-checks its token. 0 means
	// DefaultStreamTokenCheck (5 s).
	StreamTokenCheck time.Duration
	// Follow, when the server follows an Unleash database, reports on its
	// follower: GET /health shows its state, and GET /ready answers 503
	// until the store holds the copy. Nil for a server that follows nothing.
	Follow FollowReporter
	// Sessions, when not nil, authenticates a request to /api/ that has no
	// Authorization header by its browser session, such
	// as gateway.Sessions in front of Unleash. Nil: such a request is 401.
	Sessions SessionAuthenticator
	// Log is the verifiable log the server serves (GET /api/admin/log/...),
	// over the same flagadmin.Service. Nil: the log's routes answer as a
	// server that keeps none (404, after the permission check).
	Log *vlog.Service
	// LogSigner, when the server signs the log's checkpoints, reports
	// whether it still does: GET /health shows it. Nil for none.
	LogSigner LogSigner
	// ProjectListOnly, when not nil, may limit the project list to one
	// project, the one it returns when not empty, active, whatever archived
	// says: in front of open-source Unleash, whose project list is its
	// default project only (gateway.Edition.ProjectListOnly).
	ProjectListOnly func() string
}

// BodyCache keeps encoded response bodies between requests. It is the
// port of a cache at the edge, such as storecache.Bodies.
type BodyCache interface {
	// Load returns the body stored under key if it is still the answer
	// build would give for ctx, else build's answer, which it may store.
	// key names the route, its parameters and who is asking as far as the
	// answer depends on it; the cache is responsible for the rest (the
	// data read and the time), so build must read through ctx, the context
	// it is given. The bytes returned may be shared and must not be
	// changed.
	Load(ctx context.Context, key string, build func(ctx context.Context) ([]byte, error)) ([]byte, error)
}

// Server is the HTTP transport of a flagadmin.Service.
type Server struct {
	svc       *flagadmin.Service
	vlog      *vlog.Service
	log       *slog.Logger
	maxBody   int64
	maxHeader int64
	bodyRead  time.Duration
	// storageTimeout is Config.StorageTimeout.
	storageTimeout time.Duration
	mux            *http.ServeMux
	api            huma.API
	handler        http.Handler
	bodies         BodyCache // nil when off
	follow         FollowReporter
	sessions       SessionAuthenticator
	logSigner      LogSigner
	projectsOnly   func() string

	// The live streams (stream.go).
	feed                  flagadmin.EventFeed
	maxStreams            int
	keepAlive, tokenCheck time.Duration
	streams               atomic.Int64
	sseBlocks             *sseBlocks
	// streamsCtx ends with endStreams.
	streamsCtx context.Context
	endStreams context.CancelFunc
}

// New returns a Server for svc with every route registered.
func New(svc *flagadmin.Service, cfg Config) *Server {
	installErrorModel() // before the first huma.Register
	s := &Server{svc: svc, vlog: cfg.Log, log: cfg.Logger, maxBody: cfg.MaxBodyBytes, maxHeader: cfg.MaxHeaderBytes,
		bodyRead: cfg.BodyReadTimeout, storageTimeout: max(cfg.StorageTimeout, 0), mux: http.NewServeMux(), bodies: cfg.BodyCache,
		follow: cfg.Follow, sessions: cfg.Sessions, logSigner: cfg.LogSigner, projectsOnly: cfg.ProjectListOnly}
	if s.vlog == nil {
		s.vlog = vlog.NewService(svc, vlog.Config{})
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.maxHeader <= 0 {
		s.maxHeader = DefaultMaxHeaderBytes
	}
	if s.bodyRead <= 0 {
		s.bodyRead = DefaultBodyReadTimeout
	}
	s.feed, s.maxStreams, s.keepAlive, s.tokenCheck = cfg.Feed, cfg.MaxStreams, cfg.StreamKeepAlive, cfg.StreamTokenCheck
	if s.maxStreams <= 0 {
		s.maxStreams = DefaultMaxStreams
	}
	if s.keepAlive <= 0 {
		s.keepAlive = DefaultStreamKeepAlive
	}
	if s.tokenCheck <= 0 {
		s.tokenCheck = DefaultStreamTokenCheck
	}
	s.streamsCtx, s.endStreams = context.WithCancel(context.Background())
	s.sseBlocks = newSSEBlocks()
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	s.api = humago.New(s.mux, apiConfig(version, newRegistry(), s.feed != nil))

	s.registerLifecycle()
	s.registerEvents()
	s.registerExport()
	if s.feed != nil {
		s.registerStream()
	}
	s.registerProjects()
	s.registerServiceAccounts()
	s.registerLog()

	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /ready", s.ready)
	s.registerDocs()
	s.mux.HandleFunc("/", s.notFound)

	s.handler = s.observe(s.recoverPanics(s.storageDeadline(s.authenticate(s.limitRequest(s.etag(http.HandlerFunc(s.route)))))))
	return s
}

// Handler returns the complete HTTP handler: the admin API under
// /api/admin/, the OpenAPI document, /health and /ready, wrapped in the
// access log, request id, panic recovery, storage deadline, authentication,
// the limits of headers and body, and the ETag of complete GET answers.
func (s *Server) Handler() http.Handler { return s.handler }

// API returns the Huma API, for its OpenAPI document
// (API().OpenAPI()). Its adapter serves the routes without the middleware
// of Handler, so operations reached through it answer 401.
func (s *Server) API() huma.API { return s.api }

// ready answers 200 when the store answers a ping (and, on a server that
// follows Unleash, holds the copy), else 503 ServiceUnavailable. A copy not
// loaded yet is answered at once, without the ping: the import's
// transaction may hold the store.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.answerNotLoaded(w) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.svc.Ping(ctx); err != nil {
		s.writeError(w, r, unavailable{err})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// unavailable marks any failed ping as ErrUnavailable, keeping its cause.
type unavailable struct{ cause error }

func (u unavailable) Error() string   { return "ping: " + u.cause.Error() }
func (u unavailable) Unwrap() []error { return []error{flagadmin.ErrUnavailable, u.cause} }

// route serves r with the mux, except a path that is not in canonical
// form (//, /./, /../, a trailing /.): ServeMux would redirect it with an
// HTML body; it is no route, so 404 NotFoundError as JSON.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if !canonicalPath(r.URL.Path) {
		s.notFound(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// canonicalPath reports whether ServeMux serves p without redirecting: p
// is rooted and path.Clean leaves it unchanged, but for a trailing slash.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// routePattern returns the pattern of the route that serves r, "" for none.
func (s *Server) routePattern(r *http.Request) string {
	if !canonicalPath(r.URL.Path) {
		return ""
	}
	_, pattern := s.mux.Handler(r)
	return pattern
}

// Route returns the template of the route that serves r, without its
// method: for an operation, its path as the OpenAPI document writes it
// (/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete);
// else the path of /health, /ready, an OpenAPI document or the docs page.
// It returns "" when no route serves r (a 404), so that a label made from
// it never holds a client's path.
func (s *Server) Route(r *http.Request) string {
	p := s.routePattern(r)
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:] // "GET /path"
	}
	if p == "/" {
		return ""
	}
	return p
}

// Serves reports whether the API answers r with a route of its own: an
// operation, an OpenAPI document, /health, /ready, or a GET or HEAD of the
// docs page or one of its files. It is false for what the API would answer
// 404 or 405 (an unknown path, a method a path does not serve), so that a
// gateway in front of another server (--upstream) passes those on.
func (s *Server) Serves(r *http.Request) bool {
	switch p := s.routePattern(r); p {
	case "", "/":
		return false
	case "/docs", "/docs/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return false
		}
		name := strings.TrimPrefix(r.URL.Path, "/docs/")
		return p == "/docs" || name == "" || isDocsFile(name)
	}
	return true
}

// notFound answers every path no route matches with 404 NotFoundError,
// naming the methods the path supports when it exists under another one.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	quoted := flagadmin.QuoteInput(r.URL.Path)
	msg := "The path " + quoted + " does not exist."
	if allowed := s.allowedMethods(r); len(allowed) > 0 {
		msg = "The path " + quoted + " does not support " + flagadmin.QuoteInput(r.Method) + "; use " + strings.Join(allowed, " or ") + "."
	}
	s.writeError(w, r, newAPIError(http.StatusNotFound, nameNotFound, msg))
}

// allowedMethods returns the methods a route serves for r's path.
func (s *Server) allowedMethods(r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if pattern := s.routePattern(probe); pattern != "" && pattern != "/" {
			out = append(out, m)
		}
	}
	return out
}
