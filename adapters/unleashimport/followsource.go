package unleashimport

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// What a follower reads of the source beyond what an import reads: who the
// source is, whether its event ids can be followed (the gap rule's
// assumptions), the events after a position, the writers of the events
// table, and whether the schema still has what it reads.

// followSource is what a follower reads of an Unleash database, on one
// connection: *Source, or a fake that drives the follower's steps in its
// tests. Each method is a reading; the rules (when an id is settled, when
// the source is another database, when following stops) are the
// follower's.
type followSource interface {
	// identity reads who the source is, and checks that its event ids
	// can be followed (errNotFollowable when they cannot).
	identity(ctx context.Context, name string) (follow.Source, error)
	// schema is the schema as last inspected; reinspect reads it again.
	schema() sourceSchema
	reinspect(ctx context.Context, where string) error
	// lastDrawnID is the largest event id the source has handed out.
	lastDrawnID(ctx context.Context) (int64, error)
	// eventsAfter reads, in one snapshot, at most limit events above
	// after, mapped; ids lists every id read, skipped events' too.
	eventsAfter(ctx context.Context, after int64, limit int) (events []flagadmin.Event, ids []int64, err error)
	// writers are the transactions that hold a write lock on the events
	// table now (the gap rule's readings).
	writers(ctx context.Context) ([]string, error)
	// newestEventID is the largest event id visible now, 0 for none.
	newestEventID(ctx context.Context) (int64, error)
	// readWorldNow reads and maps the world in one snapshot, keeping the
	// flags of prev when what they are mapped from did not change.
	readWorldNow(ctx context.Context, now time.Time, prev *worldState) (*worldState, error)
	// snapshot reads what the first import loads, in one snapshot, and
	// calls use while that snapshot is open.
	snapshot(ctx context.Context, now time.Time, r snapshotReading, use func(*sourceSnapshot) error) error
	// firstCommitted is the smallest id of ranges visible now, 0 for none.
	firstCommitted(ctx context.Context, ranges [][2]int64) (int64, error)
	Close() error
}

var _ followSource = (*Source)(nil)

// sourceSchema is what a follower knows of a source's schema.
type sourceSchema struct {
	// readSet lists what the follower reads of it (Source.readSet).
	readSet []string
	// migration is the newest applied migration, migrations their number.
	migration  string
	migrations int
	// newer: the schema is newer than the newest this package was tested with.
	newer bool
}

// schema implements followSource.
func (s *Source) schema() sourceSchema {
	return sourceSchema{readSet: s.readSet(), migration: s.LastMigration, migrations: s.Migrations, newer: s.Newer()}
}

// errNotFollowable: the source cannot be followed as it is (a standby, a
// sequence that hands out ids out of order). Following stops for good.
var errNotFollowable = errors.New("the Unleash database cannot be followed")

// readColumns are the columns the import and the follower read, by table
// (read.go's queries): the schema a follower relies on. A column some
// schemas lack is read only when present (reader.col).
var readColumns = map[string][]string{
	"roles":                  {"id", "name", "type"},
	"role_user":              {"user_id", "role_id", "project"},
	"users":                  {"id", "name", "username", "email", "is_service", "is_system", "deleted_at"},
	"groups":                 {"id", "name", "root_role_id"},
	"group_user":             {"group_id", "user_id"},
	"group_role":             {"group_id", "role_id", "project"},
	"projects":               {"id", "name", "description", "created_at", "archived_at"},
	"project_settings":       {"project", "project_mode"},
	"favorite_projects":      {"project", "user_id"},
	"favorite_features":      {},
	"feature_tag":            {"feature_name", "tag_type", "tag_value"},
	"feature_lifecycles":     {"feature", "stage", "created_at", "status", "status_value"},
	"features":               {"name", "project", "type", "stale", "created_at", "archived_at", "last_seen_at"},
	"last_seen_at_metrics":   {"feature_name", "last_seen_at"},
	"api_token_project":      {"secret", "project"},
	"api_tokens":             {"secret", "token_name", "username", "type", "environment", "expires_at", "created_at"},
	"api_tokens_v2":          {"token_name", "type", "created_at"},
	"personal_access_tokens": {"id", "secret", "description", "user_id", "expires_at", "created_at"},
	"events":                 unleashEventColumns,
}

