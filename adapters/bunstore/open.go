package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.Store = (*Store)(nil)

// Store is a flagadmin.Store over PostgreSQL, MySQL/MariaDB or SQLite. It is
// safe for concurrent use. Create it with Open and release it with Close.
type Store struct {
	// db runs writes, and reads too except on a SQLite file.
	db *bun.DB
	// rdb runs reads: a pool of readers on a SQLite file, else db.
	rdb     *bun.DB
	dialect dialect.Name
	log     *slog.Logger
	// trgmWarn logs once that pg_trgm is unavailable.
	trgmWarn sync.Once
	// afterChange, when set (by tests), runs between a state change and the
	// insert of its event, inside the transaction; an error aborts it.
	afterChange func(op string) error
}

// Option configures Open.
type Option func(*options)

type options struct {
	migrate bool
	logger  *slog.Logger
}

// WithoutMigrate makes Open leave the schema alone; call Migrate yourself
// (for instance from a separate migrate command).
func WithoutMigrate() Option { return func(o *options) { o.migrate = false } }

// WithLogger sets where the store logs storage failures (with their driver
// detail, which never reaches callers) and notices such as a missing
// pg_trgm. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Open connects to the database named by rawURL, checks that it is
// reachable, and applies the migrations unless WithoutMigrate is given.
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
	o := options{migrate: true, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Store{log: o.logger}
	var err error
	scheme, _, _ := strings.Cut(rawURL, ":")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		err = s.openPostgres(rawURL)
	case "mysql":
		err = s.openMySQL(rawURL)
	case "sqlite":
		err = s.openSQLite(strings.TrimPrefix(rawURL[len(scheme):], ":"))
	default:
		return nil, fmt.Errorf("bunstore: unsupported database URL scheme %q: use postgres://, mysql:// or sqlite:", scheme)
	}
	if err != nil {
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, withDetail(err)
	}
	if o.migrate {
		if err := s.Migrate(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// maxConns bounds the connections to a PostgreSQL or MySQL server. All of
// them may stay idle (until ConnMaxIdleTime): with fewer idle slots than
// open connections, a burst of concurrent requests closes the surplus on
// release and opens new ones on the next burst, a server-side fork (or
// thread) and authentication for every such request.
const maxConns = 20

func (s *Store) openPostgres(rawURL string) error {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return errors.New("bunstore: invalid postgres URL: " + redact(err.Error(), rawURL))
	}
	// Bun writes arguments into the SQL text itself, so every statement is
	// distinct: preparing and caching them would only cost round trips.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(maxConns)
	sqldb.SetMaxIdleConns(maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	s.dialect = dialect.PG
	s.db = bun.NewDB(sqldb, pgdialect.New())
	s.rdb = s.db
	return nil
}

func (s *Store) openMySQL(rawURL string) error {
	cfg, err := mysqlConfig(rawURL)
	if err != nil {
		return err
	}
	cfg.Logger = mysqlLogger{s.log}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("bunstore: invalid mysql URL: %w", err)
	}
	sqldb := sql.OpenDB(connector)
	sqldb.SetMaxOpenConns(maxConns)
	sqldb.SetMaxIdleConns(maxConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	// The dialect asks the server for its version when created: check that
	// it answers first, so a down server is reported by Ping, not logged.
	if err := sqldb.Ping(); err != nil {
		sqldb.Close()
		return withDetail(s.fail("open", err))
	}
	s.dialect = dialect.MySQL
	s.db = bun.NewDB(sqldb, mysqldialect.New())
	s.rdb = s.db
	return nil
}

// mysqlConfig turns mysql://user:pass@host:port/db?params into a driver config.
func mysqlConfig(rawURL string) (*mysql.Config, error) {
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

// sqliteParams are set on every SQLite connection.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"

func (s *Store) openSQLite(path string) error {
	s.dialect = dialect.SQLite
	if path == ":memory:" {
		// An in-memory database lives in its connection: keep exactly one,
		// forever, and run everything on it.
		sqldb, err := sql.Open(sqliteshim.ShimName, ":memory:?"+sqliteParams+"&_txlock=immediate")
		if err != nil {
			return fmt.Errorf("bunstore: sqlite: %w", err)
		}
		sqldb.SetMaxOpenConns(1)
		sqldb.SetMaxIdleConns(1)
		sqldb.SetConnMaxLifetime(0)
		sqldb.SetConnMaxIdleTime(0)
		s.db = bun.NewDB(sqldb, sqlitedialect.New())
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
	w, err := sql.Open(sqliteshim.ShimName, path+"?"+sqliteParams+"&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("bunstore: sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open(sqliteshim.ShimName, path+"?"+sqliteParams)
	if err != nil {
		w.Close()
		return fmt.Errorf("bunstore: sqlite: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.db = bun.NewDB(w, sqlitedialect.New())
	s.rdb = bun.NewDB(r, sqlitedialect.New())
	return nil
}

// redact replaces the URL in a message by its RedactURL form.
func redact(msg, rawURL string) string {
	return strings.ReplaceAll(msg, rawURL, RedactURL(rawURL))
}

// Ping reports whether the database is reachable (ErrUnavailable if not).
func (s *Store) Ping(ctx context.Context) error {
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
	var errs []error
	if s.rdb != nil && s.rdb != s.db {
		errs = append(errs, s.rdb.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	return errors.Join(errs...)
}
