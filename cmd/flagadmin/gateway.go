package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/gateway"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/metrics"
)

// Environment variables of the gateway (serve --upstream).
const (
	envUpstream        = "FLAGADMIN_UPSTREAM"
	envUpstreamTimeout = "FLAGADMIN_UPSTREAM_TIMEOUT"
	envFollowWait      = "FLAGADMIN_FOLLOW_WAIT"
)

// upstreamRoute is the route label of the metrics of forwarded requests.
const upstreamRoute = "upstream"

// GatewayConfig is the configuration of a server in front of Unleash
// (--upstream); a zero Upstream means the server stands in front of
// nothing.
type GatewayConfig struct {
	// Upstream is the base URL of the Unleash server everything flagadmin
	// does not serve itself is forwarded to; nil for none.
	Upstream *url.URL
	// UpstreamTimeout bounds the wait for the upstream's answer.
	UpstreamTimeout time.Duration
	// FollowWait bounds the wait of a forwarded write for its event in
	// flagadmin's copy.
	FollowWait time.Duration
}

// gatewaySettings are the flags of GatewayConfig.
type gatewaySettings struct {
	upstream, upstreamTimeout, followWait *setting
}

// bindGateway registers the gateway's flags with bind (newSettings's).
func bindGateway(bind func(name, env, def, usage string, unleash unleashReader) *setting) gatewaySettings {
	return gatewaySettings{
		upstream: bind("upstream", envUpstream, "",
			"base `URL` of the Unleash server to stand in front of, http(s)://host:port[/base]: every\n"+
				"request flagadmin does not serve itself (the event searches, the project list, export,\n"+
				"stream, /metrics, /docs, /health) is forwarded to it, Unleash's web UI included", nil),
		upstreamTimeout: bind("upstream-timeout", envUpstreamTimeout, gateway.DefaultTimeout.String(),
			"with --upstream: the `DURATION` to wait for Unleash's answer before answering 504\n"+
				"GatewayTimeout, such as 30s", nil),
		followWait: bind("follow-wait", envFollowWait, gateway.DefaultFollowWait.String(),
			"with --upstream: the `DURATION` a forwarded write (lifecycle complete, service-account\n"+
				"delete) waits for its event to reach flagadmin's copy before it is answered with\n"+
				"X-Flagadmin-Lag, such as 5s", nil),
	}
}

// steps returns the parsing steps of the gateway's settings (nil ones,
// of a command without them, are skipped by config).
func (g gatewaySettings) steps(cfg *GatewayConfig) []struct {
	st    *setting
	parse func(raw string) error
} {
	return []struct {
		st    *setting
		parse func(raw string) error
	}{
		{g.upstream, into(&cfg.Upstream, parseUpstream)},
		{g.upstreamTimeout, into(&cfg.UpstreamTimeout, positiveDuration)},
		{g.followWait, into(&cfg.FollowWait, positiveDuration)},
	}
}

// positiveDuration accepts a Go duration of more than 0 (5s, 500ms).
func positiveDuration(raw string) (time.Duration, error) {
	raw = strings.TrimSpace(raw)
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration; use a number with a unit, such as 5s or 500ms", raw)
	case d <= 0:
		return 0, fmt.Errorf("must be more than 0, such as 5s; got %q", raw)
	}
	return d, nil
}

// parseUpstream accepts an http or https URL with a host and no
// credentials, query or fragment; empty means none.
func parseUpstream(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL; use http(s)://host:port, such as http://unleash:4242", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q is not an http:// or https:// URL, such as http://unleash:4242", raw)
	case u.Host == "":
		return nil, fmt.Errorf("%q has no host; use http(s)://host:port, such as http://unleash:4242", raw)
	case u.User != nil:
		return nil, errors.New("must not hold credentials: each client's own go to Unleash")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%q has a query or fragment; give only the base URL, such as http://unleash:4242", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u, nil
}

// gatewayModule provides what a server in front of Unleash adds: the
// transport to Unleash, the session authenticator of the API, and the
// front door of the main listener (the gateway, or the API alone).
var gatewayModule = fx.Module("gateway", fx.Provide(newUpstreamTransport, newSessions, newEdition, newFrontDoor), fx.Invoke(checkUpstreamAtStart))

// upstreamCheckTimeout bounds the check of the upstream at start.
const upstreamCheckTimeout = 2 * time.Second

// checkUpstreamAtStart asks the upstream once when the server serves (its
// hook runs after the listener's): an upstream that leads back to this
// server fails start-up in one line; one that does not answer is a
// warning (Unleash may start later), one that answers an info line.
func checkUpstreamAtStart(lc fx.Lifecycle, cfg Config, door *frontDoor, _ *Listener, log *slog.Logger) {
	if door.gateway == nil {
		return
	}
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, min(cfg.UpstreamTimeout, upstreamCheckTimeout))
		defer cancel()
		status, err := door.gateway.CheckUpstream(ctx)
		switch {
		case errors.Is(err, gateway.ErrUpstreamIsSelf):
			return cliErrorf("--upstream %s is this flagadmin server (a request forwarded to it comes back): give Unleash's address", cfg.Upstream)
		case err != nil:
			log.Warn("the upstream does not answer yet; requests forwarded to it get 502 or 504 until it does",
				"upstream", cfg.Upstream.String(), "error", err.Error())
		default:
			log.Info("the upstream answers", "upstream", cfg.Upstream.String(), "status", status)
		}
		return nil
	}})
}

