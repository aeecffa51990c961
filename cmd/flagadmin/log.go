package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// The verifiable log of a server and its retention: the tree's upkeep
// (stored subtree hashes, and with --log-key a signed checkpoint at least
// every 10 s while the log grows) and, with --retention, the pruner.

// Environment variables of --log-state and --log-witness.
const (
	envLogState   = "FLAGADMIN_LOG_STATE"
	envLogWitness = "FLAGADMIN_LOG_WITNESS"
)

// bindLogSettings registers --log-key, --log-state, --log-witness and
// --retention with bind.
func bindLogSettings(bind func(name, env, def, usage string, unleash unleashReader) *setting) (logKey, logState, logWitness, retention *setting) {
	logKey = bind("log-key", envLogKey, "",
		"`FILE` of the key that signs the event log's checkpoints (written by flagadmin log keygen);\n"+
			"with it the server signs a checkpoint at least every 10 s while the log grows and serves\n"+
			"the newest at GET /api/admin/log/checkpoint. Give every server on one database the same key", nil)
	logState = bind("log-state", envLogState, "",
		"with --log-key: the `FILE` the server keeps the last checkpoint it signed in, outside the database\n"+
			"(default: the key's file + "+tlog.StateSuffix+", none on memory:); it never signs a log that does\n"+
			"not extend it.\n"+
			"Each server keeps its own, on a disk the database's operators cannot write", nil)
	logWitness = bind("log-witness", envLogWitness, "",
		"with --log-key: a `WITNESS` to submit each checkpoint to, written URL=KEY: the witness's prefix\n"+
			"(C2SP tlog-witness: checkpoints go to URL/add-checkpoint) and its verifier key. Repeat the flag,\n"+
			"or separate witnesses with commas. The server serves each checkpoint with the cosignatures\n"+
			"it got; a witness that cannot be reached leaves them uncosigned and never delays a write", nil)
	retention = bind("retention", envRetention, "",
		"the `DURATION` events are kept, such as 90d or 2160h; older ones are pruned in small batches\n"+
			"in the background, except those of projects under a legal hold (flagadmin log hold). Their\n"+
			"leaf hashes stay, so checkpoints and proofs stay valid. The shortest is 1h; empty or 0 (or 0d)\n"+
			"keeps events for ever", nil)
	return logKey, logState, logWitness, retention
}

// parseLogWitnesses reads --log-witness: witnesses as URL=KEY, separated
// by commas; none when empty.
func parseLogWitnesses(raw, keyFile string) ([]tlog.Witness, error) {
	var list []tlog.Witness
	seen := map[string]bool{}
	for item := range strings.SplitSeq(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		w, err := parseLogWitness(item)
		if err != nil {
			return nil, err
		}
		if seen[w.Name()] {
			return nil, fmt.Errorf("two witnesses are named %s; give each witness once", w.Name())
		}
		seen[w.Name()] = true
		list = append(list, w)
	}
	if len(list) > 0 && keyFile == "" {
		return nil, errors.New("needs --log-key: witnesses cosign the checkpoints the server signs")
	}
	return list, nil
}

// parseLogWitness reads one URL=KEY. A URL may hold = and a key's base64
// ends with =: the URL is the part before the first = that leaves a
// valid URL and key on its sides.
func parseLogWitness(item string) (tlog.Witness, error) {
	var urlErr, keyErr error
	for i := range len(item) {
		if item[i] != '=' {
			continue
		}
		u, err := tlog.ParseWitnessURL(item[:i])
		if err != nil {
			urlErr = cmp.Or(urlErr, err)
			continue
		}
		v, err := tlog.ParseWitnessKey(item[i+1:])
		if err != nil {
			keyErr = cmp.Or(keyErr, err)
			continue
		}
		return tlog.Witness{URL: u, Verifier: v}, nil
	}
	switch {
	case keyErr != nil:
		return tlog.Witness{}, fmt.Errorf("%s: %v", flagadmin.QuoteInput(item), keyErr)
	case urlErr != nil:
		return tlog.Witness{}, urlErr
	}
	return tlog.Witness{}, fmt.Errorf("%s is not URL=KEY: the witness's URL, =, and its verifier key", flagadmin.QuoteInput(item))
}

