package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Events walks every event matching params, newest first, fetching page
// after page as the loop asks for more; breaking out of the loop stops
// fetching. An error is yielded once (with a zero Event) and ends the walk.
//
//	for ev, err := range c.Events(ctx, flagadmin.EventSearchParams{Type: "IS:feature-completed"}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(ev.ID, ev.FeatureName)
//	}
//
// When the server sends Link: <...>; rel="next" (flagadmin's keyset
// paging), the walk follows it, resolved against the request's URL; it must
// stay on the base URL's scheme and host, since the token goes with it. The
// walk then visits every event that matched when it began exactly once.
// Against a server that sends none (Unleash), it pages by offset: offset +=
// the page's length, until a short or empty page or the total. Events
// written during an offset walk shift later pages; an event the previous
// page already yielded is skipped, so none is yielded twice.
//
// params.Limit is the page size, DefaultWalkPageSize (WithWalkPageSize)
// when empty; params.Offset, when set, is where the walk starts.
func (c *Client) Events(ctx context.Context, params flagadmin.EventSearchParams) iter.Seq2[flagadmin.Event, error] {
	return func(yield func(flagadmin.Event, error) bool) {
		if params.Limit == "" {
			params.Limit = strconv.Itoa(c.pageSize)
		}
		limit, _ := strconv.Atoi(params.Limit)   // 0 when malformed: the server answers 400
		offset, _ := strconv.Atoi(params.Offset) // likewise
		u := c.endpoint(searchPath, searchQuery(params))
		cursor := false             // the server sent a next link: follow links only
		var previous map[int64]bool // ids of the previous page
		for {
			page, next, err := c.searchPage(ctx, u)
			if err != nil {
				yield(flagadmin.Event{}, err)
				return
			}
			if next != nil && len(page.Events) == 0 {
				yield(flagadmin.Event{}, fmt.Errorf("client: search events: the server sent an empty page with a next link (%s)", next))
				return
			}
			seen := make(map[int64]bool, len(page.Events))
			for _, ev := range page.Events {
				seen[ev.ID] = true
				if previous[ev.ID] {
					continue
				}
				if !yield(ev, nil) {
					return
				}
			}
			previous = seen
			switch {
			case next != nil:
				cursor, u = true, next
				continue
			case cursor, len(page.Events) == 0, limit > 0 && len(page.Events) < limit:
				return
			}
			offset += len(page.Events)
			if offset >= page.Total {
				return
			}
			params.Offset = strconv.Itoa(offset)
			u = c.endpoint(searchPath, searchQuery(params))
		}
	}
}

// nextLink returns the target of the response's Link rel="next", resolved
// against the request URL, or nil without one. A target on another scheme
// or host is an error: the token must not go there.
func (c *Client) nextLink(resp *http.Response, requested *url.URL) (*url.URL, error) {
	for _, v := range resp.Header.Values("Link") {
		for _, l := range parseLinks(v) {
			if !l.has("next") {
				continue
			}
			ref, err := url.Parse(l.target)
			if err != nil {
				return nil, fmt.Errorf("client: search events: the Link rel=\"next\" %q: %w", l.target, err)
			}
			u := requested.ResolveReference(ref)
			if u.Scheme != c.base.Scheme || !strings.EqualFold(u.Host, c.base.Host) {
				return nil, fmt.Errorf("client: search events: the Link rel=\"next\" %q leaves %s://%s", l.target, c.base.Scheme, c.base.Host)
			}
			return u, nil
		}
	}
	return nil, nil
}

// link is one link-value of a Link header (RFC 8288).
type link struct {
	target string
	rels   []string
}

// has reports whether the link's rel includes rel (case-insensitive).
func (l link) has(rel string) bool {
	for _, r := range l.rels {
		if strings.EqualFold(r, rel) {
			return true
		}
	}
	return false
}

// parseLinks parses a Link header value: link-values separated by commas,
// each "<target>" then ";"-separated parameters, of which rel (quoted or
// not, possibly several space-separated relation types) is kept. Commas
// inside the target or a quoted string do not separate. Malformed
// link-values are skipped.
func parseLinks(v string) []link {
	var out []link
	for {
		start := strings.IndexByte(v, '<')
		if start < 0 {
			return out
		}
		end := strings.IndexByte(v[start:], '>')
		if end < 0 {
			return out
		}
		l := link{target: strings.TrimSpace(v[start+1 : start+end])}
		rest := v[start+end+1:]
		i := paramsEnd(rest)
		for _, p := range strings.Split(rest[:i], ";") {
			name, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
				continue
			}
			val = strings.Trim(strings.TrimSpace(val), `"`)
			l.rels = append(l.rels, strings.Fields(val)...)
		}
		out = append(out, l)
		if i >= len(rest) {
			return out
		}
		v = rest[i+1:]
	}
}

// paramsEnd returns the index of the comma ending the parameters at the
// start of s (outside a quoted string), or len(s).
func paramsEnd(s string) int {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return i
		}
	}
	return len(s)
}
