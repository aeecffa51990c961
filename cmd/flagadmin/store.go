package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// memoryURL is the database URL of the in-memory store.
const memoryURL = "memory:"

// inMemory reports whether a database URL names a database that lives in
// the process and starts empty in the next: memory: and sqlite::memory:.
func inMemory(dbURL string) bool {
	return dbURL == memoryURL || dbURL == "sqlite::memory:"
}

// openStore opens the store of a database URL checked by parseDBURL:
// memory: is a new memstore, anything else a bunstore (which checks that the
// database is reachable), migrated to the current schema when migrate is
// set. timeout is the storage deadline of each operation
// (bunstore.WithTimeout), 0 for none. The returned function closes it.
func openStore(ctx context.Context, dbURL string, log *slog.Logger, migrate bool, timeout time.Duration) (flagadmin.Store, func() error, error) {
	if dbURL == memoryURL {
		log.Debug("using the in-memory store; nothing is kept after the process ends")
		return memstore.New(), func() error { return nil }, nil
	}
	store, err := openBunstore(ctx, dbURL, log, migrate, bunstore.WithTimeout(timeout))
	if err != nil {
		return nil, nil, err
	}
	return store, store.Close, nil
}

// openServedStore opens the store of the server: memory: as openStore
// does, a database within openTimeout, then migrated within bound (the
// migrations are logged as they start). A migration still running at
// the bound, such as the rebuild of a large log, fails start-up with a
// line that says to run flagadmin migrate first, which has no bound.
func openServedStore(ctx context.Context, cfg Config, log *slog.Logger, bound time.Duration) (flagadmin.Store, func() error, error) {
	if cfg.DB == memoryURL {
		return openStore(ctx, cfg.DB, log, false, cfg.DBTimeout)
	}
	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, err := openBunstore(openCtx, cfg.DB, log, false, bunstore.WithTimeout(cfg.DBTimeout), bunstore.WithMaxConns(cfg.DBMaxConns))
	if err != nil {
		return nil, nil, err
	}
	if err := migrateAtStart(ctx, store, cfg.DB, log, bound); err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, store.Close, nil
}

// migrateAtStart applies the migrations store lacks within bound, logging
// each as it starts.
func migrateAtStart(ctx context.Context, store *bunstore.Store, dbURL string, log *slog.Logger, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	running := "the migrations"
	err := store.Migrate(ctx, bunstore.WithProgress(func(m bunstore.MigrationStep) {
		if !m.Done {
			running = "the migration " + m.Name + " (" + m.Comment + ")"
			log.Info("migrating the database", "db", bunstore.RedactURL(dbURL), "step", m.Name, "what", m.Comment)
		}
	}))
	switch {
	case err != nil && ctx.Err() == context.DeadlineExceeded:
		return cliErrorf("migrate %s: %s did not finish within the %v serve gives it at start-up; run flagadmin migrate first, with the same --db "+
			"(it has no time limit and shows each step as it runs), then start serve again", bunstore.RedactURL(dbURL), running, bound)
	case err != nil:
		return cliErrorf("migrate %s: %s", bunstore.RedactURL(dbURL), flat(err))
	}
	return nil
}

// existingDatabase refuses a SQLite database file that does not exist
// (openExisting): opening it would create an empty database, likely beside
// the one meant.
func existingDatabase(dbURL string) error {
	path, ok := strings.CutPrefix(dbURL, "sqlite:")
	if !ok || path == ":memory:" {
		return nil
	}
	if p, ok := strings.CutPrefix(path, "//"); ok {
		path = p
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return cliErrorf("database %s does not exist: give the --db of the server (flagadmin migrate or serve creates a new one)", dbURL)
	}
	return nil
}

