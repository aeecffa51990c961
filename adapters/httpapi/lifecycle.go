package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// featureLifecycleCompletedSchema is the body of the lifecycle completion,
// as Unleash names it. Unknown fields are refused. Its tags document the
// rules; checkInput refuses unknown fields and wrong JSON types, and the
// domain (flagadmin.CompleteRequest.Validate) checks the values, so its
// messages are the ones callers get.
type featureLifecycleCompletedSchema struct {
	Status      string  `json:"status" enum:"kept,discarded" doc:"The outcome of the feature after completion: kept or discarded."`
	StatusValue *string `json:"statusValue,omitempty" maxLength:"255" doc:"Optional metadata passed along with the status, such as the variant that was kept (at most 255 characters)." example:"variant-b"`
}

type completeInput struct {
	ProjectID   string `path:"projectId" doc:"The id of the project the feature belongs to." example:"default"`
	FeatureName string `path:"featureName" doc:"The name of the feature flag." example:"new-checkout"`
	Body        featureLifecycleCompletedSchema
}

// emptyOutput is a 200 response without a body.
type emptyOutput struct{}

func (s *Server) registerLifecycle() {
	op := s.operation("complete", http.MethodPost,
		"/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete",
		tagFeatures, "Set feature completed",
		"Marks the feature's lifecycle completed with an outcome, kept or discarded, and records a "+
			"feature-completed event with the feature's tags. Needs UPDATE_FEATURE on the project: a root "+
			"Admin, a project Owner or Member, or a root Editor on an open project. Repeating the same "+
			"outcome and value changes nothing; a different one replaces it and records a new event. "+
			"Archived features can be completed too. The body is read as JSON whatever its Content-Type.",
		"The feature is set as completed. The response has no body.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
		http.StatusRequestEntityTooLarge, http.StatusInternalServerError, http.StatusServiceUnavailable)
	op.Middlewares = huma.Middlewares{s.authorizeLifecycle, readBodyAsJSON}
	op.SkipValidateBody = true // the domain validates (CompleteRequest.Validate)
	register(s, op, s.complete)
}

// lifecycleGrantKey holds, in a lifecycle completion's context, the grant
// authorizeLifecycle got.
type lifecycleGrantKey struct{}

// authorizeLifecycle checks the caller's permission on the path's project
// before Huma reads and validates the body, so that 404 for the project and
// 403 come before 400, and hands the grant to the handler,
// which completes with it: the permission is checked once per request.
// The rule is the domain's permission gate, which Service.AuthorizeLifecycle
// runs; this middleware only chooses when it runs.
func (s *Server) authorizeLifecycle(ctx huma.Context, next func(huma.Context)) {
	r, w := humago.Unwrap(ctx)
	p, err := principal(r.Context())
	var grant *flagadmin.LifecycleGrant
	if err == nil {
		grant, err = s.svc.AuthorizeLifecycle(r.Context(), p, ctx.Param("projectId"))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	next(huma.WithValue(ctx, lifecycleGrantKey{}, grant))
}

// readBodyAsJSON makes Huma parse the body as JSON whatever Content-Type the
// client sent: any Content-Type is accepted if the body parses as JSON.
func readBodyAsJSON(ctx huma.Context, next func(huma.Context)) {
	r, _ := humago.Unwrap(ctx)
	r.Header.Set("Content-Type", "application/json")
	next(ctx)
}

func (s *Server) complete(ctx context.Context, in *completeInput) (*emptyOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	req := flagadmin.CompleteRequest{Status: in.Body.Status, StatusValue: in.Body.StatusValue}
	if grant, ok := ctx.Value(lifecycleGrantKey{}).(*flagadmin.LifecycleGrant); ok {
		err = grant.Complete(ctx, in.FeatureName, req)
	} else { // not through authorizeLifecycle: the Service checks
		err = s.svc.CompleteLifecycle(ctx, p, in.ProjectID, in.FeatureName, req)
	}
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &emptyOutput{}, nil
}
