package bunstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/sqliteshim"

	mysqldialect "github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects/mysql"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects/postgres"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/dialects/sqlite"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlitefile"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/tuned"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

var _ flagadmin.Store = (*Store)(nil)

// Store is a flagadmin.Store over PostgreSQL, MySQL/MariaDB or SQLite. It is
// safe for concurrent use. Create it with Open and release it with Close.
type Store struct {
	// db runs writes, and reads too except on a SQLite file.
	db *bun.DB
	// rdb runs reads: a pool of readers on a SQLite file, else db.
	rdb *bun.DB
	// reads admits reads to the readers of a SQLite file in turn
	// (readgate.go); nil elsewhere.
	reads *readGate
	// sqlDialect is what differs between the databases (dialect.go),
	// chosen by Open.
	sqlDialect sqlDialect
	log        *slog.Logger
	// trgmWarn logs once that pg_trgm is unavailable.
	trgmWarn sync.Once
	// summaries are the speed-ups the store has on (summaries.go), chosen
	// by Open.
	summaries summaries
	// timeout bounds each operation (WithTimeout); 0 for none.
	timeout time.Duration
	// openUnbounded, when set, opens a pool on the same database without the
	// server-side limits of the timeout, for Migrate.
	openUnbounded func() (*bun.DB, error)
	// loadProgress is told of Load's last steps (WithLoadProgress); nil for none.
	loadProgress func(LoadStep)
	// leaves appends the verifiable log's leaves (leaves.go); nil in a
	// store that writes no events (Migrate's).
	leaves *leafAppender
	// text fills the full-text index with the texts a load left pending
	// (textbacklog.go); nil where the database has no such backlog.
	text *textBacklog
	// inserts are the INSERTs the writer connection keeps prepared
	// (insert.go).
	inserts preparedInserts
	// listedBefore is the number of projects the last project list read
	// (projectList): the next one's capacity.
	listedBefore atomic.Int64
}

// Option configures Open.
type Option func(*options)

type options struct {
	migrate      bool
	logger       *slog.Logger
	timeout      time.Duration
	loadProgress func(LoadStep)
	off          []Tuning // WithoutTuning
	// ownLeavesOnly: WithoutAppendingOthers.
	ownLeavesOnly bool
	// connector wraps the connector of every pool (WithConnector).
	connector func(driver.Connector) driver.Connector
	// textBacklogHeld: the store does not fill the full-text index's
	// backlog by itself (tests fill it step by step).
	textBacklogHeld bool
	// maxConns bounds the connections to a PostgreSQL or MySQL server
	// (WithMaxConns).
	maxConns int
}

// WithoutMigrate makes Open leave the schema alone; call Migrate yourself
// (for instance from a separate migrate command).
func WithoutMigrate() Option { return func(o *options) { o.migrate = false } }

// WithoutAppendingOthers makes the store append the leaves of its own
// writes only: neither at its start nor on a read past the last leaf does
// it append those of events another server wrote and has not appended (or
// stopped before it did), which a server otherwise does. For a reader
// that must see the log as the database holds it, such as a verifier.
func WithoutAppendingOthers() Option { return func(o *options) { o.ownLeavesOnly = true } }

// WithConnector makes every pool the store opens (the writer's, the
// readers', those Migrate and Load open under WithTimeout) connect through
// wrap(c), c the driver's connector: for instance to trace the
// statements, or, in tests, to fail or hold chosen statements and commits.
// The connections wrap makes must keep the driver's optional interfaces
// working (database/sql's driver.ExecerContext, driver.ConnBeginTx, ...),
// and each must have an Unwrap() driver.Conn method that returns the
// connection it wraps, for the paths that need the driver's own
// connection: on PostgreSQL, COPY and the page reads run on the pgx
// connection, and so do not pass through the wrapper; on SQLite, Migrate
// lends the writer's connection to its migrator. A nil wrap changes
// nothing.
func WithConnector(wrap func(c driver.Connector) driver.Connector) Option {
	return func(o *options) {
		if wrap != nil {
			o.connector = wrap
		}
	}
}

