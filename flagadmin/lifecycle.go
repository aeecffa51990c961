package flagadmin

import (
	"context"
	"encoding/json"
	"unicode/utf8"
)

// MaxStatusValueLength bounds statusValue of a lifecycle completion, in characters.
const MaxStatusValueLength = 255

// CompleteRequest is the body of a lifecycle completion
// (featureLifecycleCompletedSchema).
type CompleteRequest struct {
	// Status is kept or discarded.
	Status string `json:"status"`
	// StatusValue is optional metadata passed along with the status.
	StatusValue *string `json:"statusValue,omitempty"`
}

// Validate checks status and statusValue.
func (r CompleteRequest) Validate() error {
	v := &ValidationError{}
	switch r.Status {
	case StatusKept, StatusDiscarded:
	case "":
		v.Fields = append(v.Fields, FieldError{Path: "status", Message: "is required: kept or discarded"})
	default:
		v.Fields = append(v.Fields, FieldError{Path: "status", Message: "must be kept or discarded"})
	}
	if r.StatusValue != nil {
		if err := CheckText("statusValue", *r.StatusValue); err != nil {
			v.Fields = append(v.Fields, err.Fields...)
		} else if utf8.RuneCountInString(*r.StatusValue) > MaxStatusValueLength {
			v.Fields = append(v.Fields, FieldError{Path: "statusValue", Message: "must be at most 255 characters"})
		}
	}
	if len(v.Fields) > 0 {
		return v
	}
	return nil
}

// CompleteLifecycle marks a feature's lifecycle completed with an outcome
// (POST .../features/:featureName/lifecycle/complete): AuthorizeLifecycle,
// then LifecycleGrant.Complete. The project and the feature must exist and
// the feature must belong to the project, else ErrNotFound; a private
// project the caller cannot see is ErrNotFound too. Repeating the same
// outcome and value changes nothing and records nothing; a different one
// replaces it and records a new feature-completed event.
func (s *Service) CompleteLifecycle(ctx context.Context, p Principal, projectID, featureName string, req CompleteRequest) error {
	g, err := s.AuthorizeLifecycle(ctx, p, projectID)
	if err != nil {
		return err
	}
	return g.Complete(ctx, featureName, req)
}

// LifecycleGrant is a caller's permission to complete lifecycles in one
// project, as AuthorizeLifecycle found it. It is good for one request:
// it does not follow later changes of the caller's roles or the project.
type LifecycleGrant struct {
	s         *Service
	p         Principal
	projectID string
}

// AuthorizeLifecycle checks that p may complete lifecycles in the project
// (UPDATE_FEATURE on it, as the permission gate decides) and returns the
// grant to do so: ErrNotFound when the project does not exist or is
// private and invisible to p, ErrNoAccess without the permission,
// ErrValidation when projectID is not valid text (checked before the
// lookup, which could not answer). The check reads the project once.
// CompleteLifecycle runs it before it validates the body; a transport that
// validates bodies itself runs it first, so that 403 comes before 400, and
// then completes with the grant (LifecycleGrant.Complete), which does not
// check again.
func (s *Service) AuthorizeLifecycle(ctx context.Context, p Principal, projectID string) (*LifecycleGrant, error) {
	if err := s.authorize(ctx, p, featureUpdate(projectID)); err != nil {
		return nil, err
	}
	return &LifecycleGrant{s: s, p: p, projectID: projectID}, nil
}

// Complete marks the lifecycle of the grant's project's feature completed
// with an outcome: CompleteLifecycle without the permission check, which
// AuthorizeLifecycle made. It validates featureName and req first.
func (g *LifecycleGrant) Complete(ctx context.Context, featureName string, req CompleteRequest) error {
	s, projectID := g.s, g.projectID
	if err := CheckText("featureName", featureName); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	value := deref(req.StatusValue)
	data := map[string]any{"status": req.Status, "kept": req.Status == StatusKept}
	if req.StatusValue != nil {
		data["statusValue"] = value
	}
	dataJSON, err := json.Marshal(data)
	if err != nil {
		return err
	}
	by, byID := g.p.Actor()
	err = s.store.UpdateFeature(ctx, featureName, func(f *Feature) (*Event, error) {
		if f.Project != projectID {
			return nil, notFound("Feature %s does not exist in project %s.", QuoteInput(featureName), QuoteInput(projectID))
		}
		next := Lifecycle{Stage: StageCompleted, Status: req.Status, StatusValue: value}
		if f.Lifecycle == next {
			return nil, nil
		}
		f.Lifecycle = next
		return &Event{
			CreatedAt:       s.now(),
			Type:            EventFeatureCompleted,
			CreatedBy:       by,
			CreatedByUserID: byID,
			Project:         &projectID,
			FeatureName:     &featureName,
			Data:            dataJSON,
			Tags:            flagEventTags(f.Tags),
		}, nil
	})
	if isKind(err, ErrNotFound) && !isKindWithMessage(err) {
		return notFound("Feature %s does not exist in project %s.", QuoteInput(featureName), QuoteInput(projectID))
	}
	return err
}

// projectNotFound gives a caller-facing message to a store's ErrNotFound.
func projectNotFound(err error, id string) error {
	if isKind(err, ErrNotFound) {
		return notFound("Project %s does not exist.", QuoteInput(id))
	}
	return err
}
