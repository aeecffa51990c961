package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Which Unleash the upstream is.
//
// Open-source Unleash answers GET /api/admin/projects with its default
// project only, whatever projects its database holds and whatever
// archived says (Unleash Enterprise lists them all): its web UI then reads
// "Projects (1)". In front of it, flagadmin's project list answers the
// same. Which edition the upstream is shows in its GET
// /api/admin/ui-config (versionInfo.current.enterprise is "" for the open
// source), which needs credentials: Edition asks it with those of a
// request for the project list, and keeps the answer.

// unleashDefaultProject is the project open-source Unleash lists.
const unleashDefaultProject = "default"

// projectListPath is the project list's path.
const projectListPath = "/api/admin/projects"

// Intervals of Edition's questions.
const (
	// editionRecheck is how long a known edition is kept before it is
	// asked again (an Unleash upgraded to Enterprise restarts).
	editionRecheck = 10 * time.Minute
	// editionRetry is the least time between questions that failed (the
	// caller's credentials refused, the upstream down).
	editionRetry = 5 * time.Second
	// uiConfigPath is where Unleash tells its version and edition.
	uiConfigPath = "api/admin/ui-config"
	// maxUIConfig bounds the upstream's answer.
	maxUIConfig = 4 << 20
)

// Edition tells whether the upstream is open-source Unleash, for the
// project list served in front of it.
type Edition struct {
	uiConfig *url.URL
	client   *http.Client
	log      *slog.Logger

	mu         sync.Mutex
	asking     bool
	known      bool
	openSource bool
	next       time.Time // when to ask again
}

// NewEdition returns an Edition of upstream, asking through transport
// (nil: NewTransport) within timeout (0: DefaultSessionTimeout).
func NewEdition(upstream *url.URL, transport http.RoundTripper, timeout time.Duration, log *slog.Logger) (*Edition, error) {
	if err := checkUpstream(upstream); err != nil {
		return nil, err
	}
	timeout = positive(timeout, DefaultSessionTimeout)
	if transport == nil {
		transport = NewTransport(timeout)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Edition{uiConfig: upstream.JoinPath(uiConfigPath), log: log, client: &http.Client{Transport: transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// ProjectListOnly returns the project the project list is limited to, as
// the upstream's own: "default" in front of open-source Unleash, "" (no
// limit) in front of Unleash Enterprise or while the edition is unknown.
func (e *Edition) ProjectListOnly() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.known && e.openSource {
		return unleashDefaultProject
	}
	return ""
}

// Learn asks the upstream which edition it is, with r's credentials
// (Authorization, Cookie), unless its answer is recent, a question failed
// within editionRetry, or another request is asking (it does not wait).
func (e *Edition) Learn(r *http.Request) {
	now := time.Now()
	e.mu.Lock()
	if e.asking || now.Before(e.next) {
		e.mu.Unlock()
		return
	}
	e.asking = true
	e.mu.Unlock()
	openSource, err := e.ask(context.WithoutCancel(r.Context()), r)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asking = false
	if err != nil {
		e.next = time.Now().Add(editionRetry)
		e.log.WarnContext(r.Context(), "cannot tell which Unleash the upstream is; the project list lists every project until it can",
			slog.String("error", err.Error()))
		return
	}
	if !e.known || e.openSource != openSource {
		e.log.InfoContext(r.Context(), "the upstream's edition", slog.Bool("open_source", openSource),
			slog.String("project_list", map[bool]string{true: "the default project only, as Unleash's own", false: "every project"}[openSource]))
	}
	e.known, e.openSource, e.next = true, openSource, time.Now().Add(editionRecheck)
}

// uiConfigAnswer is the part of Unleash's ui-config that names its edition.
type uiConfigAnswer struct {
	VersionInfo *struct {
		Current struct {
			Enterprise *string `json:"enterprise"`
		} `json:"current"`
	} `json:"versionInfo"`
}

// ask asks the upstream's ui-config with r's credentials.
func (e *Edition) ask(ctx context.Context, r *http.Request) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.uiConfig.String(), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	for _, h := range []string{"Authorization", "Cookie"} {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, &statusError{resp.StatusCode}
	}
	var a uiConfigAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxUIConfig)).Decode(&a); err != nil || a.VersionInfo == nil || a.VersionInfo.Current.Enterprise == nil {
		return false, errNoEdition
	}
	return *a.VersionInfo.Current.Enterprise == "", nil
}

// statusError is an answer of the upstream that is not 200.
type statusError struct{ status int }

func (e *statusError) Error() string {
	return "the upstream answered " + strconv.Itoa(e.status) + " to GET /" + uiConfigPath
}

var errNoEdition = errors.New("the upstream's GET /" + uiConfigPath + " does not name its edition (versionInfo.current.enterprise)")
