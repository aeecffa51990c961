package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Environment of the client commands.
const (
	envURL   = "FLAGADMIN_URL"
	envToken = "FLAGADMIN_TOKEN"
)

// exportMaxBreaks is how many transfers in a row may break without
// bringing a new event before events export gives up.
const exportMaxBreaks = 5

var eventsExportCommand = command{
	usage:   "flagadmin events export [flags]",
	summary: "Exports the events of a running server, as NDJSON or CSV, to a file or stdout.",
	about: `Every event matching the filters that the token may see is written, id
ascending, from GET /api/admin/events/export: NDJSON (one event JSON per line,
the default) or CSV, to --out or stdout. Progress (events written, events/s)
goes to stderr.

Filters take the API's values (IS:a or IS_ANY_OF:a,b); a value without an
operator means IS_ANY_OF (--project default,payments), and --from/--to take a
bare date (2025-01-31) too.

Only whole records are written. A transfer the server or the network cuts off is
resumed where it broke, by itself. When the command itself stops after writing
events (Ctrl-C, an error of the server or the network), it prints the id of the
last event written: run it again with --after-id ID and the same --out, which is
then appended to, to get the rest.

--out is written as a temporary file beside it, which takes its name at the end,
or when the export stops after writing events; an export that writes no event
(a refused token, a bad filter) leaves --out as it was.`,
	env: []string{envURL, envToken},
}

// eventsGroup is the help of flagadmin events.
var eventsGroup = commandGroup{
	name:    "events",
	summary: "Reads the event log of a running server: exports it, or follows it live.",
	subs:    []subcommandHelp{{"export", &eventsExportCommand}, {"tail", &eventsTailCommand}},
}

func (c *cli) events(ctx context.Context, args []string) error {
	sub, rest, err := c.subcommand(eventsGroup, args)
	if err != nil {
		return err
	}
	if sub == "tail" {
		return c.eventsTail(ctx, rest)
	}
	fs := newFlagSet("flagadmin events export")
	baseURL, token := serverFlags(fs)
	format := fs.String("format", "ndjson", "output `FORMAT`: ndjson or csv")
	out := fs.String("out", "", "write to this `FILE` instead of stdout (appended to with --after-id)")
	afterID := fs.Int64("after-id", 0, "export only events with an id greater than `ID`: resume after the last one written")
	progress := fs.Duration("progress", time.Second, "the `DURATION` between progress reports on stderr (0: only at the end)")
	p := filterFlags(fs)
	positional, err := c.parse(fs, eventsExportCommand, rest)
	if err != nil {
		return err
	}
	if err := noArgs(fs, positional); err != nil {
		return err
	}
	exportFormat := client.ExportFormat(*format)
	if exportFormat != client.ExportNDJSON && exportFormat != client.ExportCSV {
		return cliErrorf("flagadmin events export: --format must be ndjson or csv, got %q", *format)
	}
	if *afterID < 0 {
		return cliErrorf("flagadmin events export: --after-id must be 0 or more, got %d", *afterID)
	}
	normalizeFilters(p)
	api, err := c.apiClient("flagadmin events export", *baseURL, *token)
	if err != nil {
		return err
	}
	return c.export(ctx, api, *p, exportFormat, *out, *afterID, *progress)
}

// serverFlags registers --url and --token.
func serverFlags(fs *flag.FlagSet) (baseURL, token *string) {
	baseURL = fs.String("url", "", "base `URL` of the server (env "+envURL+"; default http://"+defaultAddr+")")
	token = fs.String("token", "", "API `TOKEN`: an admin token or a personal access token (env "+envToken+")")
	return baseURL, token
}

// apiClient returns the client of the server at baseURL (else $FLAGADMIN_URL,
// else the default address) with token (else $FLAGADMIN_TOKEN).
func (c *cli) apiClient(cmd, baseURL, token string, opts ...client.Option) (*client.Client, error) {
	if baseURL == "" {
		baseURL = c.getenv(envURL)
	}
	if baseURL == "" {
		baseURL = "http://" + defaultAddr
	}
	if token == "" {
		token = c.getenv(envToken)
	}
	if token == "" {
		return nil, cliErrorf("%s needs a token: --token or %s", cmd, envToken)
	}
	api, err := client.New(baseURL, token, opts...)
	if err != nil {
		return nil, cliErrorf("%s: --url: %s", cmd, flat(err))
	}
	return api, nil
}

