package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// followUsage is the help of --follow.
const followUsage = "`URL` of an Unleash PostgreSQL database to follow, postgres://user:pass@host:5432/unleash:\n" +
	"the store (empty, or one that follows this database) becomes its read-only copy, kept\n" +
	"current; write operations answer 409 ReadOnlyError"

// parseFollowURL checks --follow: a postgres:// URL.
func parseFollowURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", fmt.Errorf("%q is not a PostgreSQL URL; Unleash's database is postgres://user:pass@host:5432/unleash", bunstore.RedactURL(raw))
	}
	return raw, nil
}

// checkFollow refuses what does not go with --follow: a world to load
// (the store is Unleash's copy) and the Unleash database as the store.
func (s *settings) checkFollow(cfg Config, set map[string]bool) error {
	_, source, _ := s.lookup(s.follow, set)
	switch {
	case cfg.Demo:
		return cliErrorf("--demo and %s exclude each other: a store that follows Unleash holds Unleash's world only", source)
	case cfg.Seed != "":
		_, seedSource, _ := s.lookup(s.seed, set)
		return cliErrorf("%s and %s exclude each other: a store that follows Unleash holds Unleash's world only", seedSource, source)
	case cfg.Retention > 0:
		_, retSource, _ := s.lookup(s.retention, set)
		return cliErrorf("%s and %s exclude each other: the copy keeps Unleash's event ids, and retention records each pruning in an event of its own", retSource, source)
	case sameDatabase(cfg.DB, cfg.Follow):
		return cliErrorf("%s is the database of --db (%s); the copy goes into another database", source, bunstore.RedactURL(cfg.DB))
	}
	return nil
}

// followModule provides the *unleashimport.Follower of --follow (nil
// without), run from the app's start to its stop.
var followModule = fx.Module("follow", fx.Provide(newFollower))

// newFollower returns the follower of cfg.Follow into the opened store, or
// nil when the server follows nothing. On start it checks the store (a
// store holding anything else than a copy of the source is refused, one
// line), reaches the source once (one that can never be followed as
// configured is refused, one line; one that cannot be reached now is tried
// again by the follower, which reports why) and runs the follower in the
// background: the import, if the store is empty, then following. On stop
// it ends it, releasing its lease.
func newFollower(lc fx.Lifecycle, cfg Config, store flagadmin.Store, e *webhooks.Engine, log *slog.Logger, m *metrics.Metrics) (*unleashimport.Follower, error) {
	if cfg.Follow == "" {
		return nil, nil
	}
	target, ok := store.(unleashimport.FollowStore)
	if !ok {
		return nil, cliErrorf("--follow: the store %s keeps no follow state", bunstore.RedactURL(cfg.DB))
	}
	flog := log.With("component", "follow")
	opts := unleashimport.FollowOptions{Logger: flog}
	if len(cfg.WebhookSinks) > 0 {
		// The sinks are registered before the first event followed after
		// the copy is written: a sink seen for the first time starts at
		// the copy's newest event, and misses none followed after it.
		opts.BeforeApplying = func(ctx context.Context) {
			if err := e.Register(ctx); err != nil {
				log.Warn("webhooks: cannot register the sinks before following on; retrying in the background", "err", flat(err))
			}
		}
	}
	f := unleashimport.NewFollower(cfg.Follow, target, opts)
	registerFollowStats(m, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(start context.Context) error {
			resume, err := f.Check(start)
			if err != nil {
				cancel()
				if errors.Is(err, unleashimport.ErrFollowRefused) {
					return cliErrorf("--follow: %s", flat(err))
				}
				return cliErrorf("--follow: cannot read the store: %s", withCause(err))
			}
			if err := f.CheckSource(start); err != nil {
				cancel()
				return cliErrorf("--follow: %s", flat(err))
			}
			if resume {
				st, _ := target.FollowState(start)
				flog.Info("following: resuming", "source", unleashimport.SourceName(cfg.Follow), "position", st.Position, "holder", f.Holder())
			} else {
				flog.Info("following: starting", "source", unleashimport.SourceName(cfg.Follow), "holder", f.Holder())
			}
			go func() { defer close(done); _ = f.Run(ctx) }() // Run logs why it stops
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
				flog.Info("following: stopped; the follow lease is released")
				return nil
			case <-stop.Done():
				return stop.Err()
			}
		},
	})
	return f, nil
}

