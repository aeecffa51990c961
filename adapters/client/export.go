package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// ExportFormat is the format of an export: NDJSON or CSV.
type ExportFormat string

// Export formats.
const (
	// ExportNDJSON is one Event JSON per line (application/x-ndjson).
	ExportNDJSON ExportFormat = "ndjson"
	// ExportCSV is a CSV table with a header row (text/csv).
	ExportCSV ExportFormat = "csv"
)

// exportPath is the path of the export.
const exportPath = "/api/admin/events/export"

// maxExportLine bounds one line of an NDJSON export, that is one event.
const maxExportLine = 16 << 20

// Export opens the export of every event matching params (GET
// /api/admin/events/export) in format, id ascending, starting after the
// event afterID (0 for all), and returns its body as it streams. The
// filters of params are those of the search; its Offset and Limit must be
// empty (the server refuses them). Errors found before the first byte are
// *Error values; opening is retried like a GET.
//
// Reading to io.EOF means the export is complete. A transfer the server
// cut off (the response ends without its final chunk) reads
// as an error, io.ErrUnexpectedEOF or a connection error, never as io.EOF;
// resume it with afterID set to the last id received. A response whose end
// could not be told from a cut (an HTTP/1 body delimited by closing the
// connection) is refused. The caller must close the reader.
func (c *Client) Export(ctx context.Context, params flagadmin.EventSearchParams, format ExportFormat, afterID int64) (io.ReadCloser, error) {
	var accept, mediaType string
	switch format {
	case ExportNDJSON:
		accept, mediaType = "application/x-ndjson", "application/x-ndjson"
	case ExportCSV:
		accept, mediaType = "text/csv", "text/csv"
	default:
		return nil, &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: "format", Message: "must be ndjson or csv, got " + strconv.Quote(string(format))}}}
	}
	q := searchQuery(params)
	q.Set("format", string(format))
	if afterID > 0 {
		q.Set("afterId", strconv.FormatInt(afterID, 10))
	}
	u := c.endpoint(exportPath, q)
	resp, _, err := c.exchange(ctx, request{method: http.MethodGet, url: u, accept: accept + ", application/json", retry: retrySafe}, true)
	if err != nil {
		return nil, err
	}
	if err := requireMediaType(resp, "export events", func(mt string) bool { return mt == mediaType }); err != nil {
		resp.Body.Close()
		return nil, err
	}
	if resp.ProtoMajor == 1 && resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 {
		resp.Body.Close()
		return nil, errors.New("client: export events: the response is delimited by closing the connection, so a cut-off export could not be told from a complete one")
	}
	return &exportBody{rc: resp.Body, op: "GET " + u.Path}, nil
}

// exportBody marks every read error but io.EOF as a connectionError, so
// that ExportEvents tells a broken transfer from a broken line.
type exportBody struct {
	rc io.ReadCloser
	op string
}

func (b *exportBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = &connectionError{op: b.op, err: err}
	}
	return n, err
}

func (b *exportBody) Close() error { return b.rc.Close() }

// errUnterminatedLine: an export that ended cleanly in the middle of a line.
var errUnterminatedLine = errors.New("the export ends in the middle of a line")

// ExportEvents walks the NDJSON export of every event matching params, id
// ascending, starting after the event afterID (0 for all); breaking out of
// the loop stops the transfer. An error is yielded once and ends the walk.
//
// A transfer cut off (by the server or the network) is resumed where it
// broke, with afterId set to the last event received, as the RetryPolicy
// allows: MaxAttempts consecutive breaks without a new event end the walk
// with the error. Events out of id order or a malformed line are an error
// of the server and are not retried.
func (c *Client) ExportEvents(ctx context.Context, params flagadmin.EventSearchParams, afterID int64) iter.Seq2[flagadmin.Event, error] {
	return func(yield func(flagadmin.Event, error) bool) {
		policy := c.retry.withDefaults()
		breaks := 0
		for {
			body, err := c.Export(ctx, params, ExportNDJSON, afterID)
			if err != nil {
				yield(flagadmin.Event{}, err)
				return
			}
			last, stopped, err := readExport(body, afterID, yield)
			body.Close()
			if stopped || err == nil {
				return
			}
			var ce *connectionError
			if !errors.As(err, &ce) || ctx.Err() != nil {
				yield(flagadmin.Event{}, err)
				return
			}
			if last > afterID {
				breaks = 0
			}
			afterID = last
			if breaks++; breaks >= policy.MaxAttempts {
				yield(flagadmin.Event{}, err)
				return
			}
			if err := sleep(ctx, policy.backoff(breaks)); err != nil {
				yield(flagadmin.Event{}, err)
				return
			}
		}
	}
}

// readExport yields the events of an NDJSON body whose ids must be greater
// than afterID and ascending. It returns the id of the last event yielded,
// whether the consumer stopped, and the error that ended the body (nil at a
// clean end).
func readExport(body io.Reader, afterID int64, yield func(flagadmin.Event, error) bool) (last int64, stopped bool, err error) {
	last = afterID
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxExportLine)
	sc.Split(splitLines)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, err := decodeEvent(line)
		if err != nil {
			return last, false, fmt.Errorf("client: export events: the line after event %d: %w", last, err)
		}
		if ev.ID <= last {
			return last, false, fmt.Errorf("client: export events: event %d follows event %d: ids must ascend", ev.ID, last)
		}
		last = ev.ID
		if !yield(ev, nil) {
			return last, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		var ce *connectionError
		if errors.As(err, &ce) {
			return last, false, err
		}
		return last, false, fmt.Errorf("client: export events: after event %d: %w", last, err)
	}
	return last, false, nil
}

// splitLines is bufio.ScanLines that refuses a last line without its
// line feed instead of returning it.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return 0, nil, errUnterminatedLine
	}
	return 0, nil, nil
}
