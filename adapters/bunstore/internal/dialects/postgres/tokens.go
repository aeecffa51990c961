package postgres

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
)

// The token index of the search texts: for each text, a GIN index over its
// tokens (stored.SearchTokenPattern; flagadmin_search_tokens), and
// search_tokens, every token of every event's texts, to which each insert
// of events adds theirs, in its transaction (AddSearchTokens, with the
// tokens the writer splits the texts into: stored.TokenSet, the same
// tokens as flagadmin_search_tokens). A free-text query finds the tokens
// that contain its longest run without a delimiter in search_tokens (by
// their pg_trgm index, made by ensureTrigramIndex: short rows, each token
// once), then the events that hold one in the GIN index, without the work
// of a trigram index of the texts over their frequent trigrams
// (internal/textindex writes the condition).
//
// A token longer than stored.MaxSearchTokenChars is indexed as tooLong, a
// string no token can be (a delimiter), and left out of search_tokens: GIN
// and B-tree entries have a size limit, and such a token would make its
// event's insert fail. A query matches every event with a long token as a
// candidate, and checks each candidate's text (strpos).
//
// search_tokens keeps the tokens of events retention removed: they match
// no event.
//
// The GIN indexes leave out the events marked (stored.LaterTextColumn)
// as left to the backlog by a follower's large batch, whose insert then
// does none of their work, nor adds their tokens to search_tokens; the
// store indexes them in the background (TextBacklog, MarkLaterText).
const (
	tooLong = `'"'`
	// tokensTrigger names the trigger that databases made by earlier
	// versions have, which adds the tokens of inserted events to
	// search_tokens by splitting each text again in SQL; a migration
	// drops it (DropTokensTrigger), since the writer adds them.
	tokensTrigger = "events_search_tokens"
)

// tokenIndexStatements make the token index over the events stored, in a
// transaction that keeps inserts out (the lock) while search_tokens is
// filled. Every statement may run again.
var tokenIndexStatements = []string{
	"LOCK TABLE events IN SHARE MODE",
	"SET LOCAL maintenance_work_mem = '256MB'",
	`CREATE OR REPLACE FUNCTION flagadmin_search_tokens(text) RETURNS text[] LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
	SELECT ARRAY(SELECT CASE WHEN length(t) > ` + strconv.Itoa(stored.MaxSearchTokenChars) + ` THEN ` + tooLong + ` ELSE t END
		FROM unnest(regexp_split_to_array($1, '` + stored.SearchTokenPattern + `')) AS t WHERE t <> '')
$f$`,
	"CREATE TABLE IF NOT EXISTS search_tokens (token TEXT PRIMARY KEY)",
	"INSERT INTO search_tokens (token) " + newTokens("events"),
	"CREATE INDEX IF NOT EXISTS events_payload_tokens ON events USING gin (flagadmin_search_tokens(search_payload))",
	"CREATE INDEX IF NOT EXISTS events_meta_tokens ON events USING gin (flagadmin_search_tokens(search_meta))",
}

// newTokens is what follows INSERT INTO search_tokens (token): the
// tokens of the events of table, in order, those it holds already
// skipped.
func newTokens(table string) string {
	return strings.Join([]string{
		"SELECT DISTINCT t FROM " + table + " AS e,",
		"unnest(flagadmin_search_tokens(e.search_payload) || flagadmin_search_tokens(e.search_meta)) AS t",
		"WHERE t <> " + tooLong + " ORDER BY 1 ON CONFLICT DO NOTHING",
	}, " ")
}

// TokenIndex makes the token index of the search texts over the events
// stored, in one transaction.
func (Dialect) TokenIndex(ctx context.Context, db *bun.DB) error {
	return execInTx(ctx, db, tokenIndexStatements)
}

// execInTx runs stmts in order in one transaction of db.
func execInTx(ctx context.Context, db *bun.DB, stmts []string) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, stmt := range stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddSearchTokens adds to search_tokens those of tokens it does not hold
// (the tokens of events inserted in db's transaction, stored.TokenSet),
// but the long ones (stored.LongSearchToken, indexed as the marker), in
// the order given: writers take the event order lock first, so they add
// tokens one at a time.
func (Dialect) AddSearchTokens(ctx context.Context, db bun.IDB, tokens []string) error {
	tokens = slices.DeleteFunc(tokens, stored.LongSearchToken)
	if len(tokens) == 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, "INSERT INTO search_tokens (token) SELECT unnest(?::text[]) ON CONFLICT DO NOTHING", pgdialect.Array(tokens))
	return err
}