// filterHelp is the help of the filter flags, by parameter name; a
// filter without one gets filterHelpOf's.
var filterHelp = map[string]string{
	"query":       "only events whose data, preData or tags contain `TEXT`",
	"feature":     "only events of these feature `NAMES` (comma-separated)",
	"project":     "only events of these project `IDS` (comma-separated)",
	"type":        "only events of these `TYPES`, such as feature-created (comma-separated)",
	"createdBy":   "only events caused by the users with these `IDS` (comma-separated)",
	"environment": "only events of these `ENVIRONMENTS` (comma-separated)",
	"id":          "only the events with these `IDS` (comma-separated)",
	"groupId":     "only the events of the transactions with these group `IDS` (comma-separated)",
	"from":        "only events created on or after this UTC `DAY`, yyyy-mm-dd",
	"to":          "only events created on or before this UTC `DAY`, yyyy-mm-dd",
}

// filterFlags registers as flags the event filters the export and the
// stream take (flagadmin.FilterParams), each named by flagName.
func filterFlags(fs *flag.FlagSet) *flagadmin.EventSearchParams {
	p := &flagadmin.EventSearchParams{}
	for _, f := range flagadmin.FilterParams() {
		if !f.Uses.Has(flagadmin.UseExport|flagadmin.UseStream) || f.Kind == flagadmin.FilterPaging {
			continue
		}
		help, ok := filterHelp[f.Name]
		if !ok {
			help = filterHelpOf(f)
		}
		fs.Func(flagName(f.Name), help, func(v string) error {
			f.Set(p, v)
			return nil
		})
	}
	return p
}

// filterHelpOf is the help of a list filter's flag that filterHelp has
// none for: the event field it selects on.
func filterHelpOf(f flagadmin.FilterParam) string {
	if f.Kind == flagadmin.FilterIntegers {
		return "only events whose " + f.Column + " is one of these `NUMBERS` (comma-separated)"
	}
	return "only events whose " + f.Column + " is one of these `VALUES` (comma-separated)"
}

// flagName writes a parameter name as a flag name, in kebab case:
// createdBy is created-by.
func flagName(param string) string {
	var b strings.Builder
	for _, r := range param {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// normalizeFilters writes a filter without an operator as IS_ANY_OF and a
// bare date as IS:date.
func normalizeFilters(p *flagadmin.EventSearchParams) {
	for _, f := range flagadmin.FilterParams() {
		v := f.Value(p)
		switch {
		case v == "":
		case f.Kind == flagadmin.FilterStrings || f.Kind == flagadmin.FilterIntegers:
			if !strings.HasPrefix(v, flagadmin.OpIs+":") && !strings.HasPrefix(v, flagadmin.OpIsAnyOf+":") {
				f.Set(p, flagadmin.OpIsAnyOf+":"+v)
			}
		case f.Kind == flagadmin.FilterDay:
			if !strings.HasPrefix(v, flagadmin.OpIs+":") {
				f.Set(p, flagadmin.OpIs+":"+v)
			}
		}
	}
}

// export runs events export.
func (c *cli) export(ctx context.Context, api *client.Client, p flagadmin.EventSearchParams, exportFormat client.ExportFormat, out string, afterID int64, progressEvery time.Duration) error {
	w, dest, file, err := c.exportOutput(out, afterID)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	x := &exporter{api: api, params: p, format: exportFormat, lastID: afterID, out: bufio.NewWriterSize(w, 256<<10), header: afterID == 0}
	report := exportReport{w: c.stderr, x: x, dest: dest, start: time.Now()}
	stopProgress := report.every(progressEvery)
	err = x.run(ctx)
	stopProgress()
	if err := x.finishOutput(file, err); err != nil {
		return exportFailure(err, x, file, dest)
	}
	report.final()
	return nil
}

// exportOutput opens where an export goes: stdout, or the --out file (a
// new one, or appended to when resuming after afterID). dest names it in
// messages.
func (c *cli) exportOutput(out string, afterID int64) (w io.Writer, dest string, file *exportFile, err error) {
	if out == "" {
		return c.stdout, "stdout", nil, nil
	}
	if file, err = openExportFile(out, afterID > 0); err != nil {
		return nil, "", nil, cliErrorf("flagadmin events export: --out: %s", flat(err))
	}
	dest = out
	if file.appending {
		dest += " (appended)"
	}
	return file.f, dest, file, nil
}

// exportReport tells on stderr how an export goes: its progress while it
// runs, and its figures at the end.
type exportReport struct {
	w     io.Writer
	x     *exporter
	dest  string
	start time.Time
}

// every reports the progress each period (none when period is not
// positive) until stop is called.
func (r exportReport) every(period time.Duration) (stop func()) {
	done := make(chan struct{})
	if period > 0 {
		go func() {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					fmt.Fprintf(r.w, "exported %d events (%.0f events/s)\n", r.x.written.Load(), r.rate(time.Since(r.start)))
				}
			}
		}()
	}
	return func() { close(done) }
}