// openExisting opens the database of dbURL for a command that reads or
// changes what it holds but must never create one: a SQLite file that
// does not exist, or a database without flagadmin's schema, is refused,
// likely a typo of --db. A schema older than this flagadmin's is brought
// up to date when migrate is set (the command writes), and refused
// otherwise: a command that only reads never changes the schema, nor
// appends the leaves a server has not appended yet (it reads the log as
// the database holds it). Each operation of the store runs under the
// default storage deadline.
func openExisting(ctx context.Context, dbURL string, log *slog.Logger, migrate bool) (*bunstore.Store, error) {
	if err := existingDatabase(dbURL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	opts := []bunstore.Option{bunstore.WithTimeout(defaultDBTimeout)}
	if !migrate {
		opts = append(opts, bunstore.WithoutAppendingOthers())
	}
	store, err := openBunstore(ctx, dbURL, log, false, opts...)
	if err != nil {
		return nil, err
	}
	schema, err := store.Schema(ctx)
	switch {
	case err != nil:
		err = cliErrorf("cannot read the schema of %s: %s", bunstore.RedactURL(dbURL), withCause(err))
	case len(schema.Development) > 0:
		err = cliErrorf("%s: %s", bunstore.RedactURL(dbURL), schema.Err())
	case schema.Empty():
		err = cliErrorf("database %s has no flagadmin schema: give the --db of the server (flagadmin migrate or serve creates one)", bunstore.RedactURL(dbURL))
	case len(schema.Unknown) > 0:
		err = cliErrorf("database %s was migrated by a newer flagadmin (it has migrations %s, which this one does not know): run that flagadmin or a newer one",
			bunstore.RedactURL(dbURL), strings.Join(schema.Unknown, ", "))
	case len(schema.Pending) > 0 && !migrate:
		err = cliErrorf("database %s has the schema of an older flagadmin: run flagadmin migrate on it first", bunstore.RedactURL(dbURL))
	case len(schema.Pending) > 0:
		if err = store.Migrate(ctx); err != nil {
			err = cliErrorf("migrate %s: %s", bunstore.RedactURL(dbURL), flat(err))
		}
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// openBunstore opens a bunstore with log as its logger and the options
// opts. A failure to open is
// reported once, as the returned error: what the store logs while it opens is
// held back, written after a successful open and dropped after a failed one.
func openBunstore(ctx context.Context, dbURL string, log *slog.Logger, migrate bool, opts ...bunstore.Option) (*bunstore.Store, error) {
	gate := &openGate{Handler: log.Handler(), state: &gateState{}}
	opts = append(opts, bunstore.WithLogger(slog.New(gate)))
	if !migrate {
		opts = append(opts, bunstore.WithoutMigrate())
	}
	store, err := bunstore.Open(ctx, dbURL, opts...)
	if err != nil {
		gate.state.release(ctx, false)
		if problem, ok := strings.CutPrefix(flat(err), "bunstore: "+dbURL+": "); ok {
			// A SQLite file's problem, such as a missing directory, which
			// names the URL itself.
			return nil, cliErrorf("cannot open database %s: %s", dbURL, problem)
		}
		return nil, cliErrorf("cannot open database %s: %s", bunstore.RedactURL(dbURL), flat(err))
	}
	gate.state.release(ctx, true)
	log.Debug("database open", "db", bunstore.RedactURL(dbURL))
	return store, nil
}

// openGate is a slog.Handler that holds records back until its state is released.
type openGate struct {
	slog.Handler
	state *gateState
}

// gateState is shared by an openGate and the handlers derived from it.
type gateState struct {
	mu       sync.Mutex
	released bool
	held     []heldRecord
}

type heldRecord struct {
	h slog.Handler
	r slog.Record
}

// release writes the held records when keep is set, drops them otherwise,
// and lets later records through.
func (s *gateState) release(ctx context.Context, keep bool) {
	s.mu.Lock()
	held := s.held
	s.held, s.released = nil, true
	s.mu.Unlock()
	if keep {
		for _, h := range held {
			_ = h.h.Handle(ctx, h.r)
		}
	}
}

func (g *openGate) Handle(ctx context.Context, r slog.Record) error {
	g.state.mu.Lock()
	if !g.state.released {
		g.state.held = append(g.state.held, heldRecord{h: g.Handler, r: r.Clone()})
		g.state.mu.Unlock()
		return nil
	}
	g.state.mu.Unlock()
	return g.Handler.Handle(ctx, r)
}

func (g *openGate) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &openGate{Handler: g.Handler.WithAttrs(attrs), state: g.state}
}

func (g *openGate) WithGroup(name string) slog.Handler {
	return &openGate{Handler: g.Handler.WithGroup(name), state: g.state}
}
