package memstore

import (
	"context"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.VersionedStore = (*Store)(nil)

// Version implements flagadmin.VersionedStore: the number of successful
// writes (Write, UpdateFeature that wrote, DeleteUser) since New, each
// counted under the write lock with the change it made.
func (s *Store) Version(ctx context.Context) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version, nil
}

// OldestFreshFeatures implements flagadmin.VersionedStore.
func (s *Store) OldestFreshFeatures(ctx context.Context, notBefore map[flagadmin.FeatureType]time.Time) (map[flagadmin.FeatureType]time.Time, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[flagadmin.FeatureType]time.Time{}
	for _, f := range s.w.features {
		// Fresh at the cut-offs, of a type that has one.
		q := flagadmin.ProjectStatsQuery{PotentiallyStaleBefore: notBefore}
		if _, ok := notBefore[f.Type]; !ok || q.Standing(f) != flagadmin.Fresh {
			continue
		}
		if oldest, seen := out[f.Type]; !seen || f.CreatedAt.Before(oldest) {
			out[f.Type] = f.CreatedAt
		}
	}
	return out, nil
}