// readSet lists the tables and columns of readColumns the schema has
// ("table" and "table.column"), sorted: what a follower reads of it.
func (s *Source) readSet() []string {
	var out []string
	for table, cols := range readColumns {
		if !s.has[table] {
			continue
		}
		out = append(out, table)
		for _, c := range cols {
			if s.has[table+"."+c] {
				out = append(out, table+"."+c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// stillHas stops following (an error wrapping ErrFollowStopped) when the
// schema now lost an entry of was, what the follower read of it when it
// started (nil: nothing to compare yet).
func stillHas(was []string, now sourceSchema, name string) error {
	var lost []string
	for _, entry := range was {
		if !slices.Contains(now.readSet, entry) {
			lost = append(lost, entry)
		}
	}
	if len(lost) > 0 {
		return stopf("the Unleash database at %s no longer has %s, which flagadmin reads (its schema is at migration %s)", name, describeLost(lost), now.migration)
	}
	return nil
}

// reinspect reads the schema again (after a query failed on a missing
// table or column, or on a new connection).
func (s *Source) reinspect(ctx context.Context, where string) error {
	s.has = map[string]bool{}
	return s.inspect(ctx, where)
}

// isSchemaError reports whether err is PostgreSQL's undefined table or
// undefined column: the schema changed under the reader.
func isSchemaError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "42703")
}

// SourceName is how a follower names the source in messages and in the
// follow state: the URL without credentials or parameters.
func SourceName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the Unleash database"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// identity reads who the source is, and checks that its event ids can be
// followed (the gap rule's assumptions): a primary, not a standby; an
// events.id drawn from a sequence with CACHE 1 and a positive increment.
func (s *Source) identity(ctx context.Context, name string) (follow.Source, error) {
	src := follow.Source{URL: name}
	var standby bool
	if err := s.conn.QueryRow(ctx, `SELECT current_database(), pg_is_in_recovery()`).Scan(&src.Database, &standby); err != nil {
		return src, sourceFailure(err)
	}
	if standby {
		return src, fmt.Errorf("%w: %s is a standby (in recovery); follow the primary: a standby does not show the primary's open transactions, which the follower waits for", errNotFollowable, name)
	}
	// The cluster's identity. pg_control_system() is open to every role
	// by default; where it is not, the database name alone identifies.
	var sysID *string
	if err := s.conn.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&sysID); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			return src, sourceFailure(err)
		}
	} else if sysID != nil {
		src.SystemID = *sysID
	}
	var seq *string
	if err := s.conn.QueryRow(ctx, `SELECT pg_get_serial_sequence('events', 'id')`).Scan(&seq); err != nil {
		return src, sourceFailure(err)
	}
	if seq == nil {
		return src, fmt.Errorf("%w: events.id of %s is not drawn from a sequence", errNotFollowable, name)
	}
	var cache, increment int64
	err := s.conn.QueryRow(ctx, `SELECT seqcache, seqincrement FROM pg_sequence WHERE seqrelid = $1::regclass`, *seq).Scan(&cache, &increment)
	if err != nil {
		return src, sourceFailure(err)
	}
	s.eventSeq = *seq
	if cache != 1 || increment <= 0 {
		return src, fmt.Errorf("%w: the sequence %s of %s has CACHE %d and INCREMENT %d; event ids are followed in order only with CACHE 1 and a positive increment (Unleash's own: ALTER SEQUENCE %s CACHE 1)",
			errNotFollowable, *seq, name, cache, increment, *seq)
	}
	return src, nil
}

// writers returns the transactions that hold a write lock on the events
// table now (pg_locks' virtualtransaction, fast-path locks included),
// sorted: the gap rule's readings.
func (s *Source) writers(ctx context.Context) ([]string, error) {
	rows, err := s.conn.Query(ctx, `SELECT DISTINCT virtualtransaction FROM pg_locks
		WHERE locktype = 'relation' AND relation = 'events'::regclass
		  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND granted AND mode NOT IN ('AccessShareLock', 'RowShareLock')
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// newestEventID returns the largest event id the source shows now, 0 for none.
func (s *Source) newestEventID(ctx context.Context) (int64, error) {
	var id *int64
	if err := s.conn.QueryRow(ctx, `SELECT max(id) FROM events`).Scan(&id); err != nil {
		return 0, err
	}
	if id == nil {
		return 0, nil
	}
	return *id, nil
}

// lastDrawnID returns the largest event id the source has handed out: the
// larger of its newest event and the last value of the sequence events.id
// is drawn from (when the role may read it). Events deleted by hand do not
// move the sequence back; a restore from an older backup does.
func (s *Source) lastDrawnID(ctx context.Context) (int64, error) {
	newest, err := s.newestEventID(ctx)
	if err != nil || s.eventSeq == "" {
		return newest, err
	}
	var last *int64
	if err := s.conn.QueryRow(ctx, `SELECT pg_sequence_last_value($1::regclass)`, s.eventSeq).Scan(&last); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return newest, nil // no privilege on the sequence: the events alone
		}
		return 0, err
	}
	if last != nil {
		newest = max(newest, *last)
	}
	return newest, nil
}

// eventsAfter reads, in one statement (one snapshot), at most limit events
// whose id is above after, id ascending, mapped as the import maps them.
func (s *Source) eventsAfter(ctx context.Context, after int64, limit int) ([]flagadmin.Event, []int64, error) {
	r := &reader{src: s}
	rows, err := s.conn.Query(ctx, `SELECT `+r.eventColumns()+` FROM events WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	c := &Count{Skipped: map[string]int{}, MappedDown: map[string]int{}}
	var events []flagadmin.Event
	var ids []int64
	for rows.Next() {
		e, ok, err := scanEvent(rows, eventMode{}, c)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, e.ID) // a skipped event is settled all the same
		if ok {
			events = append(events, e)
		}
	}
	return events, ids, rows.Err()
}