// WithTimeout bounds the time each operation of the store may take (the
// storage deadline): every method runs under a context deadline of d (or
// the caller's, when earlier), which covers the wait for a pooled
// connection, connecting, every statement, and the transaction with its
// retries after a deadlock. When it passes, the database driver abandons
// the statement and its connection, and the method returns an error of kind
// flagadmin.ErrUnavailable. InsertEvents gets d per batch. The database is
// told too, as a backstop for the work the client can no longer stop:
//
//   - PostgreSQL: statement_timeout, lock_timeout and
//     idle_in_transaction_session_timeout of d on every connection;
//   - MySQL/MariaDB: innodb_lock_wait_timeout of d (rounded up to seconds),
//     and max_statement_time (MariaDB, every statement) or
//     max_execution_time (MySQL, SELECT only) of d. The driver's COMMIT
//     and ROLLBACK ignore the context, so every read and write on the
//     connection also gets an I/O deadline of d: a COMMIT the server never
//     answers ends at most d after it began (so up to 2d after the
//     operation did);
//   - SQLite: a busy_timeout of d instead of 10 s. SQLite does not give up
//     waiting for another process's write lock when the context ends, so
//     this is what bounds that wait.
//
// Migrate, and so Open, and Load run without these limits (on connections
// of their own): a migration or a load may take longer. d <= 0 means no
// deadline (the default).
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = max(d, 0) }
}

// WithLogger sets where the store logs notices such as a missing pg_trgm
// or a transaction run again after a deadlock. Failures are not logged
// here: they are returned, with the driver's explanation kept out of their
// message and shown by their LogValue (log/slog), for the caller to log
// once. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Open connects to the database named by rawURL, checks that it is
// reachable, and applies the migrations unless WithoutMigrate is given.
// It picks, once, the dialect of the database (dialect.go) and the
// summaries the store keeps and reads (summaries.go, WithoutTuning).
// Accepted URLs:
//
//   - postgres://user:pass@host:port/db?sslmode=disable (also postgresql://);
//     every pgx connection parameter is allowed, search_path among them.
//   - mysql://user:pass@host:port/db?param=value (MySQL or MariaDB); query
//     parameters are those of go-sql-driver/mysql. parseTime is always on.
//   - sqlite:PATH (a file, created if missing) or sqlite::memory: (one
//     in-memory database for the life of the store).
//
// An unreachable database is an error of kind flagadmin.ErrUnavailable.
// Errors of Open and Migrate are meant for the operator and carry the
// driver's explanation in their message; those of the Store methods never do.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	o := options{migrate: true, logger: slog.New(slog.DiscardHandler), connector: func(c driver.Connector) driver.Connector { return c },
		maxConns: DefaultMaxConns}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkTunings(o.off); err != nil {
		return nil, err
	}
	s := &Store{log: o.logger, timeout: o.timeout, loadProgress: o.loadProgress}
	pool := func(c driver.Connector) *sql.DB { return sql.OpenDB(o.connector(c)) }
	var err error
	scheme, _, _ := strings.Cut(rawURL, ":")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		s.sqlDialect = postgres.Dialect{}
		err = s.openPostgres(rawURL, pool, o.maxConns)
	case "mysql":
		s.sqlDialect = mysqldialect.Dialect{}
		err = s.openMySQL(rawURL, pool, o.maxConns)
	case "sqlite":
		s.sqlDialect = sqlite.New()
		err = s.openSQLite(strings.TrimPrefix(rawURL[len(scheme):], ":"), pool)
	default:
		return nil, fmt.Errorf("bunstore: unsupported database URL scheme %q: use postgres://, mysql:// or sqlite:", scheme)
	}
	if err != nil {
		return nil, err
	}
	if s.rdb != s.db {
		s.reads = newReadGate(s.rdb.DB.Stats().MaxOpenConnections)
	}
	s.summaries = summariesFor(s.sqlDialect, o.off)
	if err := s.ping(ctx); err != nil {
		s.Close()
		if strings.EqualFold(scheme, "sqlite") {
			if problem := sqlitefile.Problem(strings.TrimPrefix(rawURL[len(scheme):], ":")); problem != "" {
				return nil, &sqlitefile.Error{URL: rawURL, Problem: problem, Cause: withDetail(err)}
			}
		}
		return nil, withDetail(err)
	}
	if o.migrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.leaves = newLeafAppender()
	s.leaves.ownOnly = o.ownLeavesOnly
	s.startAppender()
	s.startTextBacklog(!o.textBacklogHeld)
	return s, nil
}