// final reports an export that ended well.
func (r exportReport) final() {
	elapsed := time.Since(r.start)
	fmt.Fprintf(r.w, "exported %d events in %s (%.0f events/s) to %s; last id %d\n",
		r.x.written.Load(), elapsed.Round(time.Millisecond), r.rate(elapsed), r.dest, r.x.lastID)
}

// rate is the events written per second in the elapsed time.
func (r exportReport) rate(elapsed time.Duration) float64 {
	return float64(r.x.written.Load()) / max(elapsed.Seconds(), 1e-9)
}

// finishOutput flushes the export's output and closes its --out file,
// which keeps what was written when the export succeeded or wrote events.
// It returns err, the export's, or else the first failure to write.
func (x *exporter) finishOutput(file *exportFile, err error) error {
	if ferr := x.out.Flush(); err == nil && ferr != nil {
		err = writeError{ferr}
	}
	if file != nil {
		if ferr := file.finish(err == nil || x.written.Load() > 0); err == nil && ferr != nil {
			err = writeError{ferr}
		}
	}
	return err
}

// exportFailure is the one line of an export that failed with err: what
// it wrote to dest and, when it can be, how to resume it.
func exportFailure(err error, x *exporter, file *exportFile, dest string) error {
	written := x.written.Load()
	var where string
	switch {
	case written == 0 && file != nil && !file.appending:
		where = "; no event was written and " + file.path + " was left as it was"
	case written == 0:
		where = "; no event was written"
	case resumable(err):
		where = fmt.Sprintf("; %d events written to %s, the last id %d: resume with --after-id %d", written, dest, x.lastID, x.lastID)
	default:
		where = fmt.Sprintf("; %d events written to %s, the last id %d", written, dest, x.lastID)
	}
	if errors.Is(err, context.Canceled) {
		return cliErrorf("flagadmin events export: interrupted%s", where)
	}
	return cliErrorf("flagadmin events export: %s%s", flat(err), where)
}

// resumable reports whether an export that failed with err can be resumed
// where it stopped (--after-id): it was interrupted, or the server or the
// network failed; not when the server refused the request (a 4xx: a bad
// token or filter fails again), the output could not be written, or the
// server's answer broke the export's form.
func resumable(err error) bool {
	var apiErr *client.Error
	var we writeError
	switch {
	case errors.As(err, &apiErr) && apiErr.Status >= 400 && apiErr.Status < 500, errors.As(err, &we), errors.Is(err, errBadExport):
		return false
	}
	return true
}

// errBadExport marks an export whose records do not have the export's form
// (no id, ids out of order).
var errBadExport = errors.New("the export is malformed")

// exportFile is the --out file of events export. A new export (without
// --after-id) is written to a temporary file beside it, which takes its
// name at the end, or when the export fails after writing events (so that
// it can be resumed); an export that writes no event leaves --out as it
// was. A resumed export (--after-id) appends to --out; one that appends
// nothing to a file it created removes it.
type exportFile struct {
	path string
	f    *os.File
	// appending: f is path itself, opened for appending.
	appending bool
	// created: path did not exist before (appending).
	created bool
}

