package vlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Retention (--retention): events older than a configured age are
// pruned in small batches (Store.PruneEvents, run by adapters/tlog's
// pruner), except those of projects under a legal hold. Pruned events
// leave searches and exports; their leaves keep their hashes, so
// checkpoints and proofs of the remaining events stay valid.
//
// Retention is in the log: a change of the rule (RecordRetention), a hold
// placed or released, and each pruning batch (PrunedEvent) is an event of
// flagadmin's own types, written in the transaction of the change it
// records. Those events are never pruned (IsRetentionEvent): they are
// what accounts for every event retention removed, and the newest
// retention-changed event is the rule in force: every pruner prunes by
// it (RecordedRetention), whatever the rule its server started with, and
// a server compares its own with it at start.

// IsRetentionEvent reports whether t is one of the types retention
// records; events of these types are never pruned.
func IsRetentionEvent(t string) bool {
	switch t {
	case flagadmin.EventRetentionChanged, flagadmin.EventLogHoldAdded, flagadmin.EventLogHoldReleased, flagadmin.EventEventsPruned:
		return true
	}
	return false
}

// RetentionEventTypes returns the types IsRetentionEvent reports, for a
// store that excludes them in a query.
func RetentionEventTypes() []string {
	return []string{flagadmin.EventRetentionChanged, flagadmin.EventLogHoldAdded, flagadmin.EventLogHoldReleased, flagadmin.EventEventsPruned}
}

// MaxHoldProjectLength bounds the project id of a hold.
const MaxHoldProjectLength = 255

// HoldProject places a legal hold on the events of project: they are
// never pruned until ReleaseProject. project must be a valid project id
// (flagadmin.ValidName) but need not exist: not any more (events outlive
// their projects), nor yet (a hold placed first keeps every event of the
// project once it is created). Needs the ADMIN permission. Holding a held
// project keeps its first hold. The hold and its log-hold-added event are
// written in one transaction of the store.
func (s *Service) HoldProject(ctx context.Context, p flagadmin.Principal, project string) error {
	if err := s.core.Authorize(ctx, p, rootAdmin); err != nil {
		return err
	}
	ls, err := s.holdCheck(project)
	if err != nil {
		return err
	}
	if !flagadmin.ValidName(project) {
		return invalid("project", "must be a project id: 1 to 100 letters, digits, or _ . ~ -, got %s", flagadmin.QuoteInput(project))
	}
	if err := s.core.CheckWritable(ctx); err != nil {
		return err
	}
	e, err := s.holdEvent(p, flagadmin.EventLogHoldAdded, project)
	if err != nil {
		return err
	}
	err = ls.HoldProject(ctx, project, e.CreatedAt, e)
	if errors.Is(err, flagadmin.ErrConflict) { // held already: the first hold stays, nothing changed
		return nil
	}
	return err
}

// holdEvent is the event of a hold placed or released: the project in
// its project field and data, by p.
func (s *Service) holdEvent(p flagadmin.Principal, typ, project string) (flagadmin.Event, error) {
	data, err := json.Marshal(map[string]string{"project": project})
	if err != nil {
		return flagadmin.Event{}, err
	}
	by, byID := p.Actor()
	return flagadmin.Event{CreatedAt: s.core.Now(), Type: typ, CreatedBy: by, CreatedByUserID: byID, Project: &project, Data: data}, nil
}

// ReleaseProject ends the legal hold on project, writing its
// log-hold-released event; flagadmin.ErrNotFound when it has none. Needs
// the ADMIN permission.
func (s *Service) ReleaseProject(ctx context.Context, p flagadmin.Principal, project string) error {
	if err := s.core.Authorize(ctx, p, rootAdmin); err != nil {
		return err
	}
	ls, err := s.holdCheck(project)
	if err != nil {
		return err
	}
	if err := s.core.CheckWritable(ctx); err != nil {
		return err
	}
	e, err := s.holdEvent(p, flagadmin.EventLogHoldReleased, project)
	if err != nil {
		return err
	}
	err = ls.ReleaseProject(ctx, project, e)
	if errors.Is(err, flagadmin.ErrNotFound) {
		return notFound("Project %s has no legal hold.", flagadmin.QuoteInput(project))
	}
	return err
}

// Holds returns the legal holds, by project. Needs the ADMIN permission.
func (s *Service) Holds(ctx context.Context, p flagadmin.Principal) ([]Hold, error) {
	if err := s.core.Authorize(ctx, p, rootAdmin); err != nil {
		return nil, err
	}
	ls, err := s.logConfigured(false)
	if err != nil {
		return nil, err
	}
	return ls.LogHolds(ctx)
}

// holdCheck checks the project id of a hold.
func (s *Service) holdCheck(project string) (Store, error) {
	if project == "" {
		return nil, invalid("project", "is required")
	}
	if v := flagadmin.CheckText("project", project); v != nil {
		return nil, v
	}
	if len([]rune(project)) > MaxHoldProjectLength {
		return nil, invalid("project", "must be at most %d characters", MaxHoldProjectLength)
	}
	return s.logConfigured(false)
}