// followReporter is what the API reports of the follower: nil (no
// follow state on /health) when the server follows nothing.
func followReporter(f *unleashimport.Follower) interface{ Status() follow.Status } {
	if f == nil {
		return nil
	}
	return f
}

// registerFollowStats exports the follower's figures.
func registerFollowStats(m *metrics.Metrics, f *unleashimport.Follower) {
	m.GaugeFunc("follow_lag_seconds", "Age of the copy of Unleash: seconds since it was last known to equal the source.", nil,
		func() float64 { return f.Status().LagSeconds })
	m.GaugeFunc("follow_lag_events", "Event ids the source has committed that the copy does not hold yet (as last read by the server that applies).", nil,
		func() float64 { return float64(f.Status().LagEvents) })
	m.CounterFunc("follow_applied_total", "Events of the source this server applied to the copy (the import's included).", nil,
		func() float64 { return float64(f.Status().Applied) })
	m.CounterFunc("follow_errors_total", "Failed reads of the source and writes of the store by this server's follower.", nil,
		func() float64 { return float64(f.Status().Errors) })
}

var followStatusCommand = command{
	usage:   "flagadmin follow status [--url URL | --db URL]",
	summary: "Shows how a server follows Unleash (flagadmin serve --follow).",
	about: `It shows the source, the state (importing, following, standby while another server applies, paused while
the source cannot be reached, stopped), the position (the last Unleash event id
the copy holds or knows was never committed), the lag in events and seconds,
the event id delivery waits on while a transaction that may commit it is open,
and which server holds the lease.

With --url (or FLAGADMIN_URL), it asks the server (GET /health, no token needed).
With --db, it reads what the store records (position, last sync, lease); the
lag in events is known only to the server that applies.`,
	env: []string{envURL, envDB},
}

// followCmd runs "flagadmin follow status".
func (c *cli) followCmd(ctx context.Context, args []string) error {
	args, err := soleSubcommand(args, "flagadmin follow", "subcommand", "status", "-h")
	if err != nil {
		return err
	}
	fs := newFlagSet("flagadmin follow status")
	s := newSettings(fs, c.getenv, withDB)
	server := fs.String("url", "", "base `URL` of the server to ask (env "+envURL+")")
	rest, err := c.parse(fs, followStatusCommand, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	if base := c.followServer(fs, *server); base != "" {
		st, err := serverFollowStatus(ctx, base)
		if err != nil {
			return err
		}
		writeFollowStatus(c.stdout, st, time.Now())
		return nil
	}
	cfg, err := s.config(fs)
	if err != nil {
		return err
	}
	return c.storeFollowStatus(ctx, cfg)
}

// followServer returns the server follow status asks: --url, else
// FLAGADMIN_URL unless --db was given; "" to read the store instead.
func (c *cli) followServer(fs *flag.FlagSet, given string) string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if given == "" && !set["db"] {
		return c.getenv(envURL)
	}
	return given
}

// storeFollowStatus prints what the configured store records of following.
func (c *cli) storeFollowStatus(ctx context.Context, cfg Config) error {
	if cfg.DB == memoryURL {
		return cliErrorf("memory: keeps nothing between processes; ask the server with --url")
	}
	store, err := openExisting(ctx, cfg.DB, buildLogger(cfg, c.stderr), false)
	if err != nil {
		return err
	}
	defer store.Close()
	var reader any = store
	fr, ok := reader.(follow.StateReader)
	if !ok {
		return cliErrorf("the store %s keeps no follow state; ask the server with --url", bunstore.RedactURL(cfg.DB))
	}
	fst, err := fr.FollowState(ctx)
	if err != nil {
		return cliErrorf("cannot read the follow state of %s: %s", bunstore.RedactURL(cfg.DB), flat(err))
	}
	if !fst.Following() {
		fmt.Fprintf(c.stdout, "%s follows no Unleash database\n", bunstore.RedactURL(cfg.DB))
		return nil
	}
	writeFollowStatus(c.stdout, storedFollowStatus(fst, time.Now()), time.Now())
	return nil
}

