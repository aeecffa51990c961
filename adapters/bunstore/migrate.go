package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/lent"
)

// Migrate applies the migrations the database lacks (the baseline and
// those after it, migrations.go), and with WithRebuild then rebuilds the
// summaries the store keeps from the base tables (WithoutTuning says
// when a database needs it).
//
// It is safe to call from several processes at once: they take turns on a
// lock held by a database session, which the database releases if the
// process dies:
//
//   - PostgreSQL: pg_advisory_lock on a dedicated connection, keyed by the
//     current schema;
//   - MySQL: GET_LOCK on a dedicated connection, named after the database;
//   - SQLite: the database write lock, taken by BEGIN IMMEDIATE on the
//     store's writer connection; the migrations run in that transaction.
//
// A database made by a development version of flagadmin, or migrated by a
// newer one, is refused, changing nothing (SchemaState.Err). A migration
// is recorded as applied only once it succeeded. On PostgreSQL,
// Migrate then makes sure the pg_trgm index of the token index's
// vocabulary exists when the extension is available.
//
// The storage deadline (WithTimeout) does not apply: on PostgreSQL and
// MySQL, Migrate runs on connections of its own, without the server-side
// limits; ctx alone bounds it.
func (s *Store) Migrate(ctx context.Context, opts ...MigrateOption) error {
	var o migrateOptions
	for _, opt := range opts {
		opt(&o)
	}
	if s.openUnbounded == nil {
		return s.migrate(ctx, o)
	}
	db, err := s.openUnbounded()
	if err != nil {
		return withDetail(s.fail("migrate", err))
	}
	defer db.Close()
	m := &Store{db: db, rdb: db, sqlDialect: s.sqlDialect, log: s.log, summaries: s.summaries}
	return m.migrate(ctx, o)
}

// MigrateOption configures Migrate.
type MigrateOption func(*migrateOptions)

type migrateOptions struct {
	progress func(MigrationStep)
	rebuild  bool
}

// MigrationStep is a step of Migrate, as WithProgress reports it: a
// migration applied, or the summaries rebuilt.
type MigrationStep struct {
	// Name is the migration's name (its version), or "summaries".
	Name string
	// Comment says what the step does.
	Comment string
	// Done is false when the step starts and true once it succeeded.
	Done bool
	// Took is how long the step took, once Done.
	Took time.Duration
}

// WithProgress has Migrate call fn when each step starts and when it has
// succeeded, for a command that shows the migration as it runs.
func WithProgress(fn func(MigrationStep)) MigrateOption {
	return func(o *migrateOptions) { o.progress = fn }
}

// WithRebuild has Migrate rebuild, once the migrations are applied, every
// summary the store keeps from the base tables, under the migration lock
// and holding still what they derive from: what a database needs before
// a store that keeps a summary serves it after stores without it wrote to
// it (see WithoutTuning). It takes as long as reading every event.
func WithRebuild() MigrateOption {
	return func(o *migrateOptions) { o.rebuild = true }
}

// step runs fn as the step name, reporting it to o.progress.
func (o migrateOptions) step(name, comment string, fn func() error) error {
	if o.progress != nil {
		o.progress(MigrationStep{Name: name, Comment: comment})
	}
	start := time.Now()
	if err := fn(); err != nil {
		return err
	}
	if o.progress != nil {
		o.progress(MigrationStep{Name: name, Comment: comment, Done: true, Took: time.Since(start)})
	}
	return nil
}

// migrate is Migrate on the store's own connections: under the dialect's
// migration lock, held by a session of its own, or else in one write
// transaction (migrateInWriteTx).
func (s *Store) migrate(ctx context.Context, o migrateOptions) error {
	var err error
	if lock, unlock := s.sqlDialect.MigrationLock(); lock != "" {
		err = s.withSessionLock(ctx, lock, unlock, func() error { return s.runMigrations(ctx, s.db, o) })
	} else {
		err = s.migrateInWriteTx(ctx, o)
	}
	if err != nil {
		return withDetail(s.fail("migrate", err))
	}
	return nil
}