// parseLogState reads --log-state: a file name beside a key file, by
// default the key's file + tlog.StateSuffix; none on memory:, whose log
// starts empty in every process.
func parseLogState(raw, keyFile, dbURL string) (string, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case keyFile == "" && raw != "":
		return "", errors.New("needs --log-key: only a server that signs checkpoints keeps one")
	case dbURL == memoryURL && raw != "":
		return "", errors.New("memory: starts empty in every process, so no checkpoint survives it; give a database")
	case keyFile == "", dbURL == memoryURL:
		return "", nil
	case raw == "":
		raw = keyFile + tlog.StateSuffix
	}
	if fi, err := os.Stat(raw); err == nil && fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; give a file name, such as %s", raw, filepath.Join(raw, "flagadmin"+tlog.StateSuffix))
	}
	if fi, err := os.Stat(filepath.Dir(raw)); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the directory of %s does not exist", raw)
	}
	return raw, nil
}

// loadLogKey reads the signing key file of --log-key; empty keeps none.
func loadLogKey(path string) (file, key string, err error) {
	path = strings.TrimSpace(path)
	if path == "" {
		return "", "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("cannot read the signing key: %s", flat(err))
	}
	if _, err := tlog.ParseSignerKey(string(b)); err != nil {
		return "", "", fmt.Errorf("%s: %v", path, err)
	}
	return path, strings.TrimSpace(string(b)), nil
}

// minRetention is the shortest retention: the pruner looks once a minute,
// and events kept for less would leave search and export about as soon as
// they were written.
const minRetention = time.Hour