// readWorldNow reads and maps the world (everything but the events) in
// one snapshot, as the import does; now is the time put where Unleash
// has none. The flags of prev (the world as last read, or nil) are kept
// when what they are mapped from has not changed (reader.featuresKey).
func (s *Source) readWorldNow(ctx context.Context, now time.Time, prev *worldState) (*worldState, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	r := &reader{src: s, tx: tx, sum: &Summary{}, prog: newProgress(nil), keyFeatures: true, reuse: prev}
	w, err := r.readWorld(ctx, now)
	if err != nil {
		return nil, err
	}
	return stateOf(w), tx.Commit(ctx)
}

// snapshotReading tunes the first import's reading of the world and the
// events.
type snapshotReading struct {
	sum       *Summary  // receives the counts
	prog      *progress // receives the progress
	batchSize int       // how many events are emitted at a time
}

// sourceSnapshot is what the first import loads, as one snapshot of the
// source shows it.
type sourceSnapshot struct {
	world *world
	// newest is the largest event id visible; ranges are the runs of ids
	// missing below it (gapRanges).
	newest int64
	ranges [][2]int64
	// events reads the snapshot's events up to upTo, id ascending, mapped,
	// in batches to emit.
	events func(upTo int64, emit func([]flagadmin.Event) error) error
}

// snapshot implements followSource: it reads in one read-only snapshot
// the world (with the flags' key, reader.featuresKey), the newest event
// id and the missing ids, and calls use while the snapshot is open.
func (s *Source) snapshot(ctx context.Context, now time.Time, opts snapshotReading, use func(*sourceSnapshot) error) error {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	r := &reader{src: s, tx: tx, sum: opts.sum, prog: opts.prog, batchSize: opts.batchSize, keyFeatures: true}
	snap := &sourceSnapshot{events: func(upTo int64, emit func([]flagadmin.Event) error) error {
		return r.readEvents(ctx, eventMode{upTo: upTo}, emit)
	}}
	if snap.world, err = r.readWorld(ctx, now); err != nil {
		return err
	}
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM events`).Scan(&snap.newest); err != nil {
		return err
	}
	if snap.ranges, err = gapRanges(ctx, tx); err != nil {
		return err
	}
	return use(snap)
}

// gapRanges returns the runs of ids missing between the smallest id
// (from 1) and the largest visible in tx's snapshot, ascending.
func gapRanges(ctx context.Context, tx pgx.Tx) ([][2]int64, error) {
	rows, err := tx.Query(ctx, `SELECT prev + 1, id - 1 FROM (
			SELECT id, coalesce(lag(id) OVER (ORDER BY id), 0) AS prev FROM events) t
		WHERE id > prev + 1 ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]int64, error) {
		var g [2]int64
		err := row.Scan(&g[0], &g[1])
		return g, err
	})
}

// firstCommitted returns the smallest id of ranges that the source shows
// now (a new snapshot), 0 when none.
func (s *Source) firstCommitted(ctx context.Context, ranges [][2]int64) (int64, error) {
	if len(ranges) == 0 {
		return 0, nil
	}
	lo, hi := make([]int64, len(ranges)), make([]int64, len(ranges))
	for i, g := range ranges {
		lo[i], hi[i] = g[0], g[1]
	}
	var id *int64
	err := s.conn.QueryRow(ctx, `SELECT min(e.id) FROM events e
		JOIN unnest($1::bigint[], $2::bigint[]) AS r(lo, hi) ON e.id BETWEEN r.lo AND r.hi`, lo, hi).Scan(&id)
	if err != nil || id == nil {
		return 0, err
	}
	return *id, nil
}

// describeLost says what the schema lost, for the message that stops
// following.
func describeLost(lost []string) string {
	if len(lost) > 6 {
		return strings.Join(lost[:6], ", ") + fmt.Sprintf(" and %d more", len(lost)-6)
	}
	return strings.Join(lost, ", ")
}
