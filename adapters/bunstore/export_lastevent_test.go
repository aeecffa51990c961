package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// RefillLastEvents recomputes project_last_events from the events, as the
// migration that introduced it does for an existing database.
func RefillLastEvents(s *Store) error {
	return s.db.RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
		for _, stmt := range fillLastEvents {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// MigrateBefore applies, as one group, the migrations named before name.
func MigrateBefore(s *Store, name string) error {
	ctx := context.Background()
	ms := migrate.NewMigrations()
	for _, m := range newMigrations().Sorted() {
		if m.Name < name {
			ms.Add(m)
		}
	}
	m := migrate.NewMigrator(s.db, ms, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return err
	}
	_, err := m.Migrate(ctx)
	return err
}

// RollBack undoes the last group of migrations applied, with their Down.
func RollBack(s *Store) error {
	_, err := migrate.NewMigrator(s.db, newMigrations(), migrate.WithMarkAppliedOnSuccess(true)).Rollback(context.Background())
	return err
}

// LastEventsMigration is the name of migration project_last_events.
const LastEventsMigration = "20250601000008"