// newUpstreamTransport returns the connections to the upstream, shared
// by the proxy and the session checks; nil without --upstream.
func newUpstreamTransport(cfg Config) *http.Transport {
	if cfg.Upstream == nil {
		return nil
	}
	return gateway.NewTransport(cfg.UpstreamTimeout)
}

// newSessions returns the authenticator of Unleash's browser sessions;
// nil without --upstream.
func newSessions(cfg Config, transport *http.Transport, log *slog.Logger) (*gateway.Sessions, error) {
	if cfg.Upstream == nil {
		return nil, nil
	}
	s, err := gateway.NewSessions(gateway.SessionsConfig{Upstream: cfg.Upstream, Transport: transport,
		Timeout: min(cfg.UpstreamTimeout, gateway.DefaultSessionTimeout), Logger: log})
	if err != nil {
		return nil, cliErrorf("--upstream: %v", err)
	}
	return s, nil
}

// newEdition returns what tells which Unleash the upstream is (its
// project list); nil without --upstream.
func newEdition(cfg Config, transport *http.Transport, log *slog.Logger) (*gateway.Edition, error) {
	if cfg.Upstream == nil {
		return nil, nil
	}
	e, err := gateway.NewEdition(cfg.Upstream, transport, min(cfg.UpstreamTimeout, gateway.DefaultSessionTimeout), log)
	if err != nil {
		return nil, cliErrorf("--upstream: %v", err)
	}
	return e, nil
}

var _ httpapi.SessionAuthenticator = (*gateway.Sessions)(nil)

// sessionPort returns s as the API's session port, nil (no interface
// holding a nil pointer) without one.
func sessionPort(s *gateway.Sessions) httpapi.SessionAuthenticator {
	if s == nil {
		return nil
	}
	return s
}

// frontDoor is what the main listener serves.
type frontDoor struct {
	handler http.Handler
	// gateway is the gateway in front of Unleash; nil without --upstream.
	gateway *gateway.Gateway
}

// frontDoorIn are the dependencies of the front door. Waiter is the
// follower's when it provides one (it knows best when its copy holds a
// write); else the server's event feed tells.
type frontDoorIn struct {
	fx.In

	Config    Config
	API       *httpapi.Server
	Metrics   *metrics.Metrics
	Feed      *eventfeed.Feed
	Transport *http.Transport
	Edition   *gateway.Edition
	Logger    *slog.Logger
	Waiter    gateway.Waiter `optional:"true"`
}

// newFrontDoor returns the API alone (serverHandler) without --upstream;
// with it, the gateway: the API's routes and /metrics served locally,
// everything else forwarded, counted in the metrics under the route
// "upstream".
func newFrontDoor(in frontDoorIn) (*frontDoor, error) {
	local := serverHandler(in.Config, in.API, in.Metrics)
	if in.Config.Upstream == nil {
		return &frontDoor{handler: local}, nil
	}
	metricsHere := in.Config.MetricsAddr == ""
	waiter := in.Waiter
	if waiter == nil {
		waiter = gateway.FeedWaiter{Feed: in.Feed}
	}
	gw, err := gateway.New(gateway.Config{
		Upstream: in.Config.Upstream,
		Local:    local,
		Serves: func(r *http.Request) bool {
			return in.API.Serves(r) || metricsHere && r.URL.Path == metricsPath
		},
		WriteError: in.API.WriteError,
		Waiter:     waiter,
		Timeout:    in.Config.UpstreamTimeout,
		FollowWait: in.Config.FollowWait,
		Transport:  in.Transport,
		Logger:     in.Logger,
		RequestID:  httpapi.RequestID,
		Edition:    in.Edition,
	})
	if err != nil {
		return nil, cliErrorf("--upstream: %v", err)
	}
	counted := in.Metrics.Instrument(gw, func(*http.Request) string { return upstreamRoute })
	// Forwarded requests get their id as the API's own (sent upstream
	// too); the API's handler takes the same id for the local ones.
	handler := httpapi.RequestIDs(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gw.Forwards(r) {
			counted.ServeHTTP(w, r)
			return
		}
		gw.ServeHTTP(w, r) // the local handler counts its own
	}))
	in.Logger.Info("in front of Unleash: requests flagadmin does not serve go to the upstream", "upstream", in.Config.Upstream.String())
	return &frontDoor{handler: handler, gateway: gw}, nil
}
