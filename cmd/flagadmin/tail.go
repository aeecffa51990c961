package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	if *format != "text" && *format != "ndjson" {
		return cliErrorf("flagadmin events tail: --format must be text or ndjson, got %q", *format)
	}
	if *afterID < -1 {
		return cliErrorf("flagadmin events tail: --after-id must be 0 or more, got %d", *afterID)
	}
	normalizeFilters(p)
	api, err := c.apiClient("flagadmin events tail", *baseURL, *token)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := bufio.NewWriter(c.stdout)
	last := *afterID
	reconnect := func(err error, after int64) {
		last = max(last, after)
		var end *client.StreamEnd
		if errors.As(err, &end) {
			fmt.Fprintf(c.stderr, "the server ended the stream (%s); resuming after id %d\n", end.Reason, after)
			return
		}
		fmt.Fprintf(c.stderr, "connection lost (%s); resuming after id %d\n", flat(err), after)
	}
	for ev, err := range api.Tail(ctx, *p, *afterID, reconnect) {
		if err != nil {
			if ctx.Err() != nil {
				if last < 0 {
					fmt.Fprintln(c.stderr, "stopped before any event")
					return nil
				}
				fmt.Fprintf(c.stderr, "stopped; the last id was %d (resume with --after-id %d)\n", last, last)
				return nil
			}
			if last < 0 {
				return cliErrorf("flagadmin events tail: %s", flat(err))
			}
			return cliErrorf("flagadmin events tail: %s; the last id was %d", flat(err), last)
		}
		if *format == "ndjson" {
			b, err := json.Marshal(ev)
			if err != nil {
				return cliErrorf("flagadmin events tail: %s", flat(err))
			}
			out.Write(append(b, '\n'))
		} else {
			out.WriteString(eventLine(ev))
		}
		if err := out.Flush(); err != nil {
			return cliErrorf("flagadmin events tail: %s", flat(err))
		}
		last = ev.ID
	}
	return nil
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