// PruneBefore returns the cut-off of a retention: events created before
// it are pruned. It is now minus retention, at store precision.
func PruneBefore(now time.Time, retention time.Duration) time.Time {
	return flagadmin.Truncate(now.Add(-retention))
}

// RecordRetention records the retention rule a server runs with (0: keep
// events for ever) when it differs from the rule the newest
// retention-changed event holds (for ever when there is none): one
// retention-changed event by p, whose data are {"retention": seconds,
// "previous": seconds}, each null for ever. It reports whether it wrote
// one. The comparison and the write are one transaction, so of several
// servers starting with the same new rule, one records it. Needs the
// ADMIN permission.
func (s *Service) RecordRetention(ctx context.Context, p flagadmin.Principal, retention time.Duration) (bool, error) {
	if err := s.core.Authorize(ctx, p, rootAdmin); err != nil {
		return false, err
	}
	ls, err := s.logConfigured(false)
	if err != nil {
		return false, err
	}
	if err := s.core.CheckWritable(ctx); err != nil {
		return false, err
	}
	rule := retentionSeconds(retention)
	recorded := false
	err = ls.RecordRetention(ctx, func(last *flagadmin.Event) (*flagadmin.Event, error) {
		recorded = false
		previous, err := recordedSeconds(last)
		if err != nil {
			return nil, err
		}
		if equalPtr(previous, rule) {
			return nil, nil
		}
		data, err := json.Marshal(map[string]*int64{"retention": rule, "previous": previous})
		if err != nil {
			return nil, err
		}
		by, byID := p.Actor()
		recorded = true
		return &flagadmin.Event{CreatedAt: s.core.Now(), Type: flagadmin.EventRetentionChanged, CreatedBy: by, CreatedByUserID: byID, Data: data}, nil
	})
	return recorded && err == nil, err
}

// recordedSeconds is the rule a retention-changed event records, in
// seconds; nil for ever, as when there is none (last nil).
func recordedSeconds(last *flagadmin.Event) (*int64, error) {
	if last == nil {
		return nil, nil
	}
	var d struct {
		Retention *int64 `json:"retention"`
	}
	if err := json.Unmarshal(last.Data, &d); err != nil {
		return nil, fmt.Errorf("the retention-changed event %d: its data are not a rule: %w", last.ID, err)
	}
	return d.Retention, nil
}

// RecordedRetention returns the retention a retention-changed event
// records, the rule in force from it on (Store.PruneEvents reads the
// newest): 0 when it keeps events for ever, as when there is none (last
// nil), or when it is longer than a time.Duration holds (no event is
// that old).
func RecordedRetention(last *flagadmin.Event) (time.Duration, error) {
	seconds, err := recordedSeconds(last)
	if err != nil || seconds == nil || *seconds <= 0 || *seconds > math.MaxInt64/int64(time.Second) {
		return 0, err
	}
	return time.Duration(*seconds) * time.Second, nil
}

// retentionSeconds is a retention as its events give it: whole seconds,
// nil for ever (0 or less).
func retentionSeconds(retention time.Duration) *int64 {
	if retention <= 0 {
		return nil
	}
	n := int64(retention / time.Second)
	return &n
}

func equalPtr(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// PrunedEvent is the events-pruned event of one pruning batch, by the
// system, at at: it removed the events of ids (ascending, at least one),
// created before before under retention. Its data are {"count": n,
// "before": createdAt cut-off, "firstId", "lastId", "ranges": the ids as
// runs [first, last] of consecutive ids, "retention": seconds}.
func PrunedEvent(ids []int64, before time.Time, retention time.Duration, at time.Time) (flagadmin.Event, error) {
	if len(ids) == 0 {
		return flagadmin.Event{}, invalid("ids", "is empty: a pruning that removed nothing is not recorded")
	}
	ranges := [][2]int64{}
	for _, id := range ids {
		if n := len(ranges); n > 0 && ranges[n-1][1]+1 == id {
			ranges[n-1][1] = id
			continue
		}
		ranges = append(ranges, [2]int64{id, id})
	}
	data, err := json.Marshal(struct {
		Count     int        `json:"count"`
		Before    string     `json:"before"`
		FirstID   int64      `json:"firstId"`
		LastID    int64      `json:"lastId"`
		Ranges    [][2]int64 `json:"ranges"`
		Retention *int64     `json:"retention"`
	}{len(ids), formatTime(before), ids[0], ids[len(ids)-1], ranges, retentionSeconds(retention)})
	if err != nil {
		return flagadmin.Event{}, err
	}
	by, byID := flagadmin.System.Actor()
	return flagadmin.Event{CreatedAt: flagadmin.Truncate(at), Type: flagadmin.EventEventsPruned, CreatedBy: by, CreatedByUserID: byID, Data: data}, nil
}

// formatTime formats t as events show times: flagadmin.TimeLayout, in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(flagadmin.TimeLayout) }