// openExportFile opens the output of events export at path: appending to
// it (--after-id), or a new temporary file beside it.
func openExportFile(path string, appending bool) (*exportFile, error) {
	if !appending {
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.partial")
		var pe *fs.PathError
		if errors.As(err, &pe) { // name --out, not the temporary file
			return nil, fmt.Errorf("cannot write %s: %w", path, pe.Err)
		}
		if err != nil {
			return nil, err
		}
		return &exportFile{path: path, f: f}, nil
	}
	_, err := os.Stat(path)
	created := errors.Is(err, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &exportFile{path: path, f: f, appending: true, created: created}, nil
}

// finish closes the file, and either keeps what was written (keep: the
// temporary file takes the name of --out) or drops it (the temporary file,
// or a file created to append to).
func (o *exportFile) finish(keep bool) error {
	err := o.f.Close()
	switch {
	case !o.appending && keep && err == nil:
		if err = os.Chmod(o.f.Name(), 0o644); err == nil {
			err = os.Rename(o.f.Name(), o.path)
		}
		if err != nil {
			os.Remove(o.f.Name())
		}
	case !o.appending:
		os.Remove(o.f.Name())
	case !keep && o.created:
		os.Remove(o.path)
	}
	return err
}

// exporter copies an export to out record by record, as the server sent
// them, so out only ever ends with whole records, and resumes a broken
// transfer after the last record written.
type exporter struct {
	api    *client.Client
	params flagadmin.EventSearchParams
	format client.ExportFormat
	out    *bufio.Writer
	// header: the CSV header row of the first transfer is written
	// (resumed transfers and --after-id skip theirs).
	header bool
	lastID int64
	// written counts the events written (read by the progress reporter).
	written atomic.Int64
}

// run exports until the end, resuming broken transfers.
func (x *exporter) run(ctx context.Context) error {
	breaks := 0
	for {
		body, err := x.api.Export(ctx, x.params, x.format, x.lastID)
		if err != nil {
			return err
		}
		before := x.lastID
		err = x.copy(body)
		body.Close()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if x.lastID > before {
			breaks = 0
		}
		if breaks++; breaks >= exportMaxBreaks {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(breaks) * 200 * time.Millisecond):
		}
	}
}

// copy writes the whole records of one transfer's body. It returns nil at
// a clean end, or the error that broke the transfer.
func (x *exporter) copy(body io.Reader) error {
	r := bufio.NewReaderSize(body, 256<<10)
	var rec []byte
	first := true // the first record: CSV's header row
	for {
		var err error
		rec, err = x.readRecord(r, rec[:0])
		if err == io.EOF && len(rec) == 0 {
			return nil
		}
		if err != nil {
			if err == io.EOF {
				return fmt.Errorf("the export ends in the middle of a record after event %d", x.lastID)
			}
			return err
		}
		if x.format == client.ExportCSV && first {
			first = false
			if x.header {
				x.header = false
				if _, err := x.out.Write(rec); err != nil {
					return writeError{err}
				}
			}
			continue
		}
		first = false
		id, err := x.recordID(rec)
		if err != nil {
			return err
		}
		if id <= x.lastID {
			return fmt.Errorf("%w: event %d follows event %d: the server broke id order", errBadExport, id, x.lastID)
		}
		if _, err := x.out.Write(rec); err != nil {
			return writeError{err}
		}
		x.lastID = id
		x.written.Add(1)
	}
}

// writeError is a failure to write the output: not a transfer to resume.
type writeError struct{ err error }

func (e writeError) Error() string { return "write: " + e.err.Error() }

// readRecord appends the next record, with its LF, to rec. A CSV record
// ends at an LF outside quotes; an NDJSON one at any LF (JSON escapes its
// line breaks).
func (x *exporter) readRecord(r *bufio.Reader, rec []byte) ([]byte, error) {
	for {
		line, err := r.ReadSlice('\n')
		rec = append(rec, line...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return rec, err
		}
		if x.format != client.ExportCSV || bytes.Count(rec, []byte{'"'})%2 == 0 {
			return rec, nil
		}
	}
}

// recordID returns the event id a record starts with: {"id":N, in NDJSON,
// N, in CSV.
func (x *exporter) recordID(rec []byte) (int64, error) {
	s := rec
	if x.format == client.ExportNDJSON {
		var ok bool
		if s, ok = bytes.CutPrefix(rec, []byte(`{"id":`)); !ok {
			return 0, fmt.Errorf("%w: a line after event %d does not start with an id", errBadExport, x.lastID)
		}
	}
	end := bytes.IndexAny(s, ",}")
	if end < 0 {
		return 0, fmt.Errorf("%w: a record after event %d has no id", errBadExport, x.lastID)
	}
	id, err := strconv.ParseInt(string(s[:end]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: a record after event %d has no id", errBadExport, x.lastID)
	}
	return id, nil
}
