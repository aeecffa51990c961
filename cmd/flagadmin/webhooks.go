package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/adapters/webhooks"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// webhooksModule provides the *webhooks.Engine of the configured sinks (one
// with no sinks when none are configured, for metrics to read all the
// same): its sinks registered before the HTTP server serves, delivery
// started after it and stopped before it.
var webhooksModule = fx.Module("webhooks",
	fx.Provide(newWebhookEngine, fx.Annotate(registerWebhookSinks, fx.ResultTags(`group:"beforeServe"`))),
	fx.Invoke(startWebhooks),
)

// newWebhookEngine returns the delivery engine of cfg's sinks over the
// opened store (not the cached one: delivery reads the event log as it is
// stored).
func newWebhookEngine(cfg Config, store flagadmin.Store, log *slog.Logger, m *metrics.Metrics) (*webhooks.Engine, error) {
	ws, ok := store.(webhooks.Store)
	if !ok && len(cfg.WebhookSinks) > 0 {
		return nil, cliErrorf("--webhooks: this store keeps no webhook delivery state")
	}
	e, err := webhooks.New(ws, cfg.WebhookSinks, webhooks.Options{Logger: log.With("component", "webhooks")})
	if err != nil {
		return nil, cliErrorf("--webhooks: %s", flat(err))
	}
	if len(cfg.WebhookSinks) > 0 {
		registerWebhookStats(m, e)
	}
	return e, nil
}

// registerWebhookSinks is the step of start-up that registers the sinks
// once the store is prepared (seed, demo world) and before the server
// serves: a sink seen for the first time starts after the newest event
// then, and gets every event written through the server. A server that
// follows Unleash registers them before the follower writes its first
// event after the copy (newFollower), or when delivery starts
// (startWebhooks), whichever comes first.
func registerWebhookSinks(cfg Config, e *webhooks.Engine, follower *unleashimport.Follower, log *slog.Logger) beforeServe {
	return func(ctx context.Context) error {
		if follower != nil || len(cfg.WebhookSinks) == 0 {
			return nil
		}
		if err := e.Register(ctx); err != nil {
			log.Warn("webhooks: cannot register the sinks before serving; retrying in the background", "err", flat(err))
		}
		return nil
	}
}

// startWebhooks starts delivery after the HTTP server (the listener's hook
// runs first) and stops it before; stop releases the leases the engine
// holds. On a server that follows Unleash, delivery starts once the store
// holds the copy: a sink seen for the first time starts after the newest
// event then, not before the imported history.
func startWebhooks(lc fx.Lifecycle, cfg Config, e *webhooks.Engine, follower *unleashimport.Follower, log *slog.Logger, _ *Listener) {
	if len(cfg.WebhookSinks) == 0 {
		return
	}
	start := func(ctx context.Context) error {
		log.Info("webhooks: delivering", "sinks", len(cfg.WebhookSinks), "holder", e.Holder())
		return e.Start(ctx)
	}
	if follower == nil {
		lc.Append(fx.Hook{
			OnStart: start,
			OnStop: func(ctx context.Context) error {
				err := e.Stop(ctx)
				if err == nil {
					log.Info("webhooks: stopped; leases released")
				}
				return err
			},
		})
		return
	}
	waitCtx, cancel := context.WithCancel(context.Background())
	started := make(chan bool, 1)
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				for !follower.Status().Ready {
					select {
					case <-waitCtx.Done():
						started <- false
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
				started <- start(waitCtx) == nil
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			cancel()
			if !<-started {
				return nil
			}
			err := e.Stop(ctx)
			if err == nil {
				log.Info("webhooks: stopped; leases released")
			}
			return err
		},
	})
}

// loadWebhooks reads the webhook configuration file at path, if any.
func loadWebhooks(path string) (string, []flagadmin.WebhookSink, error) {
	path = strings.TrimSpace(path)
	if path == "" {
		return "", nil, nil
	}
	sinks, err := webhooks.LoadSinks(path)
	return path, sinks, err
}

var webhooksStatusCommand = command{
	usage:   "flagadmin webhooks status [flags]",
	summary: "Shows the delivery state of each webhook sink, as stored in the database.",
	about: `For each sink: the position (the id of the last event delivered), the lag (the events after it, up to
100,000, and the age of the oldest), the events delivered, the failed attempts at
the current event with the last error, and which server holds the sink's lease and
until when. With --webhooks, the lag counts the events of each sink's filter and
configured sinks no server has started yet are listed too; without it, the lag
counts every event after the position.`,
	env: []string{envDB, envWebhooks, envLogLevel, envLogFormat},
}

// lagCountLimit bounds the events the status command counts per sink.
const lagCountLimit = 100000

