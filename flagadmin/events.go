package flagadmin

import (
	"context"
	"slices"
)

// DeprecatedSearchVersion is the version field of the deprecated search response.
const DeprecatedSearchVersion = 1

// SearchEvents runs the query-string event search (GET
// /api/admin/search/events): parameters are parsed and validated, the
// caller's visibility applied, and a page returned with the total. The
// page's events may be shared with other callers (a Store may hand one
// page to several reads): they must not be changed. page.Next is the cursor of the next page
// (keyset paging), "" on the last one.
func (s *Service) SearchEvents(ctx context.Context, p Principal, params EventSearchParams) (EventPage, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return EventPage{}, err
	}
	q, err := ParseEventSearch(params)
	if err != nil {
		return EventPage{}, err
	}
	// A page by cursor reads one event more, to tell whether it is the last.
	read := q
	if q.After != nil {
		read.Limit++
	}
	page, err := s.SearchVisible(ctx, p, read)
	if err != nil {
		return EventPage{}, err
	}
	nextPage(q, &page)
	return page, nil
}

// DeprecatedSearchEvents runs the body-based event search (POST
// /api/admin/events/search) with the same visibility rules; Total counts
// every match including the free-text query. Its page may be shared like
// SearchEvents'.
func (s *Service) DeprecatedSearchEvents(ctx context.Context, p Principal, req DeprecatedSearchRequest) (EventPage, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return EventPage{}, err
	}
	q, err := ParseDeprecatedSearch(req)
	if err != nil {
		return EventPage{}, err
	}
	return s.SearchVisible(ctx, p, q)
}

// SearchVisible answers q with the events p may see (VisibleQuery). It
// is the read of an operation that has passed the gate for p (Authorize):
// it checks no permission itself, so p must be a principal of the admin
// API. The operations of the Service and of packages built over it
// (flagadmin/vlog) read events through it.
func (s *Service) SearchVisible(ctx context.Context, p Principal, q EventQuery) (EventPage, error) {
	q, none, err := s.VisibleQuery(ctx, p, q)
	if err != nil {
		return EventPage{}, err
	}
	if none {
		return EventPage{Events: []Event{}}, nil
	}
	page, err := s.store.SearchEvents(ctx, q)
	if err != nil {
		return EventPage{}, err
	}
	if page.Events == nil {
		page.Events = []Event{}
	}
	return page, nil
}

// VisibleQuery returns q restricted to the events p may see (restrict),
// for a read of an operation that has passed the gate for p (Authorize),
// such as an inclusion proof a store answers in one read
// (flagadmin/vlog). none: q then matches nothing, so the store need not
// be asked. A principal that is neither a root admin nor a user (a
// client or frontend token, which the gate refuses) sees nothing: the
// read fails closed when a caller forgot the gate.
func (s *Service) VisibleQuery(ctx context.Context, p Principal, q EventQuery) (_ EventQuery, none bool, err error) {
	if p.User == nil && !p.IsRootAdmin() {
		return q, true, nil
	}
	hidden, restricted, err := s.visibility(ctx, p)
	if err != nil || !restricted {
		return q, false, err
	}
	none = q.restrict(hidden)
	return q, none, nil
}

// restrict narrows q to the events a principal that is not a root admin
// may see, hidden being the private projects it is not a member of: no
// event without a project, nor one naming a hidden project, nor, when
// any project is hidden, one naming every project (ProjectHidden). none:
// q then matches nothing (its project filter names only hidden
// projects).
func (q *EventQuery) restrict(hidden []string) (none bool) {
	q.RequireProject = true
	q.HiddenProjects = nil
	if len(hidden) > 0 {
		q.HiddenProjects = append(slices.Clip(hidden), AllProjects)
	}
	return len(q.Projects) > 0 && !slices.ContainsFunc(q.Projects, func(id string) bool { return !ProjectHidden(id, q.HiddenProjects) })
}
