package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/uptrace/bun"
)

// tokensIndex is the pg_trgm index of search_tokens, the vocabulary of
// the token index (tokens.go): a query's run is looked up in it.
const tokensIndex = "search_tokens_trgm"

// textTrigrams are the pg_trgm indexes the events' search texts had before
// the token index answered free text: one per text, and an earlier one
// over both texts joined: the largest indexes of events (686 of the 1,300
// MB of its indexes at 1,000,000 events), kept at every insert (a follower
// catching up copied 1.4x as fast without them; BENCHMARKS.md).
// DropTextTrigrams drops them.
var textTrigrams = []string{"events_payload_trgm", "events_meta_trgm", "events_search_trgm"}

// ensureTrigramIndex creates tokensIndex, a pg_trgm GIN index, unless it
// exists. It creates the extension if it is missing and the role may; if
// it cannot, it calls unavailable with the reason and returns nil: the
// store works without the index (a free-text query then scans the
// vocabulary). The caller holds the migration lock.
func ensureTrigramIndex(ctx context.Context, db *bun.DB, unavailable func(cause error)) error {
	var exists bool
	err := db.QueryRowContext(ctx, "SELECT to_regclass(quote_ident(current_schema()) || '.' || ?) IS NOT NULL", tokensIndex).Scan(&exists)
	if err != nil || exists {
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
		_, err := tx.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS ? ON search_tokens USING gin (token ?.gin_trgm_ops) WITH (gin_pending_list_limit = "+strconv.Itoa(pendingListLimit)+")",
			bun.Ident(tokensIndex), bun.Ident(schema))
		return err
	})
}

// DropTextTrigrams drops the trigram indexes of the events' search texts
// (textTrigrams) where the database has them.
func (Dialect) DropTextTrigrams(ctx context.Context, db *bun.DB) error {
	for _, name := range textTrigrams {
		if _, err := db.ExecContext(ctx, "DROP INDEX IF EXISTS ?", bun.Ident(name)); err != nil {
			return err
		}
	}
	return nil
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
