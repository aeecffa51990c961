package httpapi

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// securityScheme is the name of the API key scheme in the OpenAPI document.
const securityScheme = "apiKey"

// Tags of the operations, as Unleash groups them.
const (
	tagFeatures        = "Features"
	tagEvents          = "Events"
	tagProjects        = "Projects"
	tagServiceAccounts = "Service Accounts"
)

// apiDescription is the description of the API, which names its
// operations: the five of Unleash's admin API, the export, the live
// stream when the server has one (stream), and the four of the verifiable
// log.
func apiDescription(stream bool) string {
	const unleash = "the five of Unleash's admin API that flagadmin implements, wire-compatible " +
		"(lifecycle completion, event search, deprecated event search, project list, service account deletion), "
	const log = "and the four of the verifiable event log (its signed checkpoint, inclusion and consistency proofs, and leaves)."
	ops := "ten operations: " + unleash + "its own export of the event log, " + log
	if stream {
		ops = "eleven operations: " + unleash + "its own export of the event log and live stream of it, " + log
	}
	return "The admin API of flagadmin: " + ops + "\n\n" + apiRules
}

// apiRules is what the description says of every operation.
const apiRules = `Every operation needs the header ` + "`Authorization: <API token>`" + ` (a leading "Bearer " is
accepted): an admin token (` + "`*:*.<secret>`" + `) or a personal access / service account token
(` + "`user:<secret>`" + `). Client and frontend tokens are refused with 403 on every operation.
Authentication comes first: 401, then 403, then 400/404/415, then the operation.

Errors are JSON ` + "`{\"id\", \"name\", \"message\", \"details\"?}`" + `: id is a UUID of the error
instance, name one of BadDataError (400), AuthenticationRequired (401), NoAccessError (403),
NotFoundError (404), RequestTimeout (408), ContentTooLarge (413), ContentTypeError (415),
InternalError (500), ServiceUnavailable (503). details lists the offending parameters or fields
of a 400. A message quotes at most 100 characters of the request, and an error body stays under
4 KiB. Responses are JSON whatever the Accept header says; paths are never redirected.`

// apiConfig is the Huma configuration of the API (with the live stream
// when stream is set): OpenAPI 3.1 at
// /openapi.json and /openapi.yaml, without Huma's docs UI (it loads its
// scripts from a CDN; /docs serves embedded ones, see docs.go) and no
// schema routes, and no create hooks, so responses carry no
// injected $schema field nor Link header.
func apiConfig(version string, registry huma.Registry, stream bool) huma.Config {
	cfg := huma.DefaultConfig("flagadmin admin API", version)
	cfg.CreateHooks = nil
	// JSON only: every response is application/json whatever Accept says
	// (Huma falls back to the first format). checkInput hands request
	// bodies to Huma as application/json once it has checked them.
	cfg.Formats = map[string]huma.Format{"application/json": huma.DefaultJSONFormat}
	cfg.DocsPath = ""
	cfg.SchemasPath = ""
	cfg.Info.Description = apiDescription(stream)
	cfg.Components.Schemas = registry
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		securityScheme: {
			Type:        "apiKey",
			In:          "header",
			Name:        "Authorization",
			Description: "An admin token (`*:*.<secret>`) or a personal access / service account token (`user:<secret>`), optionally after `Bearer `.",
		},
	}
	cfg.Tags = []*huma.Tag{
		{Name: tagFeatures, Description: "Feature flags and their lifecycle."},
		{Name: tagEvents, Description: "The event log of changes."},
		{Name: tagProjects, Description: "Projects group feature flags."},
		{Name: tagServiceAccounts, Description: "Accounts for machines, with their own tokens."},
		{Name: tagLog, Description: "The event log as a Merkle tree (RFC 9162): signed checkpoints and the proofs that check events and the log's growth against them."},
	}
	return cfg
}

// newRegistry returns the schema registry: schemas are named like
// Unleash's (eventSchema, projectsSchema, ...), and the domain types that
// marshal themselves are documented by the schema types below.
func newRegistry() huma.Registry {
	r := huma.NewMapRegistry("#/components/schemas/", func(t reflect.Type, hint string) string {
		if t == eventSchemaType { // a struct without a name (reflect.StructOf)
			return "eventSchema"
		}
		name := huma.DefaultSchemaNamer(t, hint)
		first, size := utf8.DecodeRuneInString(name)
		return string(unicode.ToLower(first)) + name[size:]
	})
	r.RegisterTypeAlias(reflect.TypeFor[flagadmin.Event](), eventSchemaType)
	r.RegisterTypeAlias(reflect.TypeFor[flagadmin.Tag](), reflect.TypeFor[tagSchema]())
	r.RegisterTypeAlias(reflect.TypeFor[flagadmin.ProjectListEntry](), reflect.TypeFor[projectSchema]())
	r.RegisterTypeAlias(reflect.TypeFor[flagadmin.ProjectOwner](), reflect.TypeFor[projectOwnerSchema]())
	// Huma documents the type huma.NewError returns; apiError is errorSchema on the wire.
	r.RegisterTypeAlias(reflect.TypeFor[apiError](), reflect.TypeFor[errorSchema]())
	return r
}

