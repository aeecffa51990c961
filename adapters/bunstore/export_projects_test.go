package bunstore

import (
	"context"

	"github.com/uptrace/bun"
)

// RefillProjectStats recomputes project_stats from the tables, as the
// migration that introduced it does for an existing database.
func RefillProjectStats(s *Store) error {
	return s.db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM project_stats"); err != nil {
			return err
		}
		return insertProjectStats(ctx, tx, nil)
	})
}

// FreshColumns is the fresh_<type> column of each feature type.
var FreshColumns = freshColumns

// ProjectStatsSchema is the body of the project_stats table.
func ProjectStatsSchema() string { return projectStatsSchema[0].body }
