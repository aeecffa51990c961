package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// LogFilters are the filters of the event searches, declared once for the
// operations that take them in the query string (the search, the export
// and the stream embed them): those flagadmin.FilterParams declares for
// all three (a test checks). They reach the domain as raw strings
// (params), which it parses and validates, naming each parameter; the
// patterns document them. checkInput refuses one given twice or, but for
// query, empty. Exported only because Huma reads the parameters of
// embedded structs that are.
type LogFilters struct {
	Query       string `query:"query" maxLength:"1000" doc:"Free text, matched case-insensitively as a literal substring (% and _ are not wildcards) of the JSON of the event's data, preData and tags." example:"checkout"`
	Feature     string `query:"feature" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by feature name: IS:<name> or IS_ANY_OF:<name>,<name>,... Items are trimmed; the match is exact and case-sensitive." example:"IS:new-checkout"`
	Project     string `query:"project" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by project id: IS:<id> or IS_ANY_OF:<id>,<id>,..." example:"IS_ANY_OF:default,payments"`
	Type        string `query:"type" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by event type: IS:<type> or IS_ANY_OF:<type>,<type>,... Any type name is accepted (Unleash adds types in every release); a name of more than 255 characters is a 400." example:"IS:feature-created"`
	CreatedBy   string `query:"createdBy" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by the numeric id of the user who caused the event (createdByUserId; -42 for admin tokens): IS:<id> or IS_ANY_OF:<id>,<id>,..." example:"IS:1"`
	Environment string `query:"environment" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by environment: IS:<env> or IS_ANY_OF:<env>,<env>,..." example:"IS:production"`
	ID          string `query:"id" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by numeric event id: IS:<id> or IS_ANY_OF:<id>,<id>,..." example:"IS_ANY_OF:1,2"`
	GroupID     string `query:"groupId" minLength:"1" pattern:"^(IS|IS_ANY_OF):(.*?)(,([a-zA-Z0-9_]+))*$" doc:"Filter by groupId, the id shared by the events of one Unleash transaction: IS:<id> or IS_ANY_OF:<id>,<id>,..." example:"IS:01M8564MBTV5HMX3GH6SHGBVKG"`
	From        string `query:"from" minLength:"1" pattern:"^(IS):\\d{4}-\\d{2}-\\d{2}$" doc:"Only events created on or after this UTC day (from 00:00:00Z), written IS:yyyy-MM-dd." example:"IS:2025-01-01"`
	To          string `query:"to" minLength:"1" pattern:"^(IS):\\d{4}-\\d{2}-\\d{2}$" doc:"Only events created on or before this UTC day (before 00:00:00Z of the next day), written IS:yyyy-MM-dd." example:"IS:2025-12-31"`
}

// params are the filters as the domain takes them, with the paging
// parameters the caller sent (which the export and the stream refuse).
// Every field of LogFilters is one parameter here (a test checks).
func (f *LogFilters) params(limit, offset, after string) flagadmin.EventSearchParams {
	return flagadmin.EventSearchParams{
		Query: f.Query, Feature: f.Feature, Project: f.Project, Type: f.Type, CreatedBy: f.CreatedBy,
		Environment: f.Environment, ID: f.ID, GroupID: f.GroupID, From: f.From, To: f.To,
		Limit: limit, Offset: offset, After: after,
	}
}

// searchEventsInput are the query parameters of GET /api/admin/search/events:
// the filters and the paging parameters, those flagadmin.FilterParams
// declares for the search (a test checks).
type searchEventsInput struct {
	LogFilters
	Offset string `query:"offset" minLength:"1" doc:"The number of matching events to skip: an integer of 0 or more; default 0." example:"0"`
	Limit  string `query:"limit" minLength:"1" doc:"The page size: an integer from 1 to 1000; default 50." example:"50"`
	After  string `query:"after" minLength:"1" doc:"The cursor of the next page, from the Link rel=\"next\" header of the previous one (keyset paging): the page starts right after the last event of that page. Opaque: use the link as it is. offset must be absent or 0." example:"AQAAAZVJqvp7AAAAAAAAAAfM0yGD"`

	path, rawQuery string // of the request, for the next link (see Resolve)
}

// searchParams are the parameters as the domain takes them.
func (in *searchEventsInput) searchParams() flagadmin.EventSearchParams {
	return in.params(in.Limit, in.Offset, in.After)
}

// eventSearchResponseSchema documents the response of the query-string
// search; appendSearchEventsBody writes it.
type eventSearchResponseSchema struct {
	Events []flagadmin.Event `json:"events" nullable:"false" doc:"The page of matching events, newest first (createdAt, then id, descending)."`
	Total  int               `json:"total" minimum:"0" doc:"The number of all matching events, ignoring offset and limit."`
}

type searchEventsOutput struct {
	Link string `header:"Link" doc:"On every page but the last: <URL>; rel=\"next\", the relative URL of the next page (this request with offset removed and after set)."`
	// Body writes an eventSearchResponseSchema encoded beforehand.
	Body func(huma.Context)
}