// inlinedTokensStatement gives flagadmin_search_tokens, in a migration, a
// body PostgreSQL inlines into the expressions of the GIN indexes and of
// the queries: built-in functions only, no subquery (a SQL function with
// one is never inlined: each call ran its own plans, the array's subquery
// and unnest, a fifth of the database's CPU when a follower copies
// events, whose every insert computes the function for both indexes).
// A text of at most stored.MaxSearchTokenChars characters, which can hold
// no token too long to be indexed, is split by one regular expression,
// its empty tokens removed; in a longer one each run of more characters
// without a delimiter is first replaced by longRun, a run no token can be
// (it is longer), which the split array then holds in its place and
// array_replace turns into the marker. The tokens are the same for every
// text as the first body's (NULL for NULL: the function is no longer
// strict, which inlining requires of a CASE), so the indexes made
// before stay valid. PostgreSQL's regular expressions count at most 255
// repetitions: a long run is 255, then one, then one or more.
var inlinedTokensStatement = func() string {
	n := stored.MaxSearchTokenChars
	run := "[^" + strings.TrimSuffix(strings.TrimPrefix(stored.SearchTokenPattern, "["), "]+") + "]"
	longRun := "'" + strings.Repeat("x", n+1) + "'"
	return `CREATE OR REPLACE FUNCTION flagadmin_search_tokens(text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
	SELECT CASE WHEN length($1) <= ` + strconv.Itoa(n) + `
		THEN array_remove(regexp_split_to_array($1, '` + stored.SearchTokenPattern + `'), '')
		ELSE array_replace(array_remove(regexp_split_to_array(
			regexp_replace($1, '` + run + `{255}` + run + run + `+', ` + longRun + `, 'g'),
			'` + stored.SearchTokenPattern + `'), ''), ` + longRun + `, ` + tooLong + `) END
$f$`
}()

// InlineTokens gives the token function its inlined body
// (inlinedTokensStatement), in a migration, where the token index
// exists.
func (Dialect) InlineTokens(ctx context.Context, db *bun.DB) error {
	var exists bool
	if err := db.NewRaw("SELECT to_regprocedure('flagadmin_search_tokens(text)') IS NOT NULL").Scan(ctx, &exists); err != nil || !exists {
		return err
	}
	_, err := db.ExecContext(ctx, inlinedTokensStatement)
	return err
}

// pendingListLimit is the gin_pending_list_limit, in kB, of the token
// indexes and of their vocabulary's trigram index (pendingIndexes): the
// most a GIN index keeps in its pending list, the entries of recent
// inserts not yet merged into its tree, which every search reads whole.
// At PostgreSQL's default of 4 MB the list holds the entries of about
// 18,000 events before an insert merges it (11,129 events took 301 of its
// 8 kB pages): after 6,000-8,000 single writes, free text answered 442-499
// requests a second instead of 1,054-1,077 with this limit, at which an
// insert merges the list every 50 or so events, and writes were as fast
// (1,000,000 events, BENCHMARKS.md).
const pendingListLimit = 64

// pendingIndexes are the GIN indexes whose pending list pendingListLimit
// bounds.
var pendingIndexes = []string{"events_payload_tokens", "events_meta_tokens", tokensIndex}

// LimitTextPending sets, in a migration, the pending list limit of each
// of pendingIndexes that exists to pendingListLimit, then merges its
// pending list. An index made later (the trigram index, once pg_trgm is
// there) is made with it; a load rebuilds each index as it was.
func (Dialect) LimitTextPending(ctx context.Context, db *bun.DB) error {
	for _, name := range pendingIndexes {
		var n int
		if err := db.QueryRowContext(ctx, Dialect{}.IndexExistsSQL(), name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if _, err := db.ExecContext(ctx, "ALTER INDEX ? SET (gin_pending_list_limit = "+strconv.Itoa(pendingListLimit)+")", bun.Ident(name)); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, "SELECT gin_clean_pending_list(CAST(? AS regclass))", name); err != nil {
			return err
		}
	}
	return nil
}

