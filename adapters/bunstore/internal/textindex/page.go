package textindex

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// maxWalk is the most matches FindPage reads in id order for one page:
// q.Offset+q.Limit, each read with its event's row.
const maxWalk = 1000

// verifyPerMatch bounds the events of events_created that FindPage reads
// to check its page, per match of the query (and at least minVerify): a
// match costs the window path about 8.5 µs (its row read by id, the
// window, the sort), an entry of events_created about 0.17 µs, so the
// check never costs more than the path it spares.
const (
	verifyPerMatch = 40
	minVerify      = 4096
)

// FindPage finds the page of q on SQLite, a free-text query without a
// cursor, from events_tokens in id order: the ids of its events in page
// order (created_at then id, both descending), and its total, the events
// whose texts hold q.Text and that rest (q's other conditions, on
// events) keeps, in the read transaction db. It reports whether it found
// them; when it did not, the caller reads the page by its window.
//
// The index returns an FTS5 query's events by rowid (the event's id),
// descending and stopping at a LIMIT, without reading any other: events
// are nearly always written in the order of their creation, so the first
// q.Offset+q.Limit matches by id are those of the page, sorted by
// created_at. Whether they are is checked, not assumed: every match the
// walk did not reach has a smaller id than the last it read (L), and if
// no event at all with an id below L's is newer than the oldest event
// read (an index range of events_created from that event's created_at,
// read up to a bound, and not begun when the events from L's id on, about
// those it would read in creation order, are more), no match it left out
// belongs on the page. A query
// that the check does not clear is left to the caller, as is one the
// index answers with more than a phrase query (a query with a delimiter,
// a long token, events of the pending range: Match), or whose page lies
// deeper than maxWalk.
//
// The total is counted from the index alone when q filters by what its
// caller may see only (count), else from the rows of its matches.
func FindPage(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error) {
	walk := q.PageEnd()
	if !walkable(q) {
		return nil, 0, false, nil
	}
	match, newest, ok, err := phraseQuery(ctx, db, q)
	if err != nil || !ok || match == `""` { // "": no token holds the text
		return []int64{}, 0, ok, err
	}
	var read []key
	stmt := sqlq.Join(" ", joined(match, rest).Wrap("SELECT t.rowid AS id, e.created_at ", ""), sqlq.F("ORDER BY t.rowid DESC LIMIT "+strconv.Itoa(walk)))
	if err := db.NewRaw(stmt.Text, stmt.Args...).Scan(ctx, &read); err != nil {
		return nil, 0, false, err
	}
	total, below := len(read), int64(0)
	if total > 0 {
		below = read[total-1].ID // the smallest id read
	}
	slices.SortFunc(read, func(a, b key) int { return b.compare(a) })
	if total == walk { // matches may remain: count them, then check the page
		if total, err = count(ctx, db, q, match, rest); err != nil {
			return nil, 0, false, err
		}
		// In creation order, the check reads about the events from below
		// on: when they are more than its bound, it is not begun.
		bound := max(minVerify, verifyPerMatch*total)
		if newest-below >= int64(bound) {
			return nil, 0, false, nil
		}
		cleared, err := noneNewerBelow(ctx, db, read[len(read)-1], below, bound)
		if err != nil || !cleared {
			return nil, 0, false, err
		}
	}
	ids := make([]int64, 0, q.Limit)
	for _, k := range read[min(q.Offset, len(read)):] {
		ids = append(ids, k.ID)
	}
	return ids, total, true, nil
}

// walkable reports whether FindPage may find q's page: a page of a
// query without a cursor, within maxWalk of the first match, whose text
// the index reads exactly and is one run of 3 characters or more.
func walkable(q flagadmin.EventQuery) bool {
	return q.After == nil && q.Limit > 0 && q.PageEnd() <= maxWalk && usable(q.Text) &&
		longestRun(q.Text) == q.Text && utf8.RuneCountInString(q.Text) >= 3
}

