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
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// The verifiable log of a server and its retention: the tree's upkeep
// (stored subtree hashes, and with --log-key a signed checkpoint at least
// every 10 s while the log grows) and the pruner, which prunes by the
// retention rule the log records (a server records its --retention at
// start when it differs from it).

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
			"(default: the key's file + "+tlog.StateSuffix+"; none on memory: or sqlite::memory:, refused with them).\n"+
			"It never signs a log that does not extend it.\n"+
			"Each server keeps its own, on a disk the database's operators cannot write", nil)
	logWitness = bind("log-witness", envLogWitness, "",
		"with --log-key: a `WITNESS` to submit each checkpoint to, written URL=KEY: the witness's prefix\n"+
			"(C2SP tlog-witness: checkpoints go to URL/add-checkpoint) and its verifier key. Repeat the flag,\n"+
			"or separate witnesses with commas. The server serves each checkpoint with the cosignatures\n"+
			"it got; a witness that cannot be reached leaves them uncosigned and never delays a write.\n"+
			"Refused with --db memory: or sqlite::memory:, whose log starts empty in every process", nil)
	retention = bind("retention", envRetention, "",
		"the `DURATION` events are kept, such as 90d or 2160h; older ones are pruned in small batches\n"+
			"in the background, except those of projects under a legal hold (flagadmin log hold). Their\n"+
			"leaf hashes stay, so checkpoints and proofs stay valid. The shortest is 1h; empty or 0 (or 0d)\n"+
			"keeps events for ever. The rule is the database's: a server started with another rule than the\n"+
			"one last recorded in the log records its own, and every server on the database prunes by it", nil)
	return logKey, logState, logWitness, retention
}

// parseLogWitnesses reads --log-witness: witnesses as URL=KEY, separated
// by commas; none when empty. A database in memory is refused: a witness
// remembers the largest tree of the log it cosigned, and would refuse
// every checkpoint of the new, empty log of the next process.
func parseLogWitnesses(raw, keyFile, dbURL string) ([]tlog.Witness, error) {
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
	switch {
	case len(list) > 0 && keyFile == "":
		return nil, errors.New("needs --log-key: witnesses cosign the checkpoints the server signs")
	case len(list) > 0 && inMemory(dbURL):
		return nil, fmt.Errorf("--db %s starts empty in every process, and a witness remembers the largest tree it cosigned: "+
			"after a restart it would refuse every checkpoint of the new log, for ever; give a database (sqlite:PATH, postgres://..., mysql://...)", dbURL)
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
// default the key's file + tlog.StateSuffix; none on a database in memory,
// whose log starts empty in every process (a checkpoint kept from the last
// one would make the next refuse to sign: its log does not extend it).
func parseLogState(raw, keyFile, dbURL string) (string, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case keyFile == "" && raw != "":
		return "", errors.New("needs --log-key: only a server that signs checkpoints keeps one")
	case inMemory(dbURL) && raw != "":
		return "", fmt.Errorf("--db %s starts empty in every process, so the next one would refuse to sign a log that does not extend the checkpoint kept; give a database (sqlite:PATH, postgres://..., mysql://...)", dbURL)
	case keyFile == "", inMemory(dbURL):
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
	store  vlog.Store
	prover *tlog.Prover
	signer *tlog.Signer
	// witnesses cosign the checkpoints; nil without --log-witness.
	witnesses *tlog.Witnesses
	// created says that the state file did not exist and was created.
	created *tlog.StateCreated
	// cosigned is what was read of the kept cosigned checkpoint.
	cosigned tlog.KeptCosignatures
}

// config is what the Service is given (zero without a log).
func (p *logParts) config() vlog.Config {
	if p == nil {
		return vlog.Config{}
	}
	c := vlog.Config{Store: p.store, Prover: p.prover, Signing: p.signer != nil}
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
	ls, ok := opened.(vlog.Store)
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
		if p.witnesses != nil {
			if err := p.keepCosigned(ctx, cosignedFile(cfg)); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// cosignedFile is the file the server keeps its newest cosigned checkpoint
// in: beside the state file, named after it.
func cosignedFile(cfg Config) string { return cfg.LogState + tlog.CosignedSuffix }

// keepCosigned has the witnesses keep their newest cosigned checkpoint in
// file, and serve at once the cosignatures it holds of the log's current
// checkpoint: the newest of the database's and of the state file's.
func (p *logParts) keepCosigned(ctx context.Context, file string) error {
	current, err := p.store.LatestCheckpoint(ctx)
	if err != nil && !errors.Is(err, flagadmin.ErrNotFound) {
		return cliErrorf("--log-witness: cannot read the newest checkpoint: %s", withCause(err))
	}
	if saved, ok := p.signer.Saved(); ok && (err != nil || saved.Size > current.Size) {
		current = saved
	}
	if p.cosigned, err = p.witnesses.KeepCosigned(file, current); err != nil {
		return cliErrorf("--log-witness: %s", flat(err))
	}
	return nil
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
	pruner := newPruner(parts, cfg, log)
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
				logKeptCosignatures(log, parts.cosigned, cosignedFile(cfg))
				wg.Go(func() { parts.witnesses.Run(ctx) })
			}
			wg.Go(func() { keeper.Run(ctx) })
			if pruner != nil {
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

// logKeptCosignatures says which cosignatures kept in file the server
// serves from the start, and which it does not, and why.
func logKeptCosignatures(log *slog.Logger, kept tlog.KeptCosignatures, file string) {
	if len(kept.Restored) > 0 {
		log.Info("log: serving the cosignatures kept of the current checkpoint", "file", file, "size", kept.Size,
			"witnesses", strings.Join(kept.Restored, ","))
	}
	for _, why := range kept.Dropped {
		log.Warn("log: a kept cosignature is not served; the witnesses are asked again", "problem", why)
	}
}

// newPruner returns the pruner of a server with cfg; nil on a copy that
// follows Unleash, which writes no event of its own. Every other server
// runs one, whatever its --retention: the rule is the database's, the
// one the log records last (a server records its own at start when it
// differs), and each pruner prunes by it, or not at all while it keeps
// events for ever.
func newPruner(parts *logParts, cfg Config, log *slog.Logger) *tlog.Pruner {
	if cfg.Follow != "" {
		return nil
	}
	return tlog.NewPruner(parts.store, tlog.PrunerOptions{Logger: log})
}

// recordRetention records the server's retention rule in the log when it
// differs from the last one recorded (a retention-changed event; of
// servers starting together, one records it): starting a server with
// another --retention is how an operator changes the rule of every
// server on the database. A database that follows a
// source gets no event of its own: retention is refused on it.
func recordRetention(parts *logParts, retention time.Duration, log *slog.Logger) error {
	store, ok := parts.store.(flagadmin.Store)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	svc := vlog.NewService(flagadmin.NewService(store), parts.config())
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
		log.Info("retention: recorded the new rule in the log; every server on the database prunes by it", "keep", tlog.RuleText(retention))
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
