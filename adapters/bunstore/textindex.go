package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// The indexes of free-text queries (textsearch.go):
//
//   - PostgreSQL: one pg_trgm GIN index per search text (payloadTrigramIndex,
//     metaTrigramIndex), created by ensureTrigramIndexes after the
//     migrations, when the extension is available. They replace the index
//     over both texts joined (oldTrigramIndex), which made every query-string
//     search recheck two LIKEs, one on a concatenation, per candidate row.
//   - SQLite: sqliteTextIndex, a contentless FTS5 table with the trigram
//     tokenizer and full detail over both texts, which answers a substring
//     query of 3 or more characters exactly from the index (a phrase of
//     consecutive trigrams), without reading the events. It replaces
//     events_fts (sqliteFTS), whose candidates were rechecked against the
//     events table.
//   - MySQL/MariaDB: none (no substring index); queries scan.
const (
	payloadTrigramIndex = "events_payload_trgm"
	metaTrigramIndex    = "events_meta_trgm"
	oldTrigramIndex     = "events_search_trgm"
)

// migrateTextIndex is the Up of migration text_search: on SQLite it replaces
// events_fts by events_text and fills it from the events already there. On
// PostgreSQL the indexes depend on an extension the role may not be able to
// create, so ensureTrigramIndexes, which runs after the migrations under the
// same lock, builds them; MySQL has none.
func migrateTextIndex(ctx context.Context, db *bun.DB) error {
	if db.Dialect().Name() != dialect.SQLite {
		return nil
	}
	return execAll(ctx, db, append(dropSQLiteFTS, sqliteTextIndex...))
}

