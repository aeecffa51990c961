package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// The pg_trgm indexes over the search texts, one per text, and over the
// tokens of the token index (tokens.go). oldIndex, one
// index over both texts joined, is dropped where a database holds it: it
// made every query-string search recheck two LIKEs, one on a
// concatenation, per candidate row.
const (
	payloadIndex = "events_payload_trgm"
	metaIndex    = "events_meta_trgm"
	oldIndex     = "events_search_trgm"
	// tokensIndex indexes search_tokens, the vocabulary of the token
	// index (tokens.go).
	tokensIndex = "search_tokens_trgm"
)

// trigramIndexes are the pg_trgm indexes: name, table and column.
var trigramIndexes = []struct{ name, table, column string }{
	{payloadIndex, "events", "search_payload"},
	{metaIndex, "events", "search_meta"},
	{tokensIndex, "search_tokens", "token"},
}

// ensureTrigramIndexes creates the pg_trgm GIN indexes (trigramIndexes)
// unless they exist, and drops oldIndex, in one transaction. It
// creates the extension if it is missing and the role may; if it cannot,
// it calls unavailable with the reason and returns nil: the store works
// without the indexes (free-text queries then scan). The caller holds the
// migration lock.
func ensureTrigramIndexes(ctx context.Context, db *bun.DB, unavailable func(cause error)) error {
	var missing int
	names := make([]string, len(trigramIndexes))
	for i, ix := range trigramIndexes {
		names[i] = ix.name
	}
	err := db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM unnest(?::text[]) AS n WHERE to_regclass(quote_ident(current_schema()) || '.' || n) IS NULL",
		pgdialect.Array(names)).Scan(&missing)
	if err != nil || missing == 0 {
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
		for _, ix := range trigramIndexes {
			if _, err := tx.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS ? ON ? USING gin (? ?.gin_trgm_ops)",
				bun.Ident(ix.name), bun.Ident(ix.table), bun.Ident(ix.column), bun.Ident(schema)); err != nil {
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