// eventSchemaType documents flagadmin.Event as it is written
// (flagadmin.AppendEventJSON): a struct with a field for each declared
// event field (flagadmin.EventFields), of the schema type of its kind,
// under its name, with the doc, example and other schema tags of its
// field in flagadmin.Event. Huma names it eventSchema (newRegistry).
var eventSchemaType = func() reflect.Type {
	domain := reflect.TypeFor[flagadmin.Event]()
	var fields []reflect.StructField
	for _, f := range flagadmin.EventFields() {
		var sf reflect.StructField
		for i := range domain.NumField() {
			if name, _, _ := strings.Cut(domain.Field(i).Tag.Get("json"), ","); name == f.Name {
				sf = domain.Field(i)
			}
		}
		typ, tag := schemaOfKind(f.Kind)
		json := f.Name
		if f.Kind == flagadmin.FieldTextOrAbsent {
			json += ",omitempty"
		}
		_, rest, _ := strings.Cut(string(sf.Tag), `"`) // after the json tag's opening quote
		_, rest, _ = strings.Cut(rest, `"`)            // after its closing quote
		fields = append(fields, reflect.StructField{Name: sf.Name, Type: typ,
			Tag: reflect.StructTag(`json:"` + json + `"` + tag + rest)})
	}
	return reflect.StructOf(fields)
}()

// schemaOfKind is the Go type documenting an event field of kind k on
// the wire, and its schema tags.
func schemaOfKind(k flagadmin.EventFieldKind) (reflect.Type, string) {
	switch k {
	case flagadmin.FieldInt:
		return reflect.TypeFor[int64](), ""
	case flagadmin.FieldTime:
		return reflect.TypeFor[string](), ` format:"date-time"`
	case flagadmin.FieldIntOrNull:
		return reflect.TypeFor[*int64](), ""
	case flagadmin.FieldTextOrNull:
		return reflect.TypeFor[*string](), ""
	case flagadmin.FieldJSONOrNull:
		return reflect.TypeFor[map[string]any](), ` nullable:"true"`
	case flagadmin.FieldTags:
		return reflect.TypeFor[[]tagSchema](), ` nullable:"false"`
	default: // FieldText, FieldTextOrAbsent
		return reflect.TypeFor[string](), ""
	}
}

// tagSchema documents flagadmin.Tag.
type tagSchema struct {
	Value string  `json:"value" minLength:"2" maxLength:"50" doc:"The tag's value." example:"checkout"`
	Type  string  `json:"type" minLength:"2" maxLength:"50" doc:"The tag's type." example:"simple"`
	Color *string `json:"color,omitempty" nullable:"true" pattern:"^#[0-9A-Fa-f]{6}$" doc:"The color of the tag's type, null for a type without one, as Unleash writes it on the tags of some events (a flag untagged); left out on the others." example:"#34A853"`
}

// projectSchema documents flagadmin.ProjectListEntry.
type projectSchema struct {
	ID                    string               `json:"id" doc:"The project's id." example:"default"`
	Name                  string               `json:"name" doc:"The project's display name." example:"Default"`
	Description           string               `json:"description" doc:"The project's description."`
	Health                int                  `json:"health" minimum:"0" maximum:"100" doc:"round(100 - stale% - potentially stale%) over the non-archived features; 100 with none."`
	TechnicalDebt         int                  `json:"technicalDebt" minimum:"0" maximum:"100" doc:"100 - health."`
	FeatureCount          int                  `json:"featureCount" minimum:"0" doc:"The number of non-archived features."`
	MemberCount           int                  `json:"memberCount" minimum:"0" doc:"The number of distinct users with a role in the project, directly or through a group."`
	CreatedAt             string               `json:"createdAt" format:"date-time" doc:"When the project was created."`
	LastUpdatedAt         *string              `json:"lastUpdatedAt" format:"date-time" doc:"The time of the project's newest event."`
	ArchivedAt            *string              `json:"archivedAt" format:"date-time" doc:"When the project was archived; null unless archived."`
	Favorite              bool                 `json:"favorite" doc:"Whether the calling user marked the project as favorite; false for admin tokens."`
	Mode                  string               `json:"mode" enum:"open,protected,private" doc:"Who can see and change the project."`
	LastReportedFlagUsage *string              `json:"lastReportedFlagUsage" format:"date-time" doc:"The newest time any of its features was seen by an SDK."`
	CleanupCount          int                  `json:"cleanupCount,omitempty" minimum:"1" doc:"The number of its features whose lifecycle is completed (archived ones too): Unleash's flags in cleanup. Absent when none."`
	Owners                []projectOwnerSchema `json:"owners" nullable:"false" minItems:"1" doc:"Users then groups holding the Owner role; [{\"ownerType\":\"system\"}] when there are none."`
}