// phraseQuery returns the FTS5 query of the events whose texts in q's
// scope hold a token of the vocabulary that contains q.Text (a run of 3
// characters or more), "" (quotes included) when none does, the largest
// event id, and whether the query finds every match: not when a long
// token holds the text (checked in the texts) or events are pending
// (scanned), which Match reads.
func phraseQuery(ctx context.Context, db bun.IDB, q flagadmin.EventQuery) (string, int64, bool, error) {
	var plan struct {
		Query   string `bun:"query"`
		Newest  int64  `bun:"newest"`
		Long    bool   `bun:"long"`
		Pending bool   `bun:"pending"`
	}
	short := strconv.Itoa(stored.MaxSearchTokenChars)
	stmt := sqlq.Join(" ", vocabulary(q.Text), sqlq.Fill("SELECT (?) AS query, (SELECT coalesce(max(id), 0) FROM events) AS newest, EXISTS (SELECT 1 FROM run_tokens WHERE length(token) > "+short+") AS long, EXISTS (SELECT 1 FROM events_text_pending) AS pending",
		tokenQuery(textColumns(q.TextScope), "<= "+short)))
	if err := db.NewRaw(stmt.Text, stmt.Args...).Scan(ctx, &plan); err != nil {
		return "", 0, false, err
	}
	return plan.Query, plan.Newest, !plan.Long && !plan.Pending, nil
}

// joined is the FROM and WHERE clauses of the events of the FTS5 query
// match that rest (a condition on events, or empty) keeps: events_tokens
// AS t, each match's row of events AS e read by id.
func joined(match string, rest sqlq.Fragment) sqlq.Fragment {
	return sqlq.And(sqlq.F("events_tokens MATCH ?", match), rest).Wrap("FROM events_tokens t JOIN events e ON e.id = t.rowid WHERE ", "")
}

// count returns the number of events of the FTS5 query match that q's
// other conditions (rest, on events) keep. When q filters by what its
// caller may see alone (visibilityOnly), that is the index's own count of
// match without the events of hidden projects, or without a project when
// q requires one, by their project's token (stored.ProjectToken), read
// from no event's row; the events naming several projects, whose token
// does not say which, are counted from their rows. Else each match's row
// is read.
func count(ctx context.Context, db bun.IDB, q flagadmin.EventQuery, match string, rest sqlq.Fragment) (int, error) {
	scalar := func(stmt sqlq.Fragment) (n int, err error) {
		err = db.NewRaw(stmt.Text, stmt.Args...).Scan(ctx, &n)
		return n, err
	}
	if !visibilityOnly(q) {
		return scalar(joined(match, rest).Wrap("SELECT COUNT(*) ", ""))
	}
	var hide []string
	if q.RequireProject {
		hide = append(hide, stored.NoProjectToken)
	}
	for _, p := range q.HiddenProjects {
		if token, alone := stored.ProjectToken(p); alone {
			hide = append(hide, token)
		}
	}
	if len(q.HiddenProjects) > 0 {
		hide = append(hide, stored.ProjectListToken) // counted from their rows below
	}
	shown := match
	if len(hide) > 0 {
		shown = "(" + match + ") NOT project_token : (" + strings.Join(hide, " OR ") + ")"
	}
	n, err := scalar(sqlq.F("SELECT COUNT(*) FROM events_tokens WHERE events_tokens MATCH ?", shown))
	if err != nil || len(q.HiddenProjects) == 0 {
		return n, err
	}
	lists, err := scalar(joined("("+match+") AND project_token : "+stored.ProjectListToken, rest).Wrap("SELECT COUNT(*) ", ""))
	return n + lists, err
}

// visibilityOnly reports whether q has no condition but its free text and
// what its caller may see (RequireProject, HiddenProjects).
func visibilityOnly(q flagadmin.EventQuery) bool {
	if q.From != nil || q.Before != nil {
		return false
	}
	for c := range q.ColumnFilters() {
		if c.Len() > 0 {
			return false
		}
	}
	return true
}

// key is an event's place in page order.
type key struct {
	ID        int64 `bun:"id"`
	CreatedAt int64 `bun:"created_at"`
}

// compare orders keys as created_at then id, ascending.
func (k key) compare(o key) int {
	return cmp.Or(cmp.Compare(k.CreatedAt, o.CreatedAt), cmp.Compare(k.ID, o.ID))
}

// noneNewerBelow reports whether no event with an id below below is newer
// (created_at then id) than oldest, read from events_created: the events
// from oldest's created_at on, up to bound of them (false when there are
// more).
func noneNewerBelow(ctx context.Context, db bun.IDB, oldest key, below int64, bound int) (bool, error) {
	var seen struct {
		Read  int `bun:"read"`
		Newer int `bun:"newer"`
	}
	err := db.NewRaw(`SELECT COUNT(*) AS read, coalesce(sum(id < ? AND (created_at > ? OR id > ?)), 0) AS newer
	FROM (SELECT id, created_at FROM events WHERE created_at >= ? ORDER BY created_at, id LIMIT ?)`,
		below, oldest.CreatedAt, oldest.ID, oldest.CreatedAt, bound).Scan(ctx, &seen)
	return err == nil && seen.Read < bound && seen.Newer == 0, err
}
