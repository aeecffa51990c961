package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
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
	return s.inTx(ctx, "update feature", func(ctx context.Context, t *txn) (*changes, error) {
		var r featureRow
		if err := s.forUpdate(t.NewSelect().Model(&r).Where("name = ?", name)).Scan(ctx); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil, &callbackError{flagadmin.ErrNotFound}
			}
			return nil, err
		}
		old, err := r.feature()
		if err != nil {
			return nil, err
		}
		f := old
		e, err := fn(&f)
		if err != nil {
			return nil, &callbackError{err}
		}
		if e == nil {
			return nil, errNothingWritten
		}
		f.Project = old.Project // the project does not change
		_, err = t.NewUpdate().Model((*featureRow)(nil)).
			Set("type = ?", string(f.Type)).
			Set("stale = ?", f.Stale).
			Set("archived_at = ?", stored.MillisPtr(f.ArchivedAt)).
			Set("last_seen_at = ?", stored.MillisPtr(f.LastSeenAt)).
			Set("lifecycle_stage = ?", f.Lifecycle.Stage).
			Set("lifecycle_status = ?", f.Lifecycle.Status).
			Set("lifecycle_status_value = ?", f.Lifecycle.StatusValue).
			Where("name = ?", name).
			Exec(ctx)
		if err != nil {
			return nil, err
		}
		return &changes{events: []flagadmin.Event{*e}, updatedFeatures: []featureUpdate{{old, f}}}, nil
	})
}
