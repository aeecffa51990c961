// Package unleashimport reads an Unleash PostgreSQL database (the schema of
// Unleash 5.x to 8.x) and maps it to flagadmin's world (mapping.go):
// users and service accounts, root roles, groups, projects, project
// roles, favorites, features with their lifecycle, API tokens and personal
// access tokens (hashed on the way in), and every event with its id. The
// mapping rules are all in this package (mapping.go); the domain's own
// rules (names, tags, token shapes) are flagadmin's.
//
// Run reads a Source once, in one snapshot, and writes into a Target (a
// store that loads a whole world in one transaction: bunstore and memstore
// have Load), into a seed file (WriteSeed), or nowhere (a dry run); each
// way it returns a Summary of what was imported, skipped and mapped down.
//
// A Follower (follow.go) keeps a store a copy of a live Unleash with the
// same reading and mapping: the import first, then every event in id order
// (gaps.go says how a missing id is known to be settled) and the world's
// changes.
package unleashimport

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Errors of Open, matched with errors.Is. Each error's text is one line
// that says what is wrong without SQL or driver internals.
var (
	// ErrUnreachable: the source database cannot be reached or logged into.
	ErrUnreachable = errors.New("the Unleash database cannot be reached")
	// ErrNotUnleash: the database has no Unleash schema.
	ErrNotUnleash = errors.New("not an Unleash database")
	// ErrUnsupportedVersion: the Unleash schema is older than 5.0.
	ErrUnsupportedVersion = errors.New("unsupported Unleash version")
	// ErrRefused: the source's server answered and refused the connection:
	// the database does not exist, the role or its password is refused, or
	// the role may not connect. A wrong setting, most likely. Such an
	// error is of both kinds, ErrRefused and ErrUnreachable.
	ErrRefused = errors.New("the Unleash database refused the connection")
)

// refusedCodes are PostgreSQL's codes of a connection refused by the
// server for its settings: invalid_catalog_name (no such database),
// invalid_authorization_specification (no such role, no pg_hba entry),
// invalid_password, insufficient_privilege (no CONNECT).
var refusedCodes = []string{"3D000", "28000", "28P01", "42501"}

// kindError is an error that also is of the kind kind (errors.Is) without
// adding to its message.
type kindError struct {
	error
	kind error
}

func (e kindError) Is(target error) bool { return target == e.kind }
func (e kindError) Unwrap() error        { return e.error }

// OldestMigration is the first migration of the oldest supported schema:
// Unleash 5.0 (April 2023). A database whose newest migration is older is
// refused with ErrUnsupportedVersion.
const OldestMigration = "20230420000000"

// NewestKnownMigration is the newest migration of the newest schema this
// importer was tested with: Unleash 8.2.0 (the fixture). A newer schema is
// read all the same (later 8.x releases add tables, not change these), with
// a warning in the summary.
const NewestKnownMigration = "20260902120000"

// requiredTables are the tables every supported schema has and the import reads.
var requiredTables = []string{"migrations", "users", "roles", "role_user", "projects", "features", "events", "api_tokens"}

// optional are the tables and columns that some supported versions lack;
// the import reads them when present.
var optional = []struct{ table, column string }{
	{"project_settings", "project_mode"}, {"projects", "archived_at"},
	{"groups", ""}, {"group_user", ""}, {"group_role", "project"}, {"groups", "root_role_id"},
	{"favorite_projects", ""}, {"favorite_features", ""}, {"feature_tag", ""}, {"feature_lifecycles", ""},
	{"feature_lifecycles", "status"}, {"feature_lifecycles", "status_value"},
	{"api_token_project", ""}, {"api_tokens", "token_name"}, {"api_tokens_v2", ""},
	{"personal_access_tokens", ""}, {"personal_access_tokens", "id"},
	{"users", "is_system"}, {"users", "is_service"}, {"users", "deleted_at"},
	{"events", "created_by_user_id"}, {"events", "group_type"}, {"events", "group_id"},
}

// Source is an open Unleash database.
type Source struct {
	conn *pgx.Conn
	// LastMigration is the name of the newest applied migration, such as
	// "20260902120000-add-user-agent-to-login-history".
	LastMigration string
	// Migrations counts the applied migrations.
	Migrations int
	has        map[string]bool // "table" and "table.column" present
	eventSeq   string          // the sequence of events.id (identity), "" before
}

