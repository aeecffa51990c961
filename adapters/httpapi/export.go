package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The export (NDJSON or CSV, in id order) streams every matching event as it is read:
// the store hands over one batch at a time, the events go through a
// buffered writer to the connection, and a client that reads slowly blocks
// the writes and so the next batch. The status and headers are sent with
// the first bytes: a failure before them is a normal JSON error, one after
// them aborts the response, so the chunked body lacks its final chunk and
// no client can take a cut-off export for a complete one.

const (
	// exportBufferSize is the buffer between the encoder and the connection.
	exportBufferSize = 64 << 10
	// exportFlushEvery flushes the response after this many events, so the
	// client gets data as it is read even when events are small.
	exportFlushEvery = flagadmin.ExportBatchSize
	// exportStallTimeout ends an export whose client has not taken any
	// bytes for this long (the write deadline moves on with every flush):
	// a client that stops reading does not hold the server forever.
	exportStallTimeout = time.Minute
)

// csvOmitted are the declared event fields (flagadmin.EventFields) that a
// CSV export has no column for: its columns are fixed (docs/api.md, "Export").
var csvOmitted = []string{"groupType", "groupId"}

// csvFields are the columns of a CSV export: the declared event fields
// but csvOmitted, in their order (appendCSVRecord writes them).
var csvFields = func() []flagadmin.EventField {
	var out []flagadmin.EventField
	for _, f := range flagadmin.EventFields() {
		if !slices.Contains(csvOmitted, f.Name) {
			out = append(out, f)
		}
	}
	return out
}()

// csvColumns are the names of csvFields.
var csvColumns = func() []string {
	var out []string
	for _, f := range csvFields {
		out = append(out, f.Name)
	}
	return out
}()

// csvHeader is the header row of a CSV export.
var csvHeader = strings.Join(csvColumns, ",") + "\n"

// exportEventsInput are the query parameters of GET
// /api/admin/events/export: the search's filters, the format and the
// resume point. limit, offset and after are declared so that the domain
// sees them and refuses them by name.
type exportEventsInput struct {
	LogFilters
	Format  string `query:"format" minLength:"1" enum:"ndjson,csv" doc:"ndjson (the default): one event JSON per line, exactly as in the search's pages; csv: a table with a header row."`
	AfterID string `query:"afterId" minLength:"1" doc:"Resume an export: only events whose id is greater than this non-negative integer (the id of the last event received)." example:"1000"`
	Limit   string `query:"limit" minLength:"1" doc:"Not allowed (400): an export has no pages."`
	Offset  string `query:"offset" minLength:"1" doc:"Not allowed (400): an export has no pages; resume with afterId."`
	After   string `query:"after" minLength:"1" doc:"Not allowed (400): cursors are for the search's pages; resume an export with afterId."`
}

// exportParams are the parameters as the domain takes them.
func (in *exportEventsInput) exportParams() flagadmin.EventExportParams {
	return flagadmin.EventExportParams{EventSearchParams: in.params(in.Limit, in.Offset, in.After), Format: in.Format, AfterID: in.AfterID}
}

type exportEventsOutput struct {
	// Body streams the export (see streamExport).
	Body func(huma.Context)
}

