package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Feature implements flagadmin.Store.
func (s *Store) Feature(ctx context.Context, name string) (flagadmin.Feature, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var r featureRow
	if err := s.rdb.NewSelect().Model(&r).Where("name = ?", name).Scan(ctx); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return flagadmin.Feature{}, flagadmin.ErrNotFound
		}
		return flagadmin.Feature{}, s.fail("feature", err)
	}
	f, err := r.feature()
	if err != nil {
		return flagadmin.Feature{}, s.fail("feature", err)
	}
	return f, nil
}

// UpdateFeature implements flagadmin.Store: the feature row is locked
// (SELECT … FOR UPDATE; SQLite runs one writer transaction at a time) from
// the read to the commit, so concurrent updates of one feature run one after
// another and each sees the previous one's write.
func (s *Store) UpdateFeature(ctx context.Context, name string, fn func(*flagadmin.Feature) (*flagadmin.Event, error)) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "update feature", func(ctx context.Context, tx bun.Tx) error {
		var r featureRow
		if err := s.forUpdate(tx.NewSelect().Model(&r).Where("name = ?", name)).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return &callbackError{flagadmin.ErrNotFound}
			}
			return err
		}
		f, err := r.feature()
		if err != nil {
			return err
		}
		e, err := fn(&f)
		if err != nil {
			return &callbackError{err}
		}
		if e == nil {
			return errNothingWritten
		}
		_, err = tx.NewUpdate().Model((*featureRow)(nil)).
			Set("type = ?", string(f.Type)).
			Set("stale = ?", f.Stale).
			Set("archived_at = ?", millisPtr(f.ArchivedAt)).
			Set("last_seen_at = ?", millisPtr(f.LastSeenAt)).
			Set("lifecycle_stage = ?", f.Lifecycle.Stage).
			Set("lifecycle_status = ?", f.Lifecycle.Status).
			Set("lifecycle_status_value = ?", f.Lifecycle.StatusValue).
			Where("name = ?", name).
			Exec(ctx)
		if err != nil {
			return err
		}
		newRow, err := featureRowOf(f)
		if err != nil {
			return err
		}
		newRow.Project = r.Project // the project does not change
		if err := updateFeatureStats(ctx, tx, r, newRow); err != nil {
			return err
		}
		if err := s.hook("update feature"); err != nil {
			return err
		}
		return s.insertEvents(ctx, tx, []flagadmin.Event{*e}, false)
	})
}

// hook runs the test hook between a state change and its event.
func (s *Store) hook(op string) error {
	if s.afterChange == nil {
		return nil
	}
	if err := s.afterChange(op); err != nil {
		return &callbackError{err}
	}
	return nil
}