// unmigrateTextIndex is the Down of migration text_search.
func unmigrateTextIndex(ctx context.Context, db *bun.DB) error {
	switch db.Dialect().Name() {
	case dialect.SQLite:
		return execAll(ctx, db, append(dropSQLiteTextIndex, sqliteFTS...))
	case dialect.PG:
		// Back to the single index, when pg_trgm is there to build it.
		schema, err := trigramSchemaOf(ctx, db)
		if err != nil || schema == "" {
			return err
		}
		return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{"DROP INDEX IF EXISTS ?", []any{bun.Ident(payloadTrigramIndex)}},
				{"DROP INDEX IF EXISTS ?", []any{bun.Ident(metaTrigramIndex)}},
				{"CREATE INDEX IF NOT EXISTS ? ON events USING gin ((search_payload || E'\\n' || search_meta) ?.gin_trgm_ops)",
					[]any{bun.Ident(oldTrigramIndex), bun.Ident(schema)}},
			} {
				if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return nil
}

// dropSQLiteFTS removes events_fts and its triggers (migration sqlite_fts).
var dropSQLiteFTS = []string{
	"DROP TRIGGER IF EXISTS events_fts_insert", "DROP TRIGGER IF EXISTS events_fts_delete",
	"DROP TRIGGER IF EXISTS events_fts_update", "DROP TABLE IF EXISTS events_fts",
}

// dropSQLiteTextIndex removes events_text and its triggers.
var dropSQLiteTextIndex = []string{
	"DROP TRIGGER IF EXISTS events_text_insert", "DROP TRIGGER IF EXISTS events_text_delete",
	"DROP TRIGGER IF EXISTS events_text_update", "DROP TABLE IF EXISTS events_text",
}

// sqliteTextIndex is SQLite's index for free-text queries: an FTS5 table
// with the case-sensitive trigram tokenizer over both search texts (columns
// search_payload and search_meta, rowid = events.id), kept up to date by
// triggers and filled from the events already there.
//
// It is contentless (an empty content option): the texts stay in events only, and a query
// never needs them, as the default detail (full) keeps every trigram's
// positions: a quoted phrase of the query's trigrams at consecutive
// positions is exactly an occurrence of the query (see ftsUsable for the
// few characters the tokenizer does not keep as they are). The tokenizer
// skips NUL characters, so a text holding one would match as if it were
// not there; no write of the store can store one (bun's SQLite formatting
// refuses it, as PostgreSQL does). A contentless table forgets a row when
// given the values it indexed, which the delete and update triggers pass.
var sqliteTextIndex = []string{
	`CREATE VIRTUAL TABLE events_text USING fts5(search_payload, search_meta, content='',
		tokenize='trigram case_sensitive 1')`,
	`CREATE TRIGGER events_text_insert AFTER INSERT ON events BEGIN
		INSERT INTO events_text (rowid, search_payload, search_meta)
		VALUES (new.id, new.search_payload, new.search_meta);
	END`,
	`CREATE TRIGGER events_text_delete AFTER DELETE ON events BEGIN
		INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
		VALUES ('delete', old.id, old.search_payload, old.search_meta);
	END`,
	`CREATE TRIGGER events_text_update AFTER UPDATE OF id, search_payload, search_meta ON events BEGIN
		INSERT INTO events_text (events_text, rowid, search_payload, search_meta)
		VALUES ('delete', old.id, old.search_payload, old.search_meta);
		INSERT INTO events_text (rowid, search_payload, search_meta)
		VALUES (new.id, new.search_payload, new.search_meta);
	END`,
	`INSERT INTO events_text (rowid, search_payload, search_meta)
		SELECT id, search_payload, search_meta FROM events`,
	`INSERT INTO events_text (events_text) VALUES ('optimize')`,
}

// ensureTrigramIndexes creates the pg_trgm GIN indexes over the search
// texts unless they exist, and drops oldTrigramIndex, in one transaction.
// It creates the extension if it is missing and the role may; if it
// cannot, it logs that once and the store works without the indexes
// (free-text queries then scan). It runs under the migration lock.
func (s *Store) ensureTrigramIndexes(ctx context.Context) error {
	var missing bool
	err := s.db.QueryRowContext(ctx,
		"SELECT to_regclass(quote_ident(current_schema()) || '.' || ?) IS NULL OR to_regclass(quote_ident(current_schema()) || '.' || ?) IS NULL",
		payloadTrigramIndex, metaTrigramIndex).Scan(&missing)
	if err != nil || !missing {
		return err
	}
	schema, err := trigramSchemaOf(ctx, s.db)
	if err != nil {
		return err
	}
	if schema == "" {
		if _, createErr := s.db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); createErr != nil {
			// Another session may have created it meanwhile.
			if schema, err = trigramSchemaOf(ctx, s.db); err != nil {
				return err
			}
			if schema == "" {
				s.trgmWarn.Do(func() {
					s.log.Warn("bunstore: the pg_trgm extension is not available, so free-text event queries scan the events table; "+
						"have a superuser run CREATE EXTENSION pg_trgm, then run the migrations again", "cause", createErr.Error())
				})
				return nil
			}
		} else if schema, err = trigramSchemaOf(ctx, s.db); err != nil {
			return err
		}
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// A GIN index builds faster with more memory (the default is 64MB).
		if _, err := tx.ExecContext(ctx, "SET LOCAL maintenance_work_mem = '256MB'"); err != nil {
			return err
		}
		for _, ix := range []struct{ name, column string }{
			{payloadTrigramIndex, "search_payload"}, {metaTrigramIndex, "search_meta"},
		} {
			if _, err := tx.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS ? ON events USING gin (? ?.gin_trgm_ops)",
				bun.Ident(ix.name), bun.Ident(ix.column), bun.Ident(schema)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "DROP INDEX IF EXISTS ?", bun.Ident(oldTrigramIndex))
		return err
	})
}

// trigramSchemaOf returns the schema pg_trgm is installed in, or "" if it is not.
func trigramSchemaOf(ctx context.Context, db bun.IDB) (string, error) {
	var schema string
	err := db.QueryRowContext(ctx, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&schema)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return schema, err
}