func (s *Server) registerExport() {
	op := s.operation("exportEvents", http.MethodGet, "/api/admin/events/export", tagEvents,
		"Export events",
		"Streams every event matching the filters that the caller may see (the same filters, validation "+
			"and visibility as the search), in id order (the order events were recorded), with no page cap, "+
			"as NDJSON (one event JSON per line, exactly as in the search's pages) or CSV (RFC 4180, a header "+
			"row, records ending with LF, null as an empty cell, data/preData/tags as compact JSON, and a "+
			"text cell starting with = + - @ tab or CR prefixed with ' against spreadsheet formulas). "+
			"Errors found before the first byte are JSON errors; a failure after it aborts the transfer (the "+
			"response ends without its final chunk), so a cut-off export never looks complete: resume it with "+
			"afterId=<last id received>. limit, offset and after are 400.",
		"The export, streamed.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	op.SkipValidateParams = true // the domain validates, naming each parameter
	registry := s.api.OpenAPI().Components.Schemas
	op.Responses["200"].Content = map[string]*huma.MediaType{
		// Each line is one event; the schema describes a line.
		"application/x-ndjson": {Schema: registry.Schema(reflect.TypeFor[flagadmin.Event](), true, "")},
		"text/csv": {Schema: &huma.Schema{Type: huma.TypeString,
			Description: "A header row " + csvHeader[:len(csvHeader)-1] + ", then one record per event, each ending with LF."}},
	}
	op.Responses["200"].Headers = map[string]*huma.Param{"Content-Disposition": {
		Description: `attachment; filename="events-<UTC time as 20261123T214500Z>.<ndjson|csv>"`,
		Schema:      &huma.Schema{Type: huma.TypeString},
	}}
	register(s, op, s.exportEvents) // checkInput: each parameter once, with a value
}

func (s *Server) exportEvents(ctx context.Context, in *exportEventsInput) (*exportEventsOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	exp, err := s.svc.ExportEvents(ctx, p, in.exportParams())
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	return &exportEventsOutput{Body: func(hctx huma.Context) {
		r, w := humago.Unwrap(hctx)
		s.streamExport(w, r, exp)
	}}, nil
}

// exportWriter writes an export's bytes, sending the status and headers,
// then the format's header row, before the first of them.
type exportWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     *bufio.Writer
	started bool
	// pending counts the events since the last flush.
	pending int
	// scratch is reused for each event's bytes.
	scratch []byte
	// contentType and filename are the headers' (Content-Type and
	// Content-Disposition).
	contentType, filename string
	// header is the format's header row, if any.
	header []byte
	// encode appends the bytes of an event.
	encode func(b []byte, e flagadmin.Event) ([]byte, error)
}

// newExportWriter writes an export of the format to w.
func newExportWriter(w http.ResponseWriter, format flagadmin.ExportFormat) *exportWriter {
	x := &exportWriter{w: w, rc: http.NewResponseController(w), buf: bufio.NewWriterSize(w, exportBufferSize)}
	x.contentType, x.encode = "application/x-ndjson", appendExportEventJSON
	ext := "ndjson"
	if format == flagadmin.ExportCSV {
		var tags bytes.Buffer
		x.contentType, x.header = "text/csv; charset=utf-8", []byte(csvHeader)
		x.encode = func(b []byte, e flagadmin.Event) ([]byte, error) { return appendCSVRecord(b, e, &tags) }
		ext = "csv"
	}
	x.filename = "events-" + time.Now().UTC().Format("20060102T150405Z") + "." + ext
	return x
}

