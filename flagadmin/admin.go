package flagadmin

import "context"

// Admin is the admin API's five operations for one caller whose principal
// is already bound. A Service bound with As implements it in process; the
// typed HTTP client (adapters/client) implements it over the network, so a
// program written against Admin switches between embedded and remote by
// changing the line that builds it. Errors are the kinds of this package in
// both cases (errors.Is(err, ErrNotFound), a *ValidationError, ...).
type Admin interface {
	// CompleteLifecycle marks a feature's lifecycle completed (POST .../lifecycle/complete).
	CompleteLifecycle(ctx context.Context, projectID, featureName string, req CompleteRequest) error
	// SearchEvents runs the query-string event search (GET /api/admin/search/events).
	SearchEvents(ctx context.Context, params EventSearchParams) (EventPage, error)
	// DeprecatedSearchEvents runs the body-based event search (POST /api/admin/events/search).
	DeprecatedSearchEvents(ctx context.Context, req DeprecatedSearchRequest) (EventPage, error)
	// ListProjects lists the projects the caller can see (GET /api/admin/projects).
	ListProjects(ctx context.Context, opts ProjectListOptions) ([]ProjectListEntry, error)
	// DeleteServiceAccount deletes a service account by its id (DELETE /api/admin/service-account/:id).
	DeleteServiceAccount(ctx context.Context, id string) error
}

// As returns the Service's operations bound to the principal p, as an
// Admin. Every call runs exactly as the Service method of the same name
// called with p.
func (s *Service) As(p Principal) Admin { return boundService{s: s, p: p} }

// boundService is a Service with a bound principal.
type boundService struct {
	s *Service
	p Principal
}

var _ Admin = boundService{}

func (b boundService) CompleteLifecycle(ctx context.Context, projectID, featureName string, req CompleteRequest) error {
	return b.s.CompleteLifecycle(ctx, b.p, projectID, featureName, req)
}

func (b boundService) SearchEvents(ctx context.Context, params EventSearchParams) (EventPage, error) {
	return b.s.SearchEvents(ctx, b.p, params)
}

func (b boundService) DeprecatedSearchEvents(ctx context.Context, req DeprecatedSearchRequest) (EventPage, error) {
	return b.s.DeprecatedSearchEvents(ctx, b.p, req)
}

func (b boundService) ListProjects(ctx context.Context, opts ProjectListOptions) ([]ProjectListEntry, error) {
	return b.s.ListProjects(ctx, b.p, opts)
}

func (b boundService) DeleteServiceAccount(ctx context.Context, id string) error {
	return b.s.DeleteServiceAccount(ctx, b.p, id)
}
