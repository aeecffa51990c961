package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// booleanParam is a query parameter documented as a boolean but received as
// its raw text, which the domain parses (flagadmin.ParseArchived), so
// "TRUE" or "1" get a 400 naming the parameter rather than Huma's reading.
type booleanParam string

// Schema documents the parameter as a boolean.
func (booleanParam) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeBoolean}
}

type getProjectsInput struct {
	Archived booleanParam `query:"archived" doc:"true lists only archived projects; false or absent lists only active ones. Any other value is a 400." example:"false"`
}

// projectsSchema is the response of the project list.
type projectsSchema struct {
	Version  int                          `json:"version" minimum:"1" enum:"1" doc:"The schema version of the project data."`
	Projects []flagadmin.ProjectListEntry `json:"projects" nullable:"false" doc:"The projects the caller can see, ordered by name, then id."`
}

type getProjectsOutput struct {
	Body projectsSchema
}

func (s *Server) registerProjects() {
	op := s.operation("getProjects", http.MethodGet, "/api/admin/projects", tagProjects,
		"Get a list of all projects",
		"Lists the active projects, or the archived ones with archived=true, with their health "+
			"(round(100 - stale% - potentially stale%) over the non-archived features), feature and member "+
			"counts and owners. Callers that are not root admins do not see private projects they are not "+
			"members of. There is no paging.",
		"The projects, ordered by name, then id.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	op.SkipValidateParams = true // the domain parses archived
	huma.Register(s.api, op, s.getProjects)
}

func (s *Server) getProjects(ctx context.Context, in *getProjectsInput) (*getProjectsOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	archived, err := flagadmin.ParseArchived(string(in.Archived))
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	projects, err := s.svc.ListProjects(ctx, p, flagadmin.ProjectListOptions{Archived: archived})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &getProjectsOutput{Body: projectsSchema{Version: flagadmin.ProjectListVersion, Projects: projects}}, nil
}