// parseRetention reads --retention: a number of days (90d) or a Go
// duration (2160h) of at least minRetention; empty or zero (0, 0d, 0h)
// keeps events for ever.
func parseRetention(raw string) (time.Duration, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return 0, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(raw, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil && (n < 0 || n >= 1<<20) {
			err = strconv.ErrRange
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(raw)
	}
	switch {
	case err != nil || d < 0:
		return 0, fmt.Errorf("%q is not a retention; use a number of days such as 90d, a duration such as 2160h, or 0 to keep events for ever", raw)
	case d > 0 && d < minRetention:
		return 0, fmt.Errorf("%q is shorter than the shortest retention, 1h; use 1h or more, such as 90d, or 0 to keep events for ever", raw)
	}
	return d, nil
}

// logModule keeps the log of the opened store: its upkeep and pruner run
// from the app's start (after the HTTP server's, so after the seed and
// the retention rule the bootstrap records) to its stop.
var logModule = fx.Module("log",
	fx.Provide(newLogParts),
	fx.Invoke(startLog),
)

// logParts are the log of the opened store, nil when the store keeps none.
type logParts struct {
	store  flagadmin.LogStore
	prover *tlog.Prover
	signer *tlog.Signer
	// witnesses cosign the checkpoints; nil without --log-witness.
	witnesses *tlog.Witnesses
	// created says that the state file did not exist and was created.
	created *tlog.StateCreated
}

// config is what the Service is given (zero without a log).
func (p *logParts) config() flagadmin.LogConfig {
	if p == nil {
		return flagadmin.LogConfig{}
	}
	c := flagadmin.LogConfig{Store: p.store, Prover: p.prover, Signing: p.signer != nil}
	if p.signer != nil {
		c.Refused = p.signer.Refused
	}
	if p.witnesses != nil {
		c.Cosign = p.witnesses.Cosign
	}
	return c
}

// signing reports on the signer for /health; nil without one.
func (p *logParts) signing() httpapi.LogSigner {
	if p == nil || p.signer == nil {
		return nil
	}
	if p.witnesses != nil {
		return witnessedSigner{p.signer, p.witnesses}
	}
	return p.signer
}

// witnessedSigner reports on the signer and its witnesses for /health.
type witnessedSigner struct {
	*tlog.Signer
	witnesses *tlog.Witnesses
}

var _ httpapi.LogWitnesses = witnessedSigner{}

func (s witnessedSigner) WitnessHealth() []httpapi.WitnessHealth {
	var out []httpapi.WitnessHealth
	for _, st := range s.witnesses.Status() {
		out = append(out, httpapi.WitnessHealth{Name: st.Name, URL: st.URL, CosignedSize: st.CosignedSize, Problem: st.Problem})
	}
	return out
}

// newLogParts returns the log of the opened store (not through the caches:
// the tree is read as it is stored). A store that keeps none serves no
// log; --log-key and --retention then stop start-up.
func newLogParts(opened flagadmin.Store, cfg Config, log *slog.Logger) (*logParts, error) {
	ls, ok := opened.(flagadmin.LogStore)
	if !ok {
		switch {
		case cfg.LogSignerKey != "":
			return nil, cliErrorf("--log-key: this database keeps no verifiable log yet")
		case cfg.Retention > 0:
			return nil, cliErrorf("--retention: this database keeps no verifiable log yet, and pruning keeps the leaves of what it removes")
		}
		return nil, nil
	}
	p := &logParts{store: ls, prover: tlog.NewProver(ls)}
	if cfg.LogSignerKey != "" {
		signer, err := tlog.NewSigner(ls, p.prover, cfg.LogSignerKey, nil)
		if err != nil {
			return nil, cliErrorf("--log-key: %s", flat(err))
		}
		p.signer = signer
		if len(cfg.LogWitnesses) > 0 {
			p.witnesses = tlog.NewWitnesses(p.prover, cfg.LogWitnesses, tlog.WitnessOptions{Logger: log.With("component", "log")})
		}
		if cfg.LogState == "" { // a Config made in code: no state kept
			return p, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		if p.created, err = signer.KeepState(ctx, cfg.LogState); err != nil {
			return nil, cliErrorf("--log-state: %s", flat(err))
		}
	}
	return p, nil
}

// startLog runs the log's upkeep and, with a retention, its pruner, and
// exports their figures.
func startLog(lc fx.Lifecycle, parts *logParts, cfg Config, log *slog.Logger, m *metrics.Metrics) {
	if parts == nil {
		return
	}
	log = log.With("component", "log")
	parts.prover.OnRepair(func(r tlog.Repair) {
		log.Warn("log: a stored hash of the tree disagrees with its leaves; proofs use the leaves' (flagadmin log verify --db names it)",
			"level", r.Level, "index", r.Index, "stored", base64.StdEncoding.EncodeToString(r.Stored[:]), "leaves", base64.StdEncoding.EncodeToString(r.Want[:]))
	})
	keeper := tlog.NewMaintainer(parts.prover, parts.signer, tlog.MaintainerOptions{Interval: cfg.LogInterval, Logger: log, Witnesses: parts.witnesses})
	var pruner *tlog.Pruner
	if cfg.Retention > 0 {
		pruner = tlog.NewPruner(parts.store, cfg.Retention, tlog.PrunerOptions{Logger: log})
	}
	registerLogStats(m, keeper, pruner, parts.prover, parts.signer != nil)
	registerWitnessStats(m, parts.witnesses)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			if parts.signer != nil {
				log.Info("log: signing checkpoints", "origin", parts.signer.Origin(), "key", cfg.LogKey, "state", cfg.LogState)
				if c := parts.created; c != nil && c.Size > 0 {
					log.Warn("log: created the checkpoint state file from the database's newest checkpoint, whose signature verifies; from now on the server signs only logs that extend it",
						"state", cfg.LogState, "size", c.Size)
				} else if c != nil {
					log.Warn("log: the checkpoint state file does not exist; the server creates it with the first checkpoint it signs",
						"state", cfg.LogState)
				}
			}
			if parts.witnesses != nil {
				for _, w := range cfg.LogWitnesses {
					log.Info("log: submitting checkpoints to a witness", "witness", w.Name(), "url", w.URL)
				}
				wg.Go(func() { parts.witnesses.Run(ctx) })
			}
			wg.Go(func() { keeper.Run(ctx) })
			if pruner != nil {
				log.Info("retention: pruning events", "olderThan", cfg.Retention.String())
				wg.Go(func() { pruner.Run(ctx) })
			}
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
				return nil
			case <-stop.Done():
				return errors.Join(errors.New("the log's upkeep did not stop in time"), stop.Err())
			}
		},
	})
}