// projectOwnerSchema documents flagadmin.ProjectOwner.
type projectOwnerSchema struct {
	OwnerType string  `json:"ownerType" enum:"user,group,system" doc:"What owns the project."`
	Name      string  `json:"name,omitempty" doc:"The user's name (else username, else email) or the group's name; absent for system."`
	Email     *string `json:"email,omitempty" nullable:"true" doc:"A user owner's email, null when it has none; absent for groups and system."`
	ImageURL  *string `json:"imageUrl,omitempty" nullable:"true" doc:"A user owner's avatar URL, null without an email; absent for groups and system."`
}

// errorSchema documents apiError, the body of every error response.
type errorSchema struct {
	ID      string              `json:"id" format:"uuid" doc:"The id of this error instance (a UUID); quote it when reporting a problem."`
	Name    string              `json:"name" enum:"BadDataError,AuthenticationRequired,NoAccessError,NotFoundError,MethodNotAllowedError,RequestTimeout,ReadOnlyError,ConflictError,ContentTooLarge,ContentTypeError,InternalError,BadGatewayError,ServiceUnavailable,GatewayTimeout" doc:"The kind of error."`
	Message string              `json:"message" doc:"What went wrong, for humans; not a fixed value."`
	Details []errorDetailSchema `json:"details,omitempty" doc:"On 400: every offending parameter or field."`
}

// errorDetailSchema documents errorDetail.
type errorDetailSchema struct {
	Message string `json:"message" doc:"What is wrong and what is allowed."`
	Path    string `json:"path,omitempty" doc:"The offending parameter or body field, such as limit or status." example:"limit"`
}

// errorDescriptions describe each error status in the OpenAPI document.
var errorDescriptions = map[int]string{
	http.StatusBadRequest:   "BadDataError: a parameter or the body is malformed; details name each offending parameter or field.",
	http.StatusUnauthorized: "AuthenticationRequired: the Authorization header is missing, or its token is unknown, expired or belongs to a deleted account.",
	http.StatusForbidden:    "NoAccessError: valid credentials without the permission the operation needs. Client and frontend tokens are always refused.",
	http.StatusNotFound:     "NotFoundError: the resource does not exist or is not visible to the caller.",
	http.StatusConflict: "ReadOnlyError: this server keeps a read-only copy of an Unleash database (it follows it); make the change in Unleash. The message names the database. " +
		"ConflictError (the log's checkpoint): the server refuses to sign a log that does not extend the last checkpoint it signed; the message says why.",
	http.StatusRequestEntityTooLarge: "ContentTooLarge: the request body is larger than the limit (%d bytes).",
	http.StatusUnsupportedMediaType:  "ContentTypeError: the body has a Content-Type other than JSON.",
	http.StatusInternalServerError:   "InternalError: an unexpected error. The message never shows its cause; the server logs it with the error id.",
	http.StatusServiceUnavailable:    "ServiceUnavailable: the storage is unreachable or did not answer in time, or a server that follows Unleash has not loaded its copy yet (the message says how far the copy is, or why it cannot be made). Retry after Retry-After seconds.",
}

// operation returns an operation with its id, tag, the API key security
// requirement, a description of its success response and the documented
// error responses of statuses (400, 401, ...), each with the error schema.
func (s *Server) operation(id, method, path, tag, summary, description, success string, statuses ...int) huma.Operation {
	registry := s.api.OpenAPI().Components.Schemas
	errSchema := registry.Schema(reflect.TypeFor[errorSchema](), true, "errorSchema")
	responses := map[string]*huma.Response{"200": {Description: success}}
	for _, status := range statuses {
		desc := errorDescriptions[status]
		if status == http.StatusRequestEntityTooLarge {
			desc = fmt.Sprintf(desc, s.maxBody)
		}
		resp := &huma.Response{
			Description: desc,
			Content:     map[string]*huma.MediaType{"application/json": {Schema: errSchema}},
		}
		if status == http.StatusServiceUnavailable {
			resp.Headers = map[string]*huma.Param{"Retry-After": {
				Description: "Seconds to wait before retrying.",
				Schema:      &huma.Schema{Type: huma.TypeInteger},
			}}
		}
		responses[strconv.Itoa(status)] = resp
	}
	return huma.Operation{
		OperationID:     id,
		Method:          method,
		Path:            path,
		Tags:            []string{tag},
		Summary:         summary,
		Description:     description,
		Security:        []map[string][]string{{securityScheme: {}}},
		Responses:       responses,
		DefaultStatus:   http.StatusOK,
		MaxBodyBytes:    -1, // limitRequest caps every body at s.maxBody
		BodyReadTimeout: s.bodyRead,
	}
}