// summariesFor returns the summaries of a store in the dialect d with the
// tunings off turned off: plain when every one is.
func summariesFor(d sqlDialect, off []Tuning) summaries {
	on := func(t Tuning) bool { return !slices.Contains(off, t) }
	c := tuned.Config{Counts: on(EventCounts), Figures: on(ProjectFigures), Pages: on(PageStatements), TextIndex: on(TextIndex), Proofs: on(ProofReads)}
	if c == (tuned.Config{}) {
		return plain{}
	}
	return tuned.New(d, c)
}

// DefaultMaxConns is the number of connections a store keeps to a
// PostgreSQL or MySQL server at most, unless WithMaxConns says otherwise.
//
// A request's statements are short, most of a millisecond or less, and
// bound by the CPU of the database and of the server: connections beyond
// what the machines can run at once only queue inside the database,
// where a request that has begun waits behind the others' statements
// between each of its own. Queued for a connection instead, requests run
// their statements back to back. On a 2-core machine running PostgreSQL,
// the server and 16 clients (1,000,000 events, the result cache off,
// BENCHMARKS.md), 8 connections answered random offsets at p99 33-36 ms
// against 52-54 ms with 20, writes mixed with searches at 34-38 ms
// against 56-59 ms, free text at 85-92 ms against 104-117 ms, for 0-7%
// fewer requests a second. Several servers sharing one database also
// stay well within PostgreSQL's default of 100 connections.
const DefaultMaxConns = 8

// WithMaxConns sets the number of connections the store keeps to a
// PostgreSQL or MySQL server at most (DefaultMaxConns when n < 1): more
// for a database on a machine of its own with many cores, or far from
// the server (a request holds its connection for each of its round
// trips). All of them may stay idle (until an idle time of 5 minutes):
// with fewer idle slots than open connections, a burst of concurrent
// requests would close the surplus on release and open new ones on the
// next burst, a server-side fork (or thread) and authentication for every
// such request. A SQLite file has one writer and a pool of readers of its
// own size; n does not apply.
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// openPostgres opens the pools of the database of rawURL, each with pool
// (a database/sql pool on a driver's connector, wrapped by
// WithConnector's function) of at most maxConns connections.
func (s *Store) openPostgres(rawURL string, pool func(driver.Connector) *sql.DB, maxConns int) error {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return errors.New("bunstore: invalid postgres URL: " + redact(err.Error(), rawURL))
	}
	// Bun writes arguments into the SQL text itself, so every statement is
	// distinct: preparing and caching them would only cost round trips.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	open := func(cfg *pgx.ConnConfig) *bun.DB {
		sqldb := pool(stdlib.GetConnector(*cfg))
		sqldb.SetMaxOpenConns(maxConns)
		sqldb.SetMaxIdleConns(maxConns)
		sqldb.SetConnMaxIdleTime(5 * time.Minute)
		return s.sqlDialect.NewDB(sqldb)
	}
	if s.timeout > 0 {
		unbounded := cfg.Copy()
		s.openUnbounded = func() (*bun.DB, error) { return open(unbounded), nil }
	}
	// Requests run with the store's settings (requestSettings) where the
	// URL sets none of its own; the unbounded pool of loads and
	// migrations, copied above, keeps the server's.
	for name, value := range requestSettings {
		if _, set := cfg.RuntimeParams[name]; !set {
			cfg.RuntimeParams[name] = value
		}
	}
	if s.timeout > 0 {
		ms := strconv.FormatInt(max(s.timeout.Milliseconds(), 1), 10)
		for _, name := range []string{"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"} {
			cfg.RuntimeParams[name] = ms
		}
	}
	s.db = open(cfg)
	s.rdb = s.db
	return nil
}

// PostgreSQL's settings of the parallel workers a statement may use, and
// of the memory each of its sorts, hashes or bitmaps may use; workMem is
// the store's value of the latter.
const (
	parallelWorkers = "max_parallel_workers_per_gather"
	workMemParam    = "work_mem"
	workMem         = "64MB"
)