// Open connects to the Unleash database at rawURL (postgres://...) and
// checks its schema: ErrUnreachable, ErrNotUnleash or ErrUnsupportedVersion
// when it cannot be imported.
func Open(ctx context.Context, rawURL string) (*Source, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: --from must be a PostgreSQL URL such as postgres://user:pass@host:5432/unleash", ErrUnreachable)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "flagadmin" // how the source's pg_stat_activity names it
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && slices.Contains(refusedCodes, pe.Code) {
			return nil, kindError{fmt.Errorf("%w at %s: %s", ErrRefused, redact(rawURL), connectReason(err)), ErrUnreachable}
		}
		return nil, fmt.Errorf("%w at %s: %s", ErrUnreachable, redact(rawURL), connectReason(err))
	}
	s := &Source{conn: conn, has: map[string]bool{}}
	if err := s.inspect(ctx, redact(rawURL)); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

// Close closes the connection.
func (s *Source) Close() error { return s.conn.Close(context.Background()) }

// Has reports whether the schema has the table, or the table's column when
// column is not empty.
func (s *Source) Has(table, column string) bool {
	if column == "" {
		return s.has[table]
	}
	return s.has[table+"."+column]
}

// inspect reads which tables and columns exist and the newest migration.
func (s *Source) inspect(ctx context.Context, where string) error {
	rows, err := s.conn.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = ANY (current_schemas(false))`)
	if err != nil {
		return fmt.Errorf("%w at %s: %s", ErrUnreachable, where, connectReason(err))
	}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return err
		}
		s.has[t], s.has[t+"."+c] = true, true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w at %s: %s", ErrUnreachable, where, connectReason(err))
	}
	var missing []string
	for _, t := range requiredTables {
		if !s.has[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s has no table %s", ErrNotUnleash, where, strings.Join(missing, ", "))
	}
	err = s.conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM migrations), coalesce((SELECT name FROM migrations ORDER BY id DESC LIMIT 1), '')`).
		Scan(&s.Migrations, &s.LastMigration)
	switch {
	case err != nil && otherShape(err):
		return fmt.Errorf("%w: %s has a table migrations that is not Unleash's", ErrNotUnleash, where)
	case err != nil:
		return fmt.Errorf("%w at %s: %s", ErrUnreachable, where, connectReason(err))
	}
	s.LastMigration = strings.TrimPrefix(s.LastMigration, "/")
	stamp := migrationStamp(s.LastMigration)
	if stamp == "" {
		return fmt.Errorf("%w: %s has no Unleash migration (its newest is %q)", ErrNotUnleash, where, s.LastMigration)
	}
	if stamp < OldestMigration {
		return fmt.Errorf("%w: the schema of %s is at migration %s, older than Unleash 5.0 (April 2023); upgrade Unleash to 5.x-8.x first", ErrUnsupportedVersion, where, s.LastMigration)
	}
	return nil
}

// Newer reports whether the schema is newer than the newest this importer
// was tested with.
func (s *Source) Newer() bool { return migrationStamp(s.LastMigration) > NewestKnownMigration }

var stampPattern = regexp.MustCompile(`^(\d{14})-`)

// migrationStamp is the 14-digit time stamp that starts an Unleash
// migration name, or "".
func migrationStamp(name string) string {
	m := stampPattern.FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	return m[1]
}

// otherShape reports whether err says a table has another shape than the
// query expects (a column missing or of another type), as opposed to a
// database that did not answer in time or dropped the connection.
func otherShape(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "42") && pe.Code != "42501" // syntax or access rule, not a privilege
	}
	return errors.As(err, new(pgx.ScanArgError))
}

// connectReason is a short reason for a failure to connect or query,
// without SQL: the server's message, or the network error's gist.
func connectReason(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		err = errors.Unwrap(ce)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && len(msg)-i > 8 {
		msg = msg[i+2:]
	}
	return msg
}

// redact is rawURL without its password.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the source"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	u.RawQuery = ""
	return u.String()
}