func (c *cli) webhooks(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return cliErrorf("flagadmin webhooks needs a subcommand: status (see flagadmin webhooks --help)")
	}
	if isHelpFlag(args[0]) {
		args = []string{"status", "--help"}
	}
	if args[0] != "status" {
		return cliErrorf("unknown subcommand %q of flagadmin webhooks; the only one is status", args[0])
	}
	fs := newFlagSet("flagadmin webhooks status")
	s := newSettings(fs, c.getenv, withDB|withWebhooks)
	rest, err := c.parse(fs, webhooksStatusCommand, args[1:])
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	cfg, err := s.config(fs)
	if err != nil {
		return err
	}
	if cfg.DB == memoryURL {
		return cliErrorf("memory: keeps no webhook state between processes; give the server's --db")
	}
	store, err := openExisting(ctx, cfg.DB, buildLogger(cfg, c.stderr), false)
	if err != nil {
		return err
	}
	defer store.Close()
	statuses, err := webhooks.Status(ctx, store, cfg.WebhookSinks, lagCountLimit)
	if err != nil {
		return cliErrorf("cannot read the webhook state of %s: %s (is its schema migrated? flagadmin migrate)", bunstore.RedactURL(cfg.DB), flat(err))
	}
	if len(statuses) == 0 {
		fmt.Fprintln(c.stdout, "no webhook sinks: none configured, none in the database")
		return nil
	}
	writeStatuses(c.stdout, statuses, time.Now())
	return nil
}

// writeStatuses prints one row per sink.
func writeStatuses(w interface{ Write([]byte) (int, error) }, statuses []webhooks.SinkStatus, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SINK\tPOSITION\tLAG\tOLDEST PENDING\tDELIVERED\tATTEMPTS\tLAST ERROR\tLEASE")
	for _, st := range statuses {
		if !st.Registered {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\tnot started: no server has delivered for it yet\n", st.Name)
			continue
		}
		lag := strconv.FormatInt(st.LagEvents, 10)
		if st.LagAtLeast {
			lag = "≥" + lag
		}
		if !st.Filtered {
			lag += " (any event)"
		}
		oldest := "-"
		if !st.OldestPending.IsZero() {
			oldest = st.OldestPending.Format(time.RFC3339) + " (" + age(now.Sub(st.OldestPending)) + " ago)"
		}
		lastErr := "-"
		if st.LastError != "" {
			lastErr = st.LastError
			if !st.LastErrorAt.IsZero() {
				lastErr += " (" + age(now.Sub(st.LastErrorAt)) + " ago)"
			}
		}
		lease := "none"
		switch {
		case st.Lease.Held(now):
			lease = st.Lease.Holder + " until " + st.Lease.Until.Format(time.RFC3339) + " (in " + age(st.Lease.Until.Sub(now)) + ")"
		case st.Lease.Holder != "":
			lease = st.Lease.Holder + ", ended " + age(now.Sub(st.Lease.Until)) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s\n", st.Name, st.Position, lag, oldest, st.Delivered, st.Attempts, lastErr, lease)
	}
	tw.Flush()
}

// age writes a duration rounded for reading: 850ms, 12s, 3m4s, 5h2m.
func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

// registerWebhookStats exports the delivery figures of e's sinks, labelled
// by sink name (from the configuration file, so bounded).
func registerWebhookStats(m *metrics.Metrics, e *webhooks.Engine) {
	bySink := func(f func(webhooks.SinkStats) float64) func() map[string]float64 {
		return func() map[string]float64 {
			out := map[string]float64{}
			for _, st := range e.Stats() {
				out[st.Name] = f(st)
			}
			return out
		}
	}
	m.GaugesFunc("webhook_lag_events", "Events a sink has not been delivered yet (a lower bound past 1,000), by sink.", "sink",
		bySink(func(st webhooks.SinkStats) float64 { return float64(st.LagEvents) }))
	m.GaugesFunc("webhook_lag_seconds", "Age of the oldest event a sink has not been delivered yet, 0 when none, by sink.", "sink",
		bySink(func(st webhooks.SinkStats) float64 { return st.LagSeconds(time.Now()) }))
	m.GaugesFunc("webhook_position", "Id of the last event delivered to a sink, by sink.", "sink",
		bySink(func(st webhooks.SinkStats) float64 { return float64(st.Position) }))
	m.GaugesFunc("webhook_attempts", "Failed attempts at a sink's current event, by sink.", "sink",
		bySink(func(st webhooks.SinkStats) float64 { return float64(st.Attempts) }))
	m.CountersFunc("webhook_delivered_total", "Events delivered by this server, by sink.", "sink",
		bySink(func(st webhooks.SinkStats) float64 { return float64(st.Delivered) }))
	m.CountersFunc("webhook_failures_total", "Failed delivery attempts by this server, by sink.", "sink",
		bySink(func(st webhooks.SinkStats) float64 { return float64(st.Failures) }))
}