// deprecatedSearchEventsSchema is the body of the deprecated search
// (POST /api/admin/events/search). Every field is optional; unknown fields are ignored.
// Its schema documents the rules; checkInput checks the JSON types and the
// domain (flagadmin.ParseDeprecatedSearch) the values.
type deprecatedSearchEventsSchema struct {
	_       struct{} `additionalProperties:"true"`
	Type    *string  `json:"type,omitempty" doc:"Only events of this type (one of the known event types; case-sensitive). An unknown type is a 400." example:"feature-created"`
	Project *string  `json:"project,omitempty" doc:"Only events of this project (exact, case-sensitive)." example:"default"`
	Feature *string  `json:"feature,omitempty" doc:"Only events of this feature flag (exact, case-sensitive)." example:"new-checkout"`
	Query   *string  `json:"query,omitempty" maxLength:"1000" doc:"Free text, matched case-insensitively as a literal substring of the event type, the creator (createdBy) and the JSON of data, preData and tags." example:"checkout"`
	Limit   *jsonInt `json:"limit,omitempty" doc:"The maximum number of events returned."`
	Offset  *jsonInt `json:"offset,omitempty" doc:"The number of matching events to skip, in the order of the response (newest first): page with offset += limit. Despite older descriptions of this API, it is not an event id."`
}

// TransformSchema sets the bounds of limit and offset from the domain's.
func (deprecatedSearchEventsSchema) TransformSchema(_ huma.Registry, s *huma.Schema) *huma.Schema {
	one, zero, maxLimit, def := 1.0, 0.0, float64(flagadmin.DeprecatedMaxLimit), flagadmin.DeprecatedDefaultLimit
	s.Properties["limit"].Minimum = &one
	s.Properties["limit"].Maximum = &maxLimit
	s.Properties["limit"].Default = def
	s.Properties["limit"].Description += " From 1 to " + strconv.Itoa(flagadmin.DeprecatedMaxLimit) + "; default " + strconv.Itoa(def) + "."
	s.Properties["offset"].Minimum = &zero
	s.Properties["offset"].Default = 0
	return s
}

type deprecatedSearchEventsInput struct {
	Body *deprecatedSearchEventsSchema `required:"false"`
}

// eventsSchema documents the response of the deprecated search;
// appendDeprecatedSearchBody writes it.
type eventsSchema struct {
	Version     int               `json:"version" minimum:"1" enum:"1" doc:"The version of this format; increases only when it changes."`
	Events      []flagadmin.Event `json:"events" nullable:"false" doc:"The page of matching events, newest first (createdAt, then id, descending)."`
	TotalEvents int               `json:"totalEvents" minimum:"0" doc:"The number of all events matching every filter, including query, ignoring offset and limit."`
}

type deprecatedSearchEventsOutput struct {
	Deprecation string `header:"Deprecation" doc:"Always true: the operation is deprecated."`
	Link        string `header:"Link" doc:"The successor of this operation: </api/admin/search/events>; rel=\"successor-version\"."`
	// Body writes an eventsSchema encoded beforehand.
	Body func(huma.Context)
}

func (s *Server) registerEvents() {
	search := s.operation("searchEvents", http.MethodGet, "/api/admin/search/events", tagEvents,
		"Search for events",
		"Searches the event log with filters in the query string; every parameter is optional and "+
			"unknown parameters are ignored. Filters take IS:<value> or IS_ANY_OF:<value>,<value>,...; "+
			"both mean \"the column is one of the values\" (exact, case-sensitive), and an event whose "+
			"column is null never matches a filter. A malformed parameter is a 400 naming it. Callers that "+
			"are not root admins do not see events of private projects they are not members of, nor events "+
			"without a project.",
		"A page of matching events with the count of all matches.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	search.SkipValidateParams = true // the domain validates, naming each parameter
	documentJSONBody[eventSearchResponseSchema](s, &search)
	register(s, search, s.searchEvents)

	deprecated := s.operation("deprecatedSearchEvents", http.MethodPost, "/api/admin/events/search", tagEvents,
		"Search for events (deprecated)",
		"Deprecated: use GET /api/admin/search/events. Searches the event log with filters in a JSON "+
			"body; every field is optional, unknown fields are ignored, and an empty body or {} returns "+
			"every event the caller can see, newest first. offset is the number of matching events to "+
			"skip (not an event id): page with offset += limit. totalEvents counts all matches of every "+
			"filter including query. The same visibility rules as the query-string search apply. "+
			"Responses carry the headers Deprecation: true and Link: </api/admin/search/events>; "+
			"rel=\"successor-version\".",
		"A page of matching events with the count of all matches.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	deprecated.Deprecated = true
	deprecated.SkipValidateBody = true // checkInput checks the JSON, the domain the values
	documentJSONBody[eventsSchema](s, &deprecated)
	register(s, deprecated, s.deprecatedSearchEvents)
}

func (s *Server) searchEvents(ctx context.Context, in *searchEventsInput) (*searchEventsOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	page, err := s.svc.SearchEvents(ctx, p, in.searchParams())
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	body := s.encodedBody(page, appendSearchEventsBody)
	out := &searchEventsOutput{Body: body}
	if page.Next != "" {
		out.Link = nextLink(in.path, in.rawQuery, page.Next)
	}
	return out, nil
}

func (s *Server) deprecatedSearchEvents(ctx context.Context, in *deprecatedSearchEventsInput) (*deprecatedSearchEventsOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var req flagadmin.DeprecatedSearchRequest
	if b := in.Body; b != nil {
		req = flagadmin.DeprecatedSearchRequest{Type: b.Type, Project: b.Project, Feature: b.Feature, Query: b.Query, Limit: intPtr(b.Limit), Offset: intPtr(b.Offset)}
	}
	page, err := s.svc.DeprecatedSearchEvents(ctx, p, req)
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	body := s.encodedBody(page, appendDeprecatedSearchBody)
	return &deprecatedSearchEventsOutput{
		Deprecation: "true",
		Link:        `</api/admin/search/events>; rel="successor-version"`,
		Body:        body,
	}, nil
}
