package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Event types the upstream records for the forwarded writes.
const (
	// EventFeatureCompleted is recorded by lifecycle complete, with the
	// feature and its project.
	EventFeatureCompleted = "feature-completed"
	// EventServiceAccountDeleted is recorded by service-account delete,
	// with the account (its id among them) as preData.
	EventServiceAccountDeleted = "service-account-deleted"
)

// Write is a write forwarded to the upstream, described by the event the
// upstream records for it when it accepts it.
type Write struct {
	// EventType is the type of the event: EventFeatureCompleted or
	// EventServiceAccountDeleted.
	EventType string
	// Project and Feature name the completed feature (EventFeatureCompleted).
	Project, Feature string
	// ServiceAccountID is the deleted account (EventServiceAccountDeleted).
	ServiceAccountID int64
}

// Query returns the filters of w's event: its type and, for a completion,
// its project and feature. Matches narrows them further.
func (w Write) Query() flagadmin.EventQuery {
	q := flagadmin.EventQuery{Types: []string{w.EventType}}
	if w.EventType == EventFeatureCompleted {
		q.Projects, q.Features = []string{w.Project}, []string{w.Feature}
	}
	return q
}

// Matches reports whether e is an event of w: it matches Query, and for a
// service-account delete its preData names the account's id.
//
// An event recorded for the same feature or account by someone else at
// about the same time matches too: the write's own event then follows
// it closely, and the copy holds events in id order.
func (w Write) Matches(e flagadmin.Event) bool {
	if !w.Query().Matches(e, "", "") { // no text filter: the texts are not needed
		return false
	}
	if w.EventType != EventServiceAccountDeleted {
		return true
	}
	var pre struct {
		ID json.Number `json:"id"`
	}
	if json.Unmarshal(e.PreData, &pre) != nil {
		return false
	}
	id, err := pre.ID.Int64()
	return err == nil && id == w.ServiceAccountID
}

// Waiter tells when flagadmin's copy of the upstream holds the event of a
// forwarded write. FeedWaiter implements it over the store's events; the
// follower of a live Unleash (--follow) can implement it from its
// own position.
type Waiter interface {
	// Expect is called before w is forwarded. It returns the wait: a
	// function the gateway calls once the upstream has accepted w (a 2xx),
	// which returns nil when the copy holds w's event, or an error when
	// its context ends first. An error of Expect itself means the write
	// cannot be followed: it is forwarded and answered at once, with
	// LagHeader.
	Expect(ctx context.Context, w Write) (wait func(ctx context.Context) error, err error)
}

// FeedWaiter is a Waiter over the feed of the store's events (such as
// eventfeed.Feed, which every flagadmin server runs): it notes the newest
// event before the write is forwarded, then follows the events after it
// until one matches the write (Write.Matches). It works whatever puts the
// upstream's events into the store; a new event reaches it within the
// feed's interval (250 ms by default) of being stored.
type FeedWaiter struct {
	Feed flagadmin.EventFeed
}

var _ Waiter = FeedWaiter{}

// errFound ends a Follow at the write's event.
var errFound = errors.New("found the write's event")

// Expect implements Waiter.
func (f FeedWaiter) Expect(ctx context.Context, w Write) (func(context.Context) error, error) {
	after, err := f.Feed.LastEventID(ctx)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		err := f.Feed.Follow(ctx, w.Query(), after, func(events []flagadmin.Event) error {
			for i := range events {
				if w.Matches(events[i]) {
					return errFound
				}
			}
			return nil
		})
		if errors.Is(err, errFound) {
			return nil
		}
		return err
	}, nil
}

// writeOf recognizes the two writes of the admin API that wait for their
// event: POST /api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete
// and DELETE /api/admin/service-account/{id} (a numeric id; another is
// forwarded without waiting, and the upstream answers it). A trailing
// slash is allowed, as the upstream's router allows it.
func writeOf(r *http.Request) (Write, bool) {
	w, _, ok := writeRoute(r)
	return w, ok
}

// writeRoute reports whether r goes to the route of one of the two writes,
// whatever its parameters (route: such a request is never answered
// locally), and, when its event can be waited for, the write (ok).
func writeRoute(r *http.Request) (w Write, route, ok bool) {
	segs, valid := pathSegments(r.URL)
	if !valid || len(segs) < 3 || segs[0] != "api" || segs[1] != "admin" {
		return Write{}, false, false
	}
	switch {
	case r.Method == http.MethodPost && len(segs) == 8 && segs[2] == "projects" &&
		segs[4] == "features" && segs[6] == "lifecycle" && segs[7] == "complete":
		return Write{EventType: EventFeatureCompleted, Project: segs[3], Feature: segs[5]}, true, true
	case r.Method == http.MethodDelete && len(segs) == 4 && segs[2] == "service-account":
		id, err := strconv.ParseInt(segs[3], 10, 64)
		if err != nil {
			return Write{}, true, false
		}
		return Write{EventType: EventServiceAccountDeleted, ServiceAccountID: id}, true, true
	}
	return Write{}, false, false
}

// pathSegments splits u's path into its unescaped segments, without the
// leading slash and one trailing slash; ok is false for an empty segment
// or a bad escape.
func pathSegments(u *url.URL) ([]string, bool) {
	p := strings.TrimSuffix(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	segs := strings.Split(p, "/")
	for i, s := range segs {
		v, err := url.PathUnescape(s)
		if err != nil || v == "" {
			return nil, false
		}
		segs[i] = v
	}
	return segs, true
}