// requestSettings are the store's values of PostgreSQL's settings for the
// connections of requests, where the URL sets none:
//
//   - no parallel workers: each starts cold, loading its catalog caches,
//     for every statement that uses it; a free-text search of 1,458
//     matches at 1,000,000 events took 45-64 ms with two workers and 4 ms
//     without, and under concurrent requests the workers only take the
//     cores from the other connections;
//   - workMem: a free-text search for a common word reads the bitmap of
//     its matches, which past PostgreSQL's default of 4 MB turns lossy,
//     and every row of a lossy page is checked by splitting its text into
//     tokens again. At 1,000,000 events a word in 313,618 of them took
//     17.3 s (a 503 at the storage deadline) with 4 MB and 0.74 s with
//     8 MB or more; 64 MB holds such a bitmap up to about ten times as
//     many events.
var requestSettings = map[string]string{parallelWorkers: "0", workMemParam: workMem}

// openMySQL opens the pools of the database of rawURL, as openPostgres.
func (s *Store) openMySQL(rawURL string, pool func(driver.Connector) *sql.DB, maxConns int) error {
	cfg, err := MySQLConfig(rawURL)
	if err != nil {
		return err
	}
	cfg.Logger = mysqlLogger{s.log}
	open := func(cfg *mysql.Config) (*sql.DB, error) {
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("bunstore: invalid mysql URL: %w", err)
		}
		sqldb := pool(connector)
		sqldb.SetMaxOpenConns(maxConns)
		sqldb.SetMaxIdleConns(maxConns)
		sqldb.SetConnMaxIdleTime(5 * time.Minute)
		return sqldb, nil
	}
	sqldb, err := open(cfg)
	if err != nil {
		return err
	}
	// Bun's MySQL dialect, made with the database (NewDB), asks the server
	// for its version: check that it answers first, so a down server is reported by Ping, not logged.
	ctx, cancel := s.bound(context.Background())
	defer cancel()
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return withDetail(s.fail("open", err))
	}
	if s.timeout > 0 {
		// The statement limit's variable depends on the server: ask it,
		// then open the pool whose connections set the limits.
		var version string
		if err := sqldb.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			sqldb.Close()
			return withDetail(s.fail("open", err))
		}
		unbounded := cfg.Clone()
		s.openUnbounded = func() (*bun.DB, error) {
			db, err := open(unbounded)
			if err != nil {
				return nil, err
			}
			return s.sqlDialect.NewDB(db), nil
		}
		bounded := cfg.Clone()
		if bounded.Params == nil {
			bounded.Params = map[string]string{}
		}
		maps.Copy(bounded.Params, mysqlLimits(version, s.timeout))
		// The driver's Commit and Rollback take no context: a server that
		// stops answering then would hold them forever. An I/O deadline
		// of d on every read and write bounds them (no read legitimately
		// waits longer: the statement's context ends by then).
		bounded.ReadTimeout, bounded.WriteTimeout = s.timeout, s.timeout
		sqldb.Close()
		if sqldb, err = open(bounded); err != nil {
			return err
		}
	}
	s.db = s.sqlDialect.NewDB(sqldb)
	s.rdb = s.db
	return nil
}

// mysqlLimits are the session variables that make a MySQL or MariaDB
// server (as its VERSION() names it) give up on a statement after d: the
// wait for a row lock, and the statement's run time (MariaDB's
// max_statement_time covers every statement, MySQL's max_execution_time
// only SELECTs).
func mysqlLimits(version string, d time.Duration) map[string]string {
	secs := (d + time.Second - 1) / time.Second
	limits := map[string]string{"innodb_lock_wait_timeout": strconv.FormatInt(int64(secs), 10)}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		limits["max_statement_time"] = strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	} else {
		limits["max_execution_time"] = strconv.FormatInt(max(d.Milliseconds(), 1), 10)
	}
	return limits
}