// storedFollowStatus is what a store's follow state tells of following.
func storedFollowStatus(fst follow.State, now time.Time) follow.Status {
	st := follow.Status{Source: fst.Source.URL, State: "recorded in the store", Ready: true, Holder: fst.Lease.Holder,
		Position: fst.Position, Holes: fst.Holes, LagEvents: -1}
	if !fst.Lease.Held(now) {
		st.Holder = ""
	}
	if !fst.SyncedAt.IsZero() {
		t := fst.SyncedAt
		st.SyncedAt = &t
		st.LagSeconds = now.Sub(t).Seconds()
	}
	return st
}

// serverFollowStatus asks the server at base for its follow state.
func serverFollowStatus(ctx context.Context, base string) (follow.Status, error) {
	u, err := url.Parse(strings.TrimRight(base, "/") + "/health")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return follow.Status{}, cliErrorf("--url: %q is not an http(s) URL", base)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return follow.Status{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return follow.Status{}, cliErrorf("cannot reach the server at %s: %s", base, flat(err))
	}
	defer resp.Body.Close()
	var body struct {
		Follow *follow.Status `json:"follow"`
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode == http.StatusOK {
		err = json.Unmarshal(data, &body)
	} else if err == nil {
		err = fmt.Errorf("GET /health answered %s", resp.Status)
	}
	if err != nil {
		return follow.Status{}, cliErrorf("the server at %s did not answer its health: %s", base, flat(err))
	}
	if body.Follow == nil {
		return follow.Status{}, cliErrorf("the server at %s follows no Unleash database (it runs without --follow)", base)
	}
	return *body.Follow, nil
}

// writeFollowStatus prints a follow status for a person.
func writeFollowStatus(w io.Writer, st follow.Status, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state, why := st.State, st.NotLoaded() // why names the reason, if any, when the copy is not loaded
	switch {
	case st.State == follow.Following && st.Applying:
		state += " (this server applies)"
	case st.Reason != "" && why == "":
		state += ": " + st.Reason
	}
	fmt.Fprintf(tw, "source\t%s\n", st.Source)
	fmt.Fprintf(tw, "state\t%s\n", state)
	if why != "" {
		fmt.Fprintf(tw, "copy\tnot loaded yet: %s\n", why)
	} else {
		fmt.Fprintf(tw, "position\tevent id %d (%s never committed in Unleash)\n", st.Position, plural(st.Holes, "id"))
	}
	lag := "-"
	switch {
	case st.State == follow.Paused && st.SyncedAt != nil:
		lag = "unknown events (the source cannot be read), at least " + age(time.Duration(st.LagSeconds*float64(time.Second)))
	case st.LagEvents >= 0 && st.SyncedAt != nil:
		lag = plural(st.LagEvents, "event") + ", " + age(time.Duration(st.LagSeconds*float64(time.Second)))
	case st.SyncedAt != nil:
		lag = age(time.Duration(st.LagSeconds * float64(time.Second)))
	}
	fmt.Fprintf(tw, "lag\t%s\n", lag)
	if st.SyncedAt != nil {
		fmt.Fprintf(tw, "synced\t%s (%s ago)\n", st.SyncedAt.UTC().Format(time.RFC3339), age(now.Sub(*st.SyncedAt)))
	}
	if st.WaitingFor != 0 {
		fmt.Fprintf(tw, "waiting for\tevent id %d: a transaction on the Unleash database may still commit it\n", st.WaitingFor)
	}
	holder := "none"
	if st.Holder != "" {
		holder = st.Holder
	}
	fmt.Fprintf(tw, "applied by\t%s\n", holder)
	if st.State != "recorded in the store" {
		fmt.Fprintf(tw, "this server\t%s applied, %s since it started\n", plural(st.Applied, "event"), plural(st.Errors, "error"))
	}
	tw.Flush()
}
