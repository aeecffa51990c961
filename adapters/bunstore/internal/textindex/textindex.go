// Package textindex is the store's index of free-text event queries, a
// speed-up (bunstore.TextIndex) over scanning the search texts:
//
//   - PostgreSQL: one pg_trgm GIN index per search text (payloadIndex,
//     metaIndex), created by EnsureTrigramIndexes after the migrations when
//     the extension is available. PostgreSQL serves the store's LIKE
//     filters from them by itself; nothing reads them by name.
//   - SQLite: events_text, a contentless FTS5 table with the trigram
//     tokenizer and full detail over both texts (the baseline schema
//     creates it and its triggers), which answers a substring query of 3
//     or more characters exactly from the index (Match), without reading
//     the events.
//   - MySQL/MariaDB: none (no substring index); queries scan.
package textindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Match returns the condition that keeps the events whose search texts in
// scope contain text, read from SQLite's events_text, and whether the
// index answers text exactly (usable); when it does not, the caller scans
// the texts.
//
// The query is text as one quoted phrase (its trigrams at consecutive
// positions, so an exact substring), inside search_payload only for the
// payload scope, in either column otherwise (a phrase never spans two
// columns). In an FTS5 string every character is literal but the double
// quote, written twice.
func Match(text string, scope flagadmin.TextScope) (sqlq.Fragment, bool) {
	if !usable(text) {
		return sqlq.Fragment{}, false
	}
	phrase := `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
	if scope == flagadmin.TextPayload {
		phrase = "search_payload : " + phrase
	}
	return sqlq.F("id IN (SELECT rowid FROM events_text WHERE events_text MATCH ?)", phrase), true
}

// usable reports whether events_text answers a query for text exactly. It
// does when text has at least 3 characters (one trigram) and every
// character is indexed as itself: the trigram tokenizer reads U+FFFE,
// U+FFFF and invalid UTF-8 as U+FFFD and skips NUL, so queries with those,
// or with any other control character, are matched by a scan instead.
// Queries from the HTTP API never contain control characters and are
// valid UTF-8.
//
// The tokenizer would also skip a NUL in a stored text, so a text holding
// one would match as if it were not there; no write of the store can
// store one (Bun's SQLite formatting refuses it, as PostgreSQL does).
func usable(text string) bool {
	if !utf8.ValidString(text) || utf8.RuneCountInString(text) < 3 {
		return false
	}
	for _, r := range text {
		if r < 0x20 || r == 0x7f || r >= utf8.RuneError && r <= 0xFFFF {
			return false
		}
	}
	return true
}

// SQLiteRefill are the statements that fill events_text from the events,
// for a bulk load that dropped its triggers: Fill, between Before and
// After, then Merge. FTS5 flushes its pending terms to a new segment each
// time they pass hashsize (1 MiB by default), and merges segments as they
// pile up: with 32 MiB (Before) the fill of a million events writes a
// thirtieth of the segments and takes about half the time; After sets the
// default again.
//
// Merge then merges the index into one segment (FTS5's optimize). A fill
// leaves up to three large segments on each level, so the writes after
// it soon cascade into merges of those, and FTS5 merges a term's whole
// list of rows at once: with trigrams, a list of nearly every event. On
// SQLite's one writer connection every write waits for such a merge
// (2.4 s on 1,000,000 events; 28 ms at most once merged: measured with
// scripts/bench-log.sh, docs/benchmarks-archive.md). Merged, the next merges are of the
// segments written since, small until they have grown to the index's size.
var SQLiteRefill = struct{ Before, Fill, After, Merge string }{
	hashSize(32 << 20),
	"INSERT INTO events_text (rowid, search_payload, search_meta) SELECT id, search_payload, search_meta FROM events",
	hashSize(1 << 20),
	"INSERT INTO events_text (events_text) VALUES ('optimize')",
}

// hashSize sets the pending-terms size of events_text.
func hashSize(bytes int) string {
	return fmt.Sprintf("INSERT INTO events_text (events_text, rank) VALUES ('hashsize', %d)", bytes)
}

// The pg_trgm indexes over the search texts, one per text. oldIndex, one
// index over both texts joined, is dropped where a database holds it: it
// made every query-string search recheck two LIKEs, one on a
// concatenation, per candidate row.
const (
	payloadIndex = "events_payload_trgm"
	metaIndex    = "events_meta_trgm"
	oldIndex     = "events_search_trgm"
)

// EnsureTrigramIndexes creates the pg_trgm GIN indexes over the search
// texts unless they exist, and drops oldIndex, in one transaction. It
// creates the extension if it is missing and the role may; if it cannot,
// it calls unavailable with the reason and returns nil: the store works
// without the indexes (free-text queries then scan). The caller holds the
// migration lock.
func EnsureTrigramIndexes(ctx context.Context, db *bun.DB, unavailable func(cause error)) error {
	var missing bool
	err := db.QueryRowContext(ctx,
		"SELECT to_regclass(quote_ident(current_schema()) || '.' || ?) IS NULL OR to_regclass(quote_ident(current_schema()) || '.' || ?) IS NULL",
		payloadIndex, metaIndex).Scan(&missing)
	if err != nil || !missing {
		return err
	}
	schema, err := trigramSchema(ctx, db)
	if err != nil {
		return err
	}
	if schema == "" {
		if _, createErr := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); createErr != nil {
			// Another session may have created it meanwhile.
			if schema, err = trigramSchema(ctx, db); err != nil || schema == "" {
				if err == nil {
					unavailable(createErr)
				}
				return err
			}
		} else if schema, err = trigramSchema(ctx, db); err != nil {
			return err
		}
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// A GIN index builds faster with more memory (the default is 64MB).
		if _, err := tx.ExecContext(ctx, "SET LOCAL maintenance_work_mem = '256MB'"); err != nil {
			return err
		}
		for _, ix := range []struct{ name, column string }{{payloadIndex, "search_payload"}, {metaIndex, "search_meta"}} {
			if _, err := tx.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS ? ON events USING gin (? ?.gin_trgm_ops)",
				bun.Ident(ix.name), bun.Ident(ix.column), bun.Ident(schema)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "DROP INDEX IF EXISTS ?", bun.Ident(oldIndex))
		return err
	})
}

// trigramSchema returns the schema pg_trgm is installed in, or "" if it
// is not.
func trigramSchema(ctx context.Context, db bun.IDB) (string, error) {
	var schema string
	err := db.QueryRowContext(ctx, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&schema)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return schema, err
}