// MySQLConfig turns mysql://user:pass@host:port/db?params into the driver
// configuration Open connects with. Tools that administer the server
// themselves (creating or copying databases, as the load tool and the
// tests do) use it too, so a URL means the same everywhere.
func MySQLConfig(rawURL string) (*mysql.Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("bunstore: invalid mysql URL")
	}
	host := u.Host
	if host == "" {
		return nil, errors.New("bunstore: invalid mysql URL: a host is required (mysql://user:pass@host:port/db)")
	}
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if dbName == "" || strings.Contains(dbName, "/") {
		return nil, errors.New("bunstore: invalid mysql URL: a database name is required (mysql://user:pass@host:port/db)")
	}
	dsn := "tcp(" + host + ")/" + dbName
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("bunstore: invalid mysql URL parameters: %w", err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.MultiStatements = false
	if _, set := cfg.Params["sql_mode"]; !set {
		// Strict mode: a value too long for its column is an error, never
		// silently truncated.
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params["sql_mode"] = "CONCAT_WS(',', NULLIF(@@sql_mode, ''), 'STRICT_ALL_TABLES')"
	}
	return cfg, nil
}

// mysqlLogger sends the driver's own messages to the store's logger.
type mysqlLogger struct{ l *slog.Logger }

func (m mysqlLogger) Print(v ...any) { m.l.Debug("mysql driver", "message", fmt.Sprint(v...)) }

// sqliteBusyTimeout is how long a SQLite statement waits for a lock another
// connection holds without a storage deadline.
const sqliteBusyTimeout = 10 * time.Second

// openSQLite opens the pools of the SQLite database at path, as
// openPostgres.
func (s *Store) openSQLite(path string, pool func(driver.Connector) *sql.DB) error {
	busy := sqliteBusyTimeout
	if s.timeout > 0 {
		busy = s.timeout
	}
	if path == ":memory:" {
		// An in-memory database lives in its connection: keep exactly one,
		// forever, and run everything on it.
		sqldb := pool(sqliteConnector(sqlitedsn.Store(":memory:", busy, true)))
		sqldb.SetMaxOpenConns(1)
		sqldb.SetMaxIdleConns(1)
		sqldb.SetConnMaxLifetime(0)
		sqldb.SetConnMaxIdleTime(0)
		s.db = s.sqlDialect.NewDB(sqldb)
		s.rdb = s.db
		return nil
	}
	if p, ok := strings.CutPrefix(path, "//"); ok {
		path = p // sqlite:///abs/path.db
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return errors.New("bunstore: invalid sqlite URL: want sqlite:PATH (a file path without ? or #) or sqlite::memory:")
	}
	// One writer connection whose transactions take the write lock at
	// BEGIN, so writers queue instead of failing to upgrade a read lock.
	w := pool(sqliteConnector(sqlitedsn.Store(path, busy, true)))
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r := pool(sqliteConnector(sqlitedsn.Store(path, busy, false)))
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.db = s.sqlDialect.NewDB(w)
	s.rdb = s.sqlDialect.NewDB(r)
	return nil
}

// sqliteConnector, a data source name, connects to the SQLite database it
// names: what sql.Open makes of a name for a driver without connectors of
// its own.
type sqliteConnector string

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	return sqliteshim.Driver().Open(string(c))
}

func (sqliteConnector) Driver() driver.Driver { return sqliteshim.Driver() }

// bound returns ctx with the store's deadline for one operation
// (WithTimeout), or ctx itself when there is none.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// redact replaces the URL in a message by its RedactURL form.
func redact(msg, rawURL string) string {
	return strings.ReplaceAll(msg, rawURL, RedactURL(rawURL))
}

// Ping reports whether the database is reachable (ErrUnavailable if not).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.ping(ctx)
}

func (s *Store) ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return s.fail("ping", err)
	}
	if s.rdb != s.db {
		if err := s.rdb.PingContext(ctx); err != nil {
			return s.fail("ping", err)
		}
	}
	return nil
}

// Close closes the store's connections.
func (s *Store) Close() error {
	if s.leaves != nil {
		s.stopAppender()
	}
	s.stopTextBacklog()
	s.sqlDialect.ClosePrepared()
	errs := []error{s.inserts.close()}
	if s.rdb != nil && s.rdb != s.db {
		errs = append(errs, s.rdb.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}
