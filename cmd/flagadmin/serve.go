package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/storecache"
)

var serveCommand = command{
	usage:   "flagadmin [serve] [flags]",
	summary: "Runs the HTTP server of the admin API until SIGINT or SIGTERM, then stops gracefully.",
	about: `On a stop, in-flight requests finish, the database is closed, the exit code is 0.
A request waits for the database at most --db-timeout, then gets 503
ServiceUnavailable with Retry-After; so with a database that stopped answering,
a stop still answers every request it holds and ends within that time.

At start, before listening: the database schema is created or updated; with
--demo, the built-in demo world is loaded into an empty store and its tokens are
printed; with a seed file, that file is loaded into an empty store; the admin
tokens of FLAGADMIN_ADMIN_TOKENS (or INIT_ADMIN_API_TOKENS) are created if
missing. When the store then has no admin token, one is generated and printed
once on stderr as "admin token (shown once): ...".

With --follow postgres://..., the server keeps a copy of a live Unleash and serves
everything from it: on an empty store it first imports the Unleash database, then
follows its events (in order, each once) and its users, projects, flags and tokens
(within seconds); a restart resumes where it stopped. Write operations answer 409
ReadOnlyError: make changes in Unleash. With several servers on one store, one
applies and all serve. GET /health shows the follow state (flagadmin follow status).
Until the copy is loaded, GET /ready and the API answer 503 saying how far the
import is or why it cannot run (a source that cannot be reached is tried again);
a source that is not an Unleash database, or refuses the connection (no such
database, role or password refused), ends start-up with one line.

With --log-key FILE (a key of flagadmin log keygen), the server signs a checkpoint of
the event log (its size and Merkle root) at least every 10 s while the log grows,
and serves it at GET /api/admin/log/checkpoint with proofs beside it (flagadmin
log verify checks them). It keeps the last checkpoint it signed in FILE.checkpoint
(--log-state) and refuses to sign a log that does not extend it (/health says why).
With --retention 90d, events older than that are pruned
in the background, except those of projects under legal hold (flagadmin log hold).

With --webhooks FILE, the server POSTs each event a sink's filter matches to the
sink's URL, signed, in order, retried until answered 2xx (see flagadmin webhooks
status). With several servers on one database, one of them delivers per sink.

Besides the API under /api/admin/, the server answers GET /health (the process
is up), GET /ready (the store is reachable), the OpenAPI documents (/openapi.json,
/openapi.yaml, and OpenAPI 3.0 at /openapi-3.0.json and /openapi-3.0.yaml), the
interactive API documentation at /docs, and the Prometheus metrics at /metrics,
without authentication (with --metrics-addr, /metrics is served only there).

With --upstream URL, flagadmin stands in front of that Unleash server, at the
address clients, SDKs and Unleash's web UI used: it serves the event searches,
the project list, export, stream, /metrics, /docs and /health itself (those
answers carry X-Flagadmin-Source: local, and GET answers an ETag) and forwards
every other request to Unleash as it came. Unleash's browser sessions are
accepted on what flagadmin serves, checked with Unleash. A forwarded lifecycle
complete or service-account delete is answered once flagadmin's copy holds its
event (or after --follow-wait, with X-Flagadmin-Lag). Unleash unreachable: 502
BadGatewayError; no answer within --upstream-timeout: 504 GatewayTimeout.

A bad configuration, an unreachable database or a busy port ends start-up with
one line on stderr and exit code 1.`,
	env: []string{envAddr, envDB, envSeed, envAdminTokens, envLogLevel, envLogFormat, envTokenCache, envResultCache, envDBTimeout, envDBMaxConns, envMaxStreams, envMetricsAddr, envWebhooks, envFollow, envLogKey, envLogState, envRetention,
		envUpstream, envUpstreamTimeout, envFollowWait},
}

// serve parses the serve command's flags and runs the server.
func (c *cli) serve(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin serve")
	s := newSettings(fs, c.getenv, withServe)
	cfg, err := c.parseConfig(fs, s, serveCommand, args)
	if err != nil {
		return err
	}
	return c.runServer(ctx, cfg)
}

// runServer starts the fx app of cfg, waits for SIGINT or SIGTERM (or a
// failure of the server) and stops it gracefully.
func (c *cli) runServer(ctx context.Context, cfg Config) error {
	defer c.setServerPace(cfg)()
	app := fx.New(serveOptions(cfg, c.stderr))
	if err := app.Err(); err != nil {
		return startupError(err)
	}
	// Catch the signals before starting: one that arrives during start-up
	// cancels it, one that arrives later stops the server gracefully.
	sigCtx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	startCtx, cancel := context.WithTimeout(sigCtx, startTimeout)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		if sigCtx.Err() != nil {
			return cliErrorf("interrupted during start-up")
		}
		return startupError(err)
	}
	failed := false
	select {
	case <-sigCtx.Done():
	case sig := <-app.Wait(): // the server failed and asked fx to shut down
		failed = sig.ExitCode != 0
	}
	stopCtx, cancelStop := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancelStop()
	if err := app.Stop(stopCtx); err != nil {
		return cliErrorf("stop: %s", flat(err))
	}
	if failed {
		return cliErrorf("the server stopped unexpectedly (see the log above)")
	}
	return nil
}

// setServerPace gives the process the garbage collector's pace and soft
// memory limit of a server with cfg's result cache
// (storecache.SetServerPace), but for those that GOGC or GOMEMLIMIT set
// (the runtime then follows them; "off" for none), and not at all when the
// store is in memory (memory:): its copy is the heap, and a limit sized for
// the cache, soon below it, would have the collector run without pause (a
// copy of 1,000,000 events, 2.2 GiB: 1.8 ms of CPU a request for a flag's
// events), while a pace of five times the live heap would let it grow to
// ten GiB. It returns what restores the previous pace and limit.
func (c *cli) setServerPace(cfg Config) (restore func()) {
	if cfg.DB == memoryURL {
		return func() {}
	}
	return storecache.SetServerPace(cfg.ResultCacheSize, c.getenv)
}

// startupError reduces an fx start-up error to the message of its cause:
// the *cliError a constructor or hook returned, or else the innermost error.
func startupError(err error) error {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return cliErrorf("start-up took longer than %v", startTimeout)
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return fmt.Errorf("start-up failed: %w", err)
		}
		err = inner
	}
}
