package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/flagadmin"
)

var eventsTailCommand = command{
	usage:   "flagadmin events tail [flags]",
	summary: "Follows the event log of a running server live, printing each event as it is recorded.",
	about: `It reads GET /api/admin/events/stream and prints each event matching the filters that the token may see as it is
recorded, one line each: id, time, type, project, feature, environment and who
caused it (--format ndjson prints the event JSON instead). It starts with the
events recorded from now on, or with --after-id ID replays the events after ID
first. Filters are those of events export.

A dropped connection, or a stream the server ends (a restart, a client too
slow), is resumed after the last event printed, by itself, so no event is
missed or printed twice; a server that cannot be reached is tried again for up
to 2 minutes. It stops on Ctrl-C, printing the last id on stderr, or when the
server no longer accepts the token.`,
	env: []string{envURL, envToken},
}

// eventsTail runs events tail.
func (c *cli) eventsTail(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin events tail")
	baseURL, token := serverFlags(fs)
	format := fs.String("format", "text", "output `FORMAT`: text (one line per event) or ndjson (the event JSON)")
	afterID := fs.Int64("after-id", -1, "replay the events after `ID` first (default: start with new events)")
	p := filterFlags(fs)
	rest, err := c.parse(fs, eventsTailCommand, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	if err := checkTailFlags(*format, *afterID); err != nil {
		return err
	}
	normalizeFilters(p)
	api, err := c.apiClient("flagadmin events tail", *baseURL, *token)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := &tailOutput{out: bufio.NewWriter(c.stdout), stderr: c.stderr, ndjson: *format == "ndjson", last: *afterID}
	for ev, err := range api.Tail(ctx, *p, *afterID, t.reconnecting) {
		if err != nil {
			return t.stopped(ctx, err)
		}
		if err := t.print(ev); err != nil {
			return err
		}
	}
	return nil
}

// checkTailFlags refuses a --format or an --after-id events tail cannot use.
func checkTailFlags(format string, afterID int64) error {
	if format != "text" && format != "ndjson" {
		return cliErrorf("flagadmin events tail: --format must be text or ndjson, got %q", format)
	}
	if afterID < -1 {
		return cliErrorf("flagadmin events tail: --after-id must be 0 or more, got %d", afterID)
	}
	return nil
}

// tailOutput prints what events tail follows: each event on stdout, the
// reconnections and the end on stderr.
type tailOutput struct {
	out    *bufio.Writer
	stderr io.Writer
	ndjson bool
	// last is the id of the last event printed or resumed after; -1
	// before the first.
	last int64
}

// reconnecting says that the stream resumes after id after, and why.
func (t *tailOutput) reconnecting(err error, after int64) {
	t.last = max(t.last, after)
	var end *client.StreamEnd
	if errors.As(err, &end) {
		fmt.Fprintf(t.stderr, "the server ended the stream (%s); resuming after id %d\n", end.Reason, after)
		return
	}
	fmt.Fprintf(t.stderr, "connection lost (%s); resuming after id %d\n", flat(err), after)
}

// print writes ev, as its JSON or its text line, at once.
func (t *tailOutput) print(ev flagadmin.Event) error {
	if t.ndjson {
		b, err := json.Marshal(ev)
		if err != nil {
			return cliErrorf("flagadmin events tail: %s", flat(err))
		}
		t.out.Write(append(b, '\n'))
	} else {
		t.out.WriteString(eventLine(ev))
	}
	if err := t.out.Flush(); err != nil {
		return cliErrorf("flagadmin events tail: %s", flat(err))
	}
	t.last = ev.ID
	return nil
}

// stopped ends the command when the stream ended with err: a stop asked
// for (Ctrl-C) is no failure; either way the last id, once there is one,
// says where to resume.
func (t *tailOutput) stopped(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil && t.last < 0:
		fmt.Fprintln(t.stderr, "stopped before any event")
		return nil
	case ctx.Err() != nil:
		fmt.Fprintf(t.stderr, "stopped; the last id was %d (resume with --after-id %d)\n", t.last, t.last)
		return nil
	case t.last < 0:
		return cliErrorf("flagadmin events tail: %s", flat(err))
	}
	return cliErrorf("flagadmin events tail: %s; the last id was %d", flat(err), t.last)
}

// eventLine is the text line of an event.
func eventLine(e flagadmin.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s", e.ID, e.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), e.Type)
	for _, f := range []struct {
		name  string
		value *string
	}{{"project", e.Project}, {"feature", e.FeatureName}, {"environment", e.Environment}} {
		if f.value != nil {
			fmt.Fprintf(&b, " %s=%s", f.name, *f.value)
		}
	}
	fmt.Fprintf(&b, " by=%s\n", e.CreatedBy)
	return b.String()
}