// begin starts the response, once: status, headers and the header row.
func (x *exportWriter) begin() error {
	if x.started {
		return nil
	}
	x.started = true
	// The server's write timeout is for answers of a known size; an
	// export takes as long as it takes, bounded by exportStallTimeout.
	_ = x.rc.SetWriteDeadline(time.Now().Add(exportStallTimeout))
	h := x.w.Header()
	h.Set("Content-Type", x.contentType)
	h.Set("Content-Disposition", `attachment; filename="`+x.filename+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	x.w.WriteHeader(http.StatusOK)
	_, err := x.buf.Write(x.header)
	return err
}

// event writes the bytes of e, flushing every exportFlushEvery events.
func (x *exportWriter) event(e flagadmin.Event) error {
	var err error
	if x.scratch, err = x.encode(x.scratch[:0], e); err != nil {
		return err
	}
	if err := x.begin(); err != nil {
		return err
	}
	if _, err := x.buf.Write(x.scratch); err != nil {
		return err
	}
	if x.pending++; x.pending >= exportFlushEvery {
		return x.flush()
	}
	return nil
}

// finish ends an export that ran to its end: an export of no events is
// its header row alone (or empty), sent like any other.
func (x *exportWriter) finish() error {
	if err := x.begin(); err != nil {
		return err
	}
	return x.flush()
}

// flush sends the buffered bytes to the client, moving the write deadline.
func (x *exportWriter) flush() error {
	x.pending = 0
	_ = x.rc.SetWriteDeadline(time.Now().Add(exportStallTimeout))
	if err := x.buf.Flush(); err != nil {
		return err
	}
	return x.rc.Flush()
}

// streamExport runs exp and writes its events to w. See the comment at the
// top of this file for what happens on failure.
func (s *Server) streamExport(w http.ResponseWriter, r *http.Request, exp *flagadmin.EventExport) {
	x := newExportWriter(w, exp.Format)
	ctx, cancel := streamContext(r.Context())
	defer cancel()
	err := exp.Run(ctx, x.event)
	if err == nil {
		err = x.finish()
	}
	if err == nil {
		return
	}
	if !x.started {
		s.writeError(w, r, err)
		return
	}
	// After the first byte nothing can be said in the body: abort, so the
	// transfer ends without its final chunk. The cause is logged unless the
	// client went away (then it is a write or context error).
	if undeadlined(r.Context()).Err() == nil {
		_ = s.fail(r.Context(), err)
	}
	panic(http.ErrAbortHandler)
}

// appendExportEventJSON appends one NDJSON line of e: the Event JSON of the
// search's pages, then LF.
func appendExportEventJSON(b []byte, e flagadmin.Event) ([]byte, error) {
	return append(appendEvent(b, &e), '\n'), nil
}

// appendCSVRecord appends the CSV record of e (RFC 4180 quoting), its
// csvFields by kind, ending with LF; scratch is space for the tags' JSON.
// Text is written as a text cell (appendCSVText), numbers as digits, the
// time as the JSON pages write it without its quotes, null as an empty
// cell, data and preData as they are stored (compact, normalized on
// write), tags as their JSON.
func appendCSVRecord(b []byte, e flagadmin.Event, scratch *bytes.Buffer) ([]byte, error) {
	for i, f := range csvFields {
		if i > 0 {
			b = append(b, ',')
		}
		switch f.Kind {
		case flagadmin.FieldInt:
			b = strconv.AppendInt(b, *f.Int(&e), 10)
		case flagadmin.FieldTime:
			// digits, dashes, colons and a dot, never quoted nor guarded.
			var at [40]byte
			t := appendJSONTime(at[:0], *f.Time(&e))
			b = append(b, t[1:len(t)-1]...)
		case flagadmin.FieldText:
			b = appendCSVText(b, *f.Text(&e))
		case flagadmin.FieldIntOrNull:
			if n := *f.IntOrNull(&e); n != nil {
				b = strconv.AppendInt(b, *n, 10)
			}
		case flagadmin.FieldTextOrNull, flagadmin.FieldTextOrAbsent:
			if s := *f.TextOrNull(&e); s != nil {
				b = appendCSVText(b, *s)
			}
		case flagadmin.FieldJSONOrNull:
			if raw := *f.JSON(&e); len(raw) > 0 && string(raw) != "null" {
				b = appendCSVText(b, string(raw))
			}
		case flagadmin.FieldTags:
			scratch.Reset()
			tags := appendTags(scratch.AvailableBuffer(), *f.Tags(&e))
			b = appendCSVText(b, string(tags))
		}
	}
	return append(b, '\n'), nil
}

// appendCSVText appends a text cell: prefixed with ' when it begins with
// = + - @ tab or CR (a spreadsheet would take it for a formula), then
// quoted as RFC 4180 when it holds a comma, quote, CR or LF, quotes
// doubled. Its bytes are otherwise kept as they are.
func appendCSVText(b []byte, s string) []byte {
	guard := len(s) > 0 && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r')
	quote := strings.ContainsAny(s, ",\"\r\n")
	if quote {
		b = append(b, '"')
	}
	if guard {
		b = append(b, '\'')
	}
	if !quote {
		return append(b, s...)
	}
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		b = append(append(b, s[:i+1]...), '"')
		s = s[i+1:]
	}
	return append(append(b, s...), '"')
}