// warnNoTrigram logs, once, that pg_trgm cannot be created.
func (s *Store) warnNoTrigram(cause error) {
	s.trgmWarn.Do(func() {
		s.log.Warn("bunstore: the pg_trgm extension is not available, so free-text event queries scan the vocabulary of the token index (search_tokens); "+
			"have a superuser run CREATE EXTENSION pg_trgm, then run the migrations again", "cause", cause.Error())
	})
}

// runMigrations applies the migrations db lacks, rebuilds the summaries
// when asked to (WithRebuild), then does what the dialect adds after them
// (sqlDialect.AfterMigrations).
func (s *Store) runMigrations(ctx context.Context, db *bun.DB, o migrateOptions) error {
	ms := newMigrations(s.sqlDialect, s.summaries, o)
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return err
	}
	if err := refuseUnknownMigrations(ctx, db, ms); err != nil {
		return err
	}
	if _, err := m.Migrate(ctx); err != nil {
		return err
	}
	if o.rebuild {
		err := o.step("summaries", "rebuild the summaries the store keeps from the base tables", func() error {
			return inMigrationTx(ctx, s.sqlDialect, db, func(ctx context.Context, tx bun.IDB) error {
				return rebuildSummaries(ctx, s.sqlDialect, tx, s.summaries)
			})
		})
		if err != nil {
			return err
		}
	}
	return s.sqlDialect.AfterMigrations(ctx, db, s.warnNoTrigram)
}

// ErrNewerSchema: the database has migrations this version of the store
// does not know: a newer version migrated it, and this one would write
// what the newer one no longer reads.
var ErrNewerSchema = errors.New("the database was migrated by a newer flagadmin")

// ErrDevelopmentSchema: the database was made by a development version of
// flagadmin, before the baseline (migrations.go), whose schema this
// version does not read and does not convert.
var ErrDevelopmentSchema = errors.New("the database was made by a development version of flagadmin, before the first release's schema, and this flagadmin cannot open it")

// unknownMigrations returns the names in db's bun_migrations that ms does
// not hold, oldest first: those older than the baseline (a development
// version's) and those newer (a newer version's).
func unknownMigrations(ctx context.Context, db bun.IDB, ms *migrate.Migrations) (development, newer []string, err error) {
	var names []string
	if err := db.NewRaw("SELECT name FROM bun_migrations ORDER BY name").Scan(ctx, &names); err != nil {
		return nil, nil, err
	}
	known := map[string]bool{}
	for _, m := range ms.Sorted() {
		known[m.Name] = true
	}
	for _, n := range names {
		switch {
		case known[n]:
		case n < baseline:
			development = append(development, n)
		default:
			newer = append(newer, n)
		}
	}
	return development, newer, nil
}

// refuseUnknownMigrations returns an error of ErrDevelopmentSchema when db
// has migrations older than the baseline, and one of ErrNewerSchema when
// it has migrations ms does not hold.
func refuseUnknownMigrations(ctx context.Context, db bun.IDB, ms *migrate.Migrations) error {
	development, newer, err := unknownMigrations(ctx, db, ms)
	if err != nil {
		return err
	}
	if err := (SchemaState{Development: development, Unknown: newer}).Err(); err != nil {
		// A callbackError: the store returns it as it is (fail), one line.
		return &callbackError{err}
	}
	return nil
}