// DropTextInsertTrigger does nothing: the token indexes are GIN indexes
// of events, which PostgreSQL keeps as it inserts each row.
func (Dialect) DropTextInsertTrigger(context.Context, *bun.DB) error { return nil }

// DropTokensTrigger drops, in a migration, the trigger that added the
// tokens of inserted events to search_tokens, and its function: the
// writer adds them (AddSearchTokens).
func (Dialect) DropTokensTrigger(ctx context.Context, db *bun.DB) error {
	for _, stmt := range []string{"DROP TRIGGER IF EXISTS " + tokensTrigger + " ON events", "DROP FUNCTION IF EXISTS flagadmin_add_search_tokens()"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// markLaterStatements make the marked events' column, false for every
// event stored; the pending range, events_text_pending, as SQLite's;
// an index of the marked events, which a query scans (internal/textindex);
// and the GIN indexes of the tokens again, each under its name, over the
// events not marked only: an insert of marked events does none of their
// work. Each index is built anew over every event stored (1m20s for the
// migration at 1,000,000 events, writes held meanwhile), in one
// transaction: a failure leaves the schema as it was.
var markLaterStatements = func() []string {
	stmts := []string{
		"ALTER TABLE events ADD COLUMN IF NOT EXISTS " + stored.LaterTextColumn + " BOOLEAN NOT NULL DEFAULT false",
		`CREATE TABLE IF NOT EXISTS events_text_pending (
	id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	from_id BIGINT NOT NULL,
	to_id BIGINT NOT NULL
)`,
		"CREATE INDEX IF NOT EXISTS events_text_later ON events (id) WHERE " + stored.LaterTextColumn,
		"SET LOCAL maintenance_work_mem = '256MB'",
	}
	for _, ix := range []struct{ name, column string }{{"events_payload_tokens", "search_payload"}, {"events_meta_tokens", "search_meta"}} {
		stmts = append(stmts,
			"CREATE INDEX "+ix.name+"_unmarked ON events USING gin (flagadmin_search_tokens("+ix.column+")) WHERE NOT "+stored.LaterTextColumn,
			"DROP INDEX IF EXISTS "+ix.name,
			"ALTER INDEX "+ix.name+"_unmarked RENAME TO "+ix.name)
	}
	return stmts
}()

// MarkLaterText lets a follower's large batches leave the token index of
// their events to the backlog (TextBacklog), in a migration: the
// statements of markLaterStatements, in one transaction.
func (Dialect) MarkLaterText(ctx context.Context, db *bun.DB) error {
	return execInTx(ctx, db, markLaterStatements)
}

// TextBacklog indexes the tokens of the events a follower's batches left
// pending and marked (stored.LaterTextColumn), a range at a time: Fill
// clears the mark, and the token indexes, partial, take each event as
// PostgreSQL writes its new version (the store adds the tokens to
// search_tokens).
// There is nothing to merge. Pending locks the range's row: a follower
// that extends the range waits for the batch being filled, and one that
// finds it done and deleted starts a new one.
func (Dialect) TextBacklog() (indexbuild.Backlog, bool) {
	return indexbuild.Backlog{
		Pending: "SELECT from_id, to_id FROM events_text_pending FOR UPDATE",
		Fill:    "UPDATE events SET " + stored.LaterTextColumn + " = false WHERE id > ? AND id <= ? AND " + stored.LaterTextColumn,
		Advance: "UPDATE events_text_pending SET from_id = ?",
		Done:    "DELETE FROM events_text_pending WHERE from_id >= to_id",
		Start:   "INSERT INTO events_text_pending (id, from_id, to_id) VALUES (1, ?, ?)",
		Extend:  "UPDATE events_text_pending SET to_id = ?",
		Mark:    stored.LaterTextColumn,
	}, true
}

// TextTokens does nothing: the token index came in a migration of its
// own (TokenIndex).
func (Dialect) TextTokens(context.Context, *bun.DB) error { return nil }
