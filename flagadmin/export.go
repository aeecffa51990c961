package flagadmin

import (
	"context"
	"strconv"
)

// ExportFormat is the format of an export of the event log: NDJSON or CSV.
type ExportFormat string

// Export formats.
const (
	// ExportNDJSON writes one Event JSON per line (application/x-ndjson).
	ExportNDJSON ExportFormat = "ndjson"
	// ExportCSV writes a CSV table with a header row (text/csv).
	ExportCSV ExportFormat = "csv"
)

// ExportBatchSize is how many events a store reads per statement of an
// export (Store.ExportEvents): the memory an export holds, whatever its size.
const ExportBatchSize = 1000

// EventExportParams are the raw query-string parameters of GET
// /api/admin/events/export: the search's filters, a format and a resume
// point. Every one is optional; the search's Offset, Limit and After must
// be empty (an export has no pages).
type EventExportParams struct {
	EventSearchParams
	// Format is "ndjson" (the default) or "csv".
	Format string
	// AfterID resumes an export: only events with a greater id. A
	// non-negative integer; empty means 0.
	AfterID string
}

// EventExport is an export ready to run: its parameters validated and the
// caller's visibility applied. Service.ExportEvents returns it; Run
// streams its events.
type EventExport struct {
	// Format is the format the caller asked for.
	Format ExportFormat
	// Query selects the events (filters and visibility; no paging).
	Query EventQuery
	// AfterID: only events with a greater id are exported.
	AfterID int64

	store Store
	// none: the visibility leaves nothing to export (the store is not asked).
	none bool
}

// ParseEventExport validates the parameters of an export: the filters as
// ParseEventSearch does, format, afterId, and no limit, offset or after.
// It returns the query (without paging), the format and the resume id, or
// a *ValidationError naming every offending parameter.
func ParseEventExport(p EventExportParams) (EventQuery, ExportFormat, int64, error) {
	v := &ValidationError{}
	filters := p.EventSearchParams
	for _, f := range filterParams {
		if f.Kind == FilterPaging && !f.Uses.Has(UseExport) {
			if f.Value(&filters) != "" {
				v.Fields = append(v.Fields, FieldError{Path: f.Name, Message: "is not a parameter of the export, which has no pages: resume an export with afterId"})
			}
			f.Set(&filters, "")
		}
	}
	q, err := ParseEventSearch(filters)
	if ve, ok := err.(*ValidationError); ok {
		v.Fields = append(v.Fields, ve.Fields...)
	}
	q.Limit, q.Offset = 0, 0
	format := ExportNDJSON
	switch p.Format {
	case "", string(ExportNDJSON):
	case string(ExportCSV):
		format = ExportCSV
	default:
		v.Fields = append(v.Fields, FieldError{Path: "format", Message: "must be ndjson or csv, got " + QuoteInput(p.Format)})
	}
	afterID, err := parseAfterID("afterId", p.AfterID)
	if ve, ok := err.(*ValidationError); ok {
		v.Fields = append(v.Fields, ve.Fields...)
	}
	if len(v.Fields) > 0 {
		return EventQuery{}, "", 0, v
	}
	return q, format, afterID, nil
}

// parseAfterID parses an event id to resume after: a non-negative decimal
// integer (digits only); empty means 0.
func parseAfterID(param, raw string) (int64, error) {
	if raw == "" {
		return 0, nil
	}
	bad := invalid(param, "must be an integer of 0 or more (the id of the last event received), got %s", QuoteInput(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return 0, bad
		}
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, bad
	}
	return n, nil
}

// ExportEvents prepares the export of every event matching params that p
// may see (GET /api/admin/events/export), in id order: the same
// permission, filters, validation and visibility as SearchEvents. Errors
// here come before anything is sent; Run streams the events.
func (s *Service) ExportEvents(ctx context.Context, p Principal, params EventExportParams) (*EventExport, error) {
	if err := s.authorize(ctx, p, adminAPI); err != nil {
		return nil, err
	}
	q, format, afterID, err := ParseEventExport(params)
	if err != nil {
		return nil, err
	}
	exp := &EventExport{Format: format, Query: q, AfterID: afterID, store: s.store}
	hidden, restricted, err := s.visibility(ctx, p)
	if err != nil {
		return nil, err
	}
	if restricted {
		exp.none = exp.Query.restrict(hidden)
	}
	return exp, nil
}

// Run calls fn with every event of the export, id ascending, as the store
// reads them in batches (Store.ExportEvents): it holds one batch at a time.
// An error of fn, of the store or of ctx ends it and is returned.
func (e *EventExport) Run(ctx context.Context, fn func(Event) error) error {
	if e.none {
		return ctx.Err()
	}
	return e.store.ExportEvents(ctx, e.Query, e.AfterID, fn)
}