// withSessionLock runs fn while holding a lock taken by lockSQL on a
// dedicated connection. The lock belongs to that connection's session: if
// the process dies, the database ends the session and frees the lock.
// Where the lock statement answers (sqlDialect.LockAnswers), an answer of
// 0 (MySQL's GET_LOCK timing out) is tried again until ctx ends; else it
// waits until it holds the lock.
func (s *Store) withSessionLock(ctx context.Context, lockSQL, unlockSQL string, fn func() error) error {
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		var got sql.NullInt64
		if s.sqlDialect.LockAnswers() {
			err = conn.QueryRowContext(ctx, lockSQL).Scan(&got)
		} else {
			_, err = conn.ExecContext(ctx, lockSQL)
			got = sql.NullInt64{Int64: 1, Valid: true}
		}
		if err != nil {
			return err
		}
		if !got.Valid {
			return errors.New("migration lock: the database refused the lock")
		}
		if got.Int64 == 1 {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, unlockSQL); err != nil {
			// Ending the session is the sure way to free the lock.
			s.log.Warn("bunstore: releasing the migration lock failed; closing its connection", "cause", err.Error())
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return fn()
}

// migrateInWriteTx runs the migrations of SQLite, which has no migration
// lock (sqlDialect.MigrationLock), in one transaction on the writer
// connection, with foreign keys off. BEGIN IMMEDIATE takes the database write lock, which other
// connections and processes wait for (busy_timeout) and which SQLite frees
// if the process dies; the store's own writes wait for the connection.
//
// The migrator needs a *bun.DB. To keep it on the one connection that holds
// the transaction, it gets a database/sql pool whose single connection is
// the writer's driver connection, lent for the duration.
func (s *Store) migrateInWriteTx(ctx context.Context, o migrateOptions) error {
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) (err error) {
		pool, err := lent.Pool(dc)
		if err != nil {
			return err
		}
		defer pool.Close()
		db := s.sqlDialect.NewDB(pool)
		// Off for the migrations, which may drop a table others refer to;
		// the pragma does nothing inside a transaction, so it comes first.
		if _, err := db.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
			return err
		}
		defer func() {
			if _, on := db.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON"); err == nil {
				err = on
			}
		}()
		if _, err := db.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		if err := s.runMigrations(ctx, db, o); err != nil {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return err
		}
		if _, err := db.ExecContext(ctx, "COMMIT"); err != nil {
			_, _ = db.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return err
		}
		return nil
	})
}

// SchemaState is how far a database's schema is from the store's
// migrations (Schema).
type SchemaState struct {
	// Applied names the store's migrations the database has, oldest first:
	// none on a database without flagadmin's schema.
	Applied []string
	// Pending names those it lacks, oldest first: none when it is up to date.
	Pending []string
	// Unknown names the migrations the database has that the store does
	// not know, newer than its own, oldest first: a newer version migrated
	// it (ErrNewerSchema).
	Unknown []string
	// Development names the migrations the database has from before the
	// baseline, oldest first: a development version of flagadmin made it
	// (ErrDevelopmentSchema).
	Development []string
}

// Err returns, in one line that says what to do, why the store refuses
// the database: an error of ErrDevelopmentSchema or ErrNewerSchema; or nil.
func (st SchemaState) Err() error {
	switch {
	case len(st.Development) > 0:
		return fmt.Errorf("%w (its newest migration is %s): start a new database and import or seed it again",
			ErrDevelopmentSchema, st.Development[len(st.Development)-1])
	case len(st.Unknown) > 0:
		return fmt.Errorf("%w (it has migrations %s, which this one does not know): "+
			"run that flagadmin or a newer one; this one would write what the newer one does not expect", ErrNewerSchema, strings.Join(st.Unknown, ", "))
	}
	return nil
}

// Empty reports whether the database has none of flagadmin's schema.
func (st SchemaState) Empty() bool { return len(st.Applied) == 0 }

// Schema reports which of the store's migrations the database has, without
// changing anything: for a program that must not create or migrate a
// schema (one that only reads), to refuse a database that is not yet, or
// not fully, flagadmin's. It runs under the storage deadline (WithTimeout).
func (s *Store) Schema(ctx context.Context) (SchemaState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var applied map[string]bool
	switch exists, err := tableExists(ctx, s.sqlDialect, s.db, "bun_migrations"); {
	case err != nil:
		return SchemaState{}, withDetail(s.fail("schema", err))
	case exists:
		var names []string
		if err := s.db.NewRaw("SELECT name FROM bun_migrations").Scan(ctx, &names); err != nil {
			return SchemaState{}, withDetail(s.fail("schema", err))
		}
		applied = make(map[string]bool, len(names))
		for _, n := range names {
			applied[n] = true
		}
	}
	var st SchemaState
	ms := newMigrations(s.sqlDialect, s.summaries, migrateOptions{})
	if applied != nil {
		development, newer, err := unknownMigrations(ctx, s.db, ms)
		if err != nil {
			return SchemaState{}, withDetail(s.fail("schema", err))
		}
		st.Development, st.Unknown = development, newer
	}
	for _, m := range ms.Sorted() {
		if applied[m.Name] {
			st.Applied = append(st.Applied, m.Name)
		} else {
			st.Pending = append(st.Pending, m.Name)
		}
	}
	return st, nil
}
