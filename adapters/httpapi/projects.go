package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

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

// getProjectsOutput streams the list (writeProjects); its schema,
// projectsSchema, is documented on the operation.
type getProjectsOutput struct {
	Body func(huma.Context)
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
	// The body is streamed, so Huma does not see its type: document it.
	registry := s.api.OpenAPI().Components.Schemas
	op.Responses["200"].Content = map[string]*huma.MediaType{
		"application/json": {Schema: huma.SchemaFromField(registry, reflect.TypeFor[getProjectsSchemaOutput]().Field(0), "getProjectsResponse")},
	}
	huma.Register(s.api, op, s.getProjects)
}

// getProjectsSchemaOutput is the output whose body field documents the
// response, as Huma would document getProjectsOutput's body were it not
// streamed.
type getProjectsSchemaOutput struct {
	Body projectsSchema
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
	projects, err := s.svc.ProjectListJSON(ctx, p, flagadmin.ProjectListOptions{Archived: archived})
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &getProjectsOutput{Body: func(hctx huma.Context) { s.writeProjects(hctx, projects) }}, nil
}

// projectsPrefix and projectsSuffix surround the array of projects in the
// project list's body.
var (
	projectsPrefix = []byte(`{"version":` + strconv.Itoa(flagadmin.ProjectListVersion) + `,"projects":`)
	projectsSuffix = []byte("}\n")
)

// writeProjects writes the list, the JSON array of the projects the
// Service encoded (ProjectListJSON: shared, possibly cached bytes, written
// as they are), as Huma writes projectsSchema in the negotiated JSON
// format: the same bytes, newline included. A format other than JSON
// (none is configured today) goes through Huma's marshaling of the
// decoded list.
func (s *Server) writeProjects(hctx huma.Context, projects []byte) {
	ct, err := s.api.Negotiate(hctx.Header("Accept"))
	if err != nil {
		ct = "application/json"
	}
	hctx.SetHeader("Content-Type", ct)
	hctx.SetStatus(http.StatusOK)
	w := hctx.BodyWriter()
	if ct != "application/json" && ct != "json" {
		body := projectsSchema{Version: flagadmin.ProjectListVersion}
		err := json.Unmarshal(projects, &body.Projects)
		if err == nil {
			err = s.api.Marshal(w, ct, body)
		}
		if err != nil {
			s.log.ErrorContext(hctx.Context(), "writing the project list", "error", err.Error())
		}
		return
	}
	// Failed writes mean the client is gone.
	if _, err := w.Write(projectsPrefix); err != nil {
		return
	}
	if _, err := w.Write(projects); err != nil {
		return
	}
	w.Write(projectsSuffix)
}