// recordRetention records the server's retention rule in the log when it
// differs from the last one recorded (a retention-changed event; of
// servers starting together, one records it). A database that follows a
// source gets no event of its own: retention is refused on it.
func recordRetention(parts *logParts, retention time.Duration, log *slog.Logger) error {
	store, ok := parts.store.(flagadmin.Store)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	svc := flagadmin.NewService(store, flagadmin.WithLog(parts.config()))
	recorded, err := svc.RecordRetention(ctx, flagadmin.System, retention)
	var ro *flagadmin.ReadOnlyError
	switch {
	case errors.As(err, &ro) && retention > 0:
		return cliErrorf("--retention: this database is a copy of %s that keeps its event ids, and retention records each pruning in an event of its own", ro.Source)
	case errors.As(err, &ro):
		return nil
	case err != nil:
		return cliErrorf("--retention: cannot record the retention in the log: %s", withCause(err))
	case recorded:
		rule := "for ever"
		if retention > 0 {
			rule = retention.String()
		}
		log.Info("retention: recorded the new rule in the log", "keep", rule)
	}
	return nil
}

// registerLogStats exports the events pruned, the stored hashes repaired
// and, when the server signs, the age of the newest checkpoint and whether
// it refuses to sign.
func registerLogStats(m *metrics.Metrics, keeper *tlog.Maintainer, pruner *tlog.Pruner, prover *tlog.Prover, signing bool) {
	m.CounterFunc("log_hashes_repaired_total", "Stored hashes of the event log's tree found to disagree with their leaves by this server; "+
		"its proofs use the leaves' hashes instead.", nil, func() float64 { return float64(prover.Repaired()) })
	m.CounterFunc("events_pruned_total", "Events removed by retention by this server (their leaves stay in the log).", nil,
		func() float64 {
			if pruner == nil {
				return 0
			}
			return float64(pruner.Pruned())
		})
	if !signing {
		return
	}
	m.GaugeFunc("log_checkpoint_age_seconds", "Time since the newest checkpoint of the event log was signed (by any server on the "+
		"database); it grows while the log does not, as a checkpoint is signed only when the log grew. -1 before the first.", nil,
		func() float64 {
			cp, ok := keeper.Latest()
			if !ok {
				return -1
			}
			return time.Since(cp.SignedAt).Seconds()
		})
	m.CounterFunc("log_checkpoints_signed_total", "Checkpoints of the event log signed by this server.", nil,
		func() float64 { return float64(keeper.Signed()) })
	m.GaugeFunc("log_signing_refused", "1 while this server refuses to sign checkpoints because the log does not extend the last "+
		"checkpoint it signed (rewritten, or an older copy of the database put back; /health says why), else 0.", nil,
		func() float64 {
			if keeper.Refused() != nil {
				return 1
			}
			return 0
		})
}

// registerWitnessStats exports, per witness (by name), the size of the
// newest checkpoint it cosigned, when, and whether its last submission
// failed.
func registerWitnessStats(m *metrics.Metrics, witnesses *tlog.Witnesses) {
	if witnesses == nil {
		return
	}
	each := func(f func(tlog.WitnessStatus) float64) func() map[string]float64 {
		return func() map[string]float64 {
			out := map[string]float64{}
			for _, st := range witnesses.Status() {
				out[st.Name] = f(st)
			}
			return out
		}
	}
	m.GaugesFunc("log_witness_cosigned_size", "Size of the newest checkpoint of the event log the witness cosigned for this server; "+
		"-1 before the first.", "witness", each(func(st tlog.WitnessStatus) float64 { return float64(st.CosignedSize) }))
	m.GaugesFunc("log_witness_cosigned_timestamp_seconds", "When the witness last cosigned a checkpoint of the event log for this "+
		"server, in seconds since 1970; 0 before the first.", "witness", each(func(st tlog.WitnessStatus) float64 {
		if st.LastCosigned.IsZero() {
			return 0
		}
		return float64(st.LastCosigned.UnixMilli()) / 1000
	}))
	m.GaugesFunc("log_witness_failing", "1 while the last submission of a checkpoint to the witness failed (unreachable, or refused: "+
		"the server's log says why), else 0.", "witness", each(func(st tlog.WitnessStatus) float64 {
		if st.Problem != "" {
			return 1
		}
		return 0
	}))
}
