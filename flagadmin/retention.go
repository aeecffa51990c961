package flagadmin

import (
	"context"
	"time"
)

// Retention (--retention): events older than a configured age are
// pruned in small batches (LogStore.PruneEvents, run by adapters/tlog's
// pruner), except those of projects under a legal hold. Pruned events
// leave searches and exports; their leaves keep their hashes, so
// checkpoints and proofs of the remaining events stay valid.

// MaxHoldProjectLength bounds the project id of a hold.
const MaxHoldProjectLength = 255

// HoldProject places a legal hold on the events of project: they are
// never pruned until ReleaseProject. project must be a valid project id
// (ValidName) but need not exist: not any more (events outlive their
// projects), nor yet (a hold placed first keeps every event of the project
// once it is created). Needs the ADMIN permission. Holding a held project
// keeps its first hold.
func (s *Service) HoldProject(ctx context.Context, p Principal, project string) error {
	ls, err := s.holdCheck(p, project)
	if err != nil {
		return err
	}
	if !ValidName(project) {
		return invalid("project", "must be a project id: 1 to 100 letters, digits, or _ . ~ -, got %s", QuoteInput(project))
	}
	return ls.HoldProject(ctx, project, s.now())
}

// ReleaseProject ends the legal hold on project; ErrNotFound when it has
// none. Needs the ADMIN permission.
func (s *Service) ReleaseProject(ctx context.Context, p Principal, project string) error {
	ls, err := s.holdCheck(p, project)
	if err != nil {
		return err
	}
	err = ls.ReleaseProject(ctx, project)
	if isKind(err, ErrNotFound) && !isKindWithMessage(err) {
		return notFound("Project %s has no legal hold.", quoteInput(project))
	}
	return err
}

// LogHolds returns the legal holds, by project. Needs the ADMIN permission.
func (s *Service) LogHolds(ctx context.Context, p Principal) ([]LogHold, error) {
	if err := requireRootAdmin(p); err != nil {
		return nil, err
	}
	ls, err := s.logConfigured(false)
	if err != nil {
		return nil, err
	}
	return ls.LogHolds(ctx)
}

// holdCheck checks the permission and the project id of a hold.
func (s *Service) holdCheck(p Principal, project string) (LogStore, error) {
	if err := requireRootAdmin(p); err != nil {
		return nil, err
	}
	if project == "" {
		return nil, invalid("project", "is required")
	}
	if v := checkText("project", project); v != nil {
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
	return Truncate(now.Add(-retention))
}
