package httpapi

import (
	"bytes"
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
	register(s, op, s.getProjects)
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
	opts := flagadmin.ProjectListOptions{Archived: archived}
	if s.projectsOnly != nil {
		if only := s.projectsOnly(); only != "" {
			opts = flagadmin.ProjectListOptions{Only: only} // archived is validated, then not used, as by that Unleash
		}
	}
	if key, ok := projectListKey(p, opts); ok && s.bodies != nil {
		body, err := s.bodies.Load(ctx, key, func(ctx context.Context) ([]byte, error) {
			list, err := s.svc.ListProjects(ctx, p, opts)
			if err != nil {
				return nil, err
			}
			return taggedProjectsBody(list), nil
		})
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		return &getProjectsOutput{Body: func(hctx huma.Context) { s.writeProjects(hctx, body) }}, nil
	}
	list, err := s.svc.ListProjects(ctx, p, opts)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &getProjectsOutput{Body: func(hctx huma.Context) { s.streamProjects(hctx, list) }}, nil
}

// projectListKey returns the body cache key of the project list of opts
// for p: besides the data and the time, the answer of ListProjects
// depends on opts (every field), on whose favorites it marks (a user's
// own, none for a token) and on what p sees (everything for a root admin,
// else what the user's project roles allow). So every admin token shares
// one key, and each user has their own, which says whether they are a
// root admin (the root role comes with the principal, which a token cache
// may have kept). ok is false for a principal that cannot list projects
// (ListProjects answers its error).
func projectListKey(p flagadmin.Principal, opts flagadmin.ProjectListOptions) (key string, ok bool) {
	key = "GET /api/admin/projects?archived=" + strconv.FormatBool(opts.Archived) + "&only=" + opts.Only
	switch {
	case p.Kind == flagadmin.PrincipalAdminToken || p.Kind == flagadmin.PrincipalSystem:
		return key + " root", true
	case p.Kind == flagadmin.PrincipalUser && p.User != nil:
		who := " user "
		if p.IsRootAdmin() {
			who = " root-user "
		}
		return key + who + strconv.FormatInt(p.User.ID, 10), true
	}
	return "", false
}

// projectsChunk is the size of the pieces streamProjects writes.
const projectsChunk = 32 << 10

// streamProjects writes the list as Huma writes projectsSchema in the
// negotiated JSON format, the same bytes, newline included, encoding the
// entries (appendProjectListEntry) into pieces of about projectsChunk
// bytes sent as they fill: at 10,000 projects the body is megabytes, and
// 16 concurrent requests would otherwise each hold a whole copy. A format
// other than JSON (none is configured today) goes through Huma's
// marshaling.
func (s *Server) streamProjects(hctx huma.Context, projects []flagadmin.ProjectListEntry) {
	ct, ok := s.projectsContentType(hctx, "", 0)
	w := hctx.BodyWriter()
	if !ok {
		s.marshalProjects(hctx, ct, projects)
		return
	}
	buf := append(make([]byte, 0, projectsChunk+4<<10), projectsPrefix...)
	buf = append(buf, '[')
	for i := range projects {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendProjectListEntry(buf, &projects[i])
		if len(buf) >= projectsChunk {
			streamedAnswer(hctx.Context()) // more than one piece: no ETag
			if _, err := w.Write(buf); err != nil {
				return // the client is gone
			}
			buf = buf[:0]
		}
	}
	buf = append(append(buf, ']'), projectsSuffix...)
	w.Write(buf)
}

// appendProjectsBody appends the body streamProjects writes for projects
// in JSON, whole, to b.
func appendProjectsBody(b []byte, projects []flagadmin.ProjectListEntry) []byte {
	b = append(append(b, projectsPrefix...), '[')
	for i := range projects {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendProjectListEntry(b, &projects[i])
	}
	return append(append(b, ']'), projectsSuffix...)
}

// projectsTagSize is the size of the ETag in front of a tagged body.
var projectsTagSize = len(etagOf(nil))

// taggedProjectsBody returns the body of the project list (appendProjectsBody)
// after its ETag, as the body cache keeps it: each request that the cache
// answers sends the tag without hashing the body again. The buffer has the
// body's size (the cache's budget counts its capacity).
func taggedProjectsBody(projects []flagadmin.ProjectListEntry) []byte {
	b := appendProjectsBody(make([]byte, projectsTagSize, projectsTagSize+len(projectsPrefix)+len(projectsSuffix)+2+512*len(projects)), projects)
	copy(b, etagOf(b[projectsTagSize:]))
	if cap(b)-len(b) > len(b)/16 {
		b = bytes.Clone(b)
	}
	return b
}

// writeProjects writes tagged, the project list taggedProjectsBody
// encoded (possibly shared with other requests), in the negotiated JSON
// format, with its ETag: the bytes streamProjects writes. A format other
// than JSON (none is configured today) goes through Huma's marshaling of
// the decoded list.
func (s *Server) writeProjects(hctx huma.Context, tagged []byte) {
	tag, body := string(tagged[:projectsTagSize]), tagged[projectsTagSize:]
	ct, ok := s.projectsContentType(hctx, tag, len(body))
	if !ok {
		var list projectsSchema
		if err := json.Unmarshal(body, &list); err != nil {
			s.log.ErrorContext(hctx.Context(), "writing the project list", "error", err.Error())
			return
		}
		s.marshalProjects(hctx, ct, list.Projects)
		return
	}
	hctx.BodyWriter().Write(body) // a failure means the client is gone
}

// projectsContentType sets the negotiated content type and status 200 of
// the project list, reporting whether the format is JSON; for JSON, when
// etag is not "", the ETag etag and the Content-Length size of the JSON
// bytes at hand (set before the status, for the ETag middleware: see
// etagWriter).
func (s *Server) projectsContentType(hctx huma.Context, etag string, size int) (string, bool) {
	ct, err := s.api.Negotiate(hctx.Header("Accept"))
	if err != nil {
		ct = "application/json"
	}
	json := ct == "application/json" || ct == "json"
	hctx.SetHeader("Content-Type", ct)
	if json && etag != "" {
		hctx.SetHeader("ETag", etag)
		hctx.SetHeader("Content-Length", strconv.Itoa(size))
	}
	hctx.SetStatus(http.StatusOK)
	return ct, json
}

// marshalProjects writes the list in a format other than JSON (none is
// configured today) through Huma's marshaling.
func (s *Server) marshalProjects(hctx huma.Context, ct string, projects []flagadmin.ProjectListEntry) {
	body := projectsSchema{Version: flagadmin.ProjectListVersion, Projects: projects}
	if err := s.api.Marshal(hctx.BodyWriter(), ct, body); err != nil {
		s.log.ErrorContext(hctx.Context(), "writing the project list", "error", err.Error())
	}
}

// projectsPrefix and projectsSuffix surround the array of projects in the
// project list's body.
var (
	projectsPrefix = []byte(`{"version":` + strconv.Itoa(flagadmin.ProjectListVersion) + `,"projects":`)
	projectsSuffix = []byte("}\n")
)
