package textindex

import (
	"cmp"
	"context"
	"database/sql"
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
// q.Offset+q.Limit matches by id are those of the page, in page order.
// They are when no event up to the largest id read is out of creation
// order (no event with a smaller id is newer: events_out_of_order, the
// plan's Unordered), which holds when none is out of order at all; then a
// query with no condition but its text (its caller may see every
// project) reads its matches' ids from the index, and no row (pageByID),
// and one that filters by what its caller may see alone reads its
// matches' rows no further than a bound past the page's end, then the
// index (pageShown). Else the walk (pageByWalk) reads each match's
// created_at from its row, and when an event up to the largest id read
// is out of order, the page is checked, not assumed: every match
// the walk did not reach has a smaller id than the last it read (L), and
// if no event at all with an id below L's is newer than the oldest event
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
//
// Every statement runs by query (the dialect's QueryPrepared) with its
// values as parameters: FTS5 plans a MATCH alike whatever its query, so
// each text is prepared once (preparing them anew was 18% of a text
// search's CPU, with the index merged into one segment).
func FindPage(ctx context.Context, db bun.IDB, query sqlq.Query, q flagadmin.EventQuery, rest sqlq.Fragment) ([]int64, int, bool, error) {
	if !walkable(q) {
		return nil, 0, false, nil
	}
	r := reader{db: db, query: query}
	plan, ok, err := r.phraseQuery(ctx, q)
	if err != nil || !ok || plan.Query == `""` { // "": no token holds the text
		return []int64{}, 0, ok, err
	}
	switch ordered := plan.ordered(plan.Newest); {
	case ordered && rest.Empty():
		return r.pageByID(ctx, q, plan.Query)
	case ordered && visibilityOnly(q):
		return r.pageShown(ctx, q, plan.Query, rest)
	}
	return r.pageByWalk(ctx, q, plan, rest)
}

// pageByWalk returns the page of q and its total from the first
// q.PageEnd() matches of plan that rest keeps, by id, each read with its
// row, and reports whether it found them: sorted by creation, and, when
// an event up to the largest id read is out of creation order, the page
// checked (checked); not found when the check does not clear it.
func (r reader) pageByWalk(ctx context.Context, q flagadmin.EventQuery, plan textPlan, rest sqlq.Fragment) ([]int64, int, bool, error) {
	walk, match := q.PageEnd(), plan.Query
	stmt := sqlq.Join(" ", joined(match, rest).Wrap("SELECT t.rowid AS id, e.created_at ", ""), sqlq.F("ORDER BY t.rowid DESC LIMIT ?", walk))
	read, err := sqlq.All(ctx, r.db, r.query, stmt, func(rows *sql.Rows, k *key) error { return rows.Scan(&k.ID, &k.CreatedAt) })
	if err != nil {
		return nil, 0, false, err
	}
	total, below := len(read), int64(0)
	if total > 0 {
		below = read[total-1].ID // the smallest id read
	}
	inOrder := total == 0 || plan.ordered(read[0].ID)
	slices.SortFunc(read, func(a, b key) int { return b.compare(a) })
	if total == walk { // matches may remain: count them, then check the page
		if total, err = r.count(ctx, q, match, rest); err != nil {
			return nil, 0, false, err
		}
		// In order, no match left out is newer than one read.
		if !inOrder {
			if cleared, err := r.checked(ctx, read[len(read)-1], below, plan.Newest, total); err != nil || !cleared {
				return nil, 0, false, err
			}
		}
	}
	return pageOf(read, q.Offset), total, true, nil
}

// reader runs FindPage's statements in db by query.
type reader struct {
	db    bun.IDB
	query sqlq.Query
}

// scalar returns the one value of stmt's one row.
func (r reader) scalar(ctx context.Context, stmt sqlq.Fragment) (int, error) {
	return sqlq.One(ctx, r.db, r.query, stmt, sqlq.Value[int])
}

// checked reports whether no event with an id below below (the smallest
// id a walk read) is newer than oldest (the oldest it read), newest the
// largest id, total the matches (noneNewerBelow). In creation order, the
// check reads about the events from below on: when they are more than
// its bound, it is not begun.
func (r reader) checked(ctx context.Context, oldest key, below, newest int64, total int) (bool, error) {
	bound := max(minVerify, verifyPerMatch*total)
	if newest-below >= int64(bound) {
		return false, nil
	}
	return r.noneNewerBelow(ctx, oldest, below, bound)
}

// pageOf returns the ids of the keys of read (in page order) from offset
// on.
func pageOf(read []key, offset int) []int64 {
	ids := make([]int64, 0, len(read)-min(offset, len(read)))
	for _, k := range read[min(offset, len(read)):] {
		ids = append(ids, k.ID)
	}
	return ids
}

// pageByID returns the page of q, a query without other conditions
// (rest empty) whose matches are in creation order (no event out of order
// at or below the newest: textPlan.ordered), and its total: the first
// q.PageEnd() matches by id, descending, read from the index alone.
//
// A query that hides projects is not read so: FTS5 reads every posting
// of a hidden project's token to leave them out in descending rowid
// order, which cost twice the rows of the matches (2.7 against 1.4 ms a
// feature's name for a caller who may not see 10 projects of 200).
func (r reader) pageByID(ctx context.Context, q flagadmin.EventQuery, match string) ([]int64, int, bool, error) {
	ids, err := r.ids(ctx, fromIndex(match), q.PageEnd())
	if err != nil {
		return nil, 0, false, err
	}
	return r.paged(ctx, q, match, sqlq.Fragment{}, ids)
}

// paged returns the page of q from ids, its first q.PageEnd() matches in
// page order (fewer when there are no more), and its total: their
// number, or, when they reach the page's end, the matches of match that
// rest keeps, counted.
func (r reader) paged(ctx context.Context, q flagadmin.EventQuery, match string, rest sqlq.Fragment, ids []int64) ([]int64, int, bool, error) {
	total := len(ids)
	if total == q.PageEnd() { // matches may remain: count them
		var err error
		if total, err = r.count(ctx, q, match, rest); err != nil {
			return nil, 0, false, err
		}
	}
	return ids[min(q.Offset, len(ids)):], total, true, nil
}

// walkSlack is how many matches beyond a page's end pageShown reads by
// their rows, at most, before it reads the page from the index alone: a
// match read by its row costs about 4.3 µs, one passed over by the
// index's query without the events of hidden projects (visible) about
// 0.4 µs, with 10 projects hidden (a million events).
const walkSlack = 512

// pageShown returns the page of q, a query that filters by what its
// caller may see alone (visibilityOnly) and hides something (rest, its
// condition on events), whose matches are in creation order
// (textPlan.ordered at the newest event), and its total.
//
// The matches' rows are read by id, descending, until q.PageEnd() of
// them are kept, but no more than q.PageEnd()+walkSlack of them
// (walkShown): a term whose matches lie mostly in projects the caller
// may not see would read every match's row (13,171 rows, 30 ms, for 42
// events shown of a feature's name in a million). When those do not fill
// the page, the page is read from the index alone without the events of
// hidden projects (shownFromIndex).
func (r reader) pageShown(ctx context.Context, q flagadmin.EventQuery, match string, rest sqlq.Fragment) ([]int64, int, bool, error) {
	walk := q.PageEnd()
	ids, found, err := r.walkShown(ctx, match, rest, walk, walk+walkSlack)
	if err == nil && !found {
		ids, err = r.shownFromIndex(ctx, q, match, rest)
	}
	if err != nil {
		return nil, 0, false, err
	}
	return r.paged(ctx, q, match, rest, ids)
}

// walkShown reads the matches of the FTS5 query match by id, descending,
// each with whether rest keeps it, until walk are kept or bound are read,
// in one statement whose rows are read no further than needed. It
// returns the ids kept, and whether they are the first walk the query
// keeps or all of them: not when it read bound matches and kept fewer.
func (r reader) walkShown(ctx context.Context, match string, rest sqlq.Fragment, walk, bound int) ([]int64, bool, error) {
	rows, err := r.query(ctx, r.db, sqlq.Join(" ", rest.Wrap("SELECT t.rowid, coalesce((", "), 0)"), joined(match, sqlq.Fragment{}),
		sqlq.F("ORDER BY t.rowid DESC LIMIT ?", bound)))
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	ids, read := make([]int64, 0, walk), 0
	for len(ids) < walk && rows.Next() {
		var id int64
		var kept bool
		if err := rows.Scan(&id, &kept); err != nil {
			return nil, false, err
		}
		if read++; kept {
			ids = append(ids, id)
		}
	}
	return ids, len(ids) == walk || read < bound, rows.Err()
}

// shownFromIndex returns the ids of the first q.PageEnd() events of the
// FTS5 query match that q shows (visibilityOnly), descending: those the
// index tells apart by their project's token (visible), read from it
// alone, and those naming several projects, whose token does not say
// which, read from their rows and kept by rest. Both are complete up to
// the page's end: a page they do not fill is the last.
func (r reader) shownFromIndex(ctx context.Context, q flagadmin.EventQuery, match string, rest sqlq.Fragment) ([]int64, error) {
	walk := q.PageEnd()
	shown, lists := visible(q, match)
	ids, err := r.ids(ctx, fromIndex(shown), walk)
	if err != nil || !lists {
		return ids, err
	}
	more, err := r.ids(ctx, joined(inLists(match), rest).Wrap("SELECT t.rowid ", ""), walk)
	if err != nil {
		return nil, err
	}
	ids = append(ids, more...)
	slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(b, a) })
	return ids[:min(walk, len(ids))], nil
}

// fromIndex is the statement of the rowids of the FTS5 query match, read
// from events_tokens AS t alone.
func fromIndex(match string) sqlq.Fragment {
	return sqlq.F("SELECT t.rowid FROM events_tokens t WHERE events_tokens MATCH ?", match)
}

// inLists is the FTS5 query of the events of match that name several
// projects (their project token, stored.ProjectListToken, does not say
// which): read from their rows when the caller hides projects.
func inLists(match string) string {
	return "(" + match + ") AND project_token : " + stored.ProjectListToken
}

// ids returns the first limit ids of stmt, a statement of the rowids of
// events_tokens AS t, descending.
func (r reader) ids(ctx context.Context, stmt sqlq.Fragment, limit int) ([]int64, error) {
	return sqlq.All(ctx, r.db, r.query, sqlq.Join(" ", stmt, sqlq.F("ORDER BY t.rowid DESC LIMIT ?", limit)), sqlq.Value[int64])
}

// walkable reports whether FindPage may find q's page: a page of a
// query without a cursor, within maxWalk of the first match, whose text
// the index reads exactly and is one run of 3 characters or more.
func walkable(q flagadmin.EventQuery) bool {
	return q.After == nil && q.Limit > 0 && q.PageEnd() <= maxWalk && usable(q.Text) &&
		longestRun(q.Text) == q.Text && utf8.RuneCountInString(q.Text) >= 3
}

// textPlan is what FindPage reads first (phraseQuery).
type textPlan struct {
	// Query is the FTS5 query of the matches, "" (quotes included) when
	// no token holds the text.
	Query string
	// Newest is the largest event id.
	Newest int64
	// Long: a long token holds the text; Pending: events are pending.
	Long    bool
	Pending bool
	// Unordered is the smallest id of the events out of creation order
	// (events_out_of_order), if any.
	Unordered sql.NullInt64
}

// ordered reports whether no event up to id is out of creation order:
// then the events up to id are in page order by id, and none below one of
// them is newer.
func (p textPlan) ordered(id int64) bool {
	return !p.Unordered.Valid || p.Unordered.Int64 > id
}

// phraseQuery returns the plan of q (textPlan): the FTS5 query of the
// events whose texts in q's scope hold a token of the vocabulary that
// contains q.Text (a run of 3 characters or more), the largest event id,
// the smallest out of creation order, and whether the query finds every
// match: not when a long token holds the text (checked in the texts) or
// events are pending (scanned), which Match reads.
func (r reader) phraseQuery(ctx context.Context, q flagadmin.EventQuery) (textPlan, bool, error) {
	short := strconv.Itoa(stored.MaxSearchTokenChars)
	stmt := sqlq.Join(" ", vocabulary(q.Text), sqlq.Fill("SELECT (?) AS query, (SELECT coalesce(max(id), 0) FROM events) AS newest, EXISTS (SELECT 1 FROM run_tokens WHERE length(token) > "+short+") AS long, EXISTS (SELECT 1 FROM events_text_pending) AS pending, (SELECT min(id) FROM events_out_of_order) AS unordered",
		tokenQuery(textColumns(q.TextScope), "<= "+short)))
	plan, err := sqlq.One(ctx, r.db, r.query, stmt, func(rows *sql.Rows, p *textPlan) error {
		return rows.Scan(&p.Query, &p.Newest, &p.Long, &p.Pending, &p.Unordered)
	})
	return plan, err == nil && !plan.Long && !plan.Pending, err
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
func (r reader) count(ctx context.Context, q flagadmin.EventQuery, match string, rest sqlq.Fragment) (int, error) {
	if !visibilityOnly(q) {
		return r.scalar(ctx, joined(match, rest).Wrap("SELECT COUNT(*) ", ""))
	}
	shown, lists := visible(q, match)
	n, err := r.scalar(ctx, sqlq.F("SELECT COUNT(*) FROM events_tokens WHERE events_tokens MATCH ?", shown))
	if err != nil || !lists {
		return n, err
	}
	more, err := r.scalar(ctx, joined(inLists(match), rest).Wrap("SELECT COUNT(*) ", ""))
	return n + more, err
}

// visible returns the FTS5 query of the events of match that q
// (visibilityOnly) shows, read from the index alone: without the events
// of hidden projects, or without a project when q requires one, by their
// project's token (stored.ProjectToken). The events naming several
// projects, whose token does not say which, are left out when q hides
// projects, which lists reports: the caller reads those from their rows
// (the events of match and project_token ProjectListToken that q's
// conditions on events keep).
func visible(q flagadmin.EventQuery, match string) (shown string, lists bool) {
	var hide []string
	if q.RequireProject {
		hide = append(hide, stored.NoProjectToken)
	}
	for _, p := range q.HiddenProjects {
		if token, alone := stored.ProjectToken(p); alone {
			hide = append(hide, token)
		}
	}
	lists = len(q.HiddenProjects) > 0
	if lists {
		hide = append(hide, stored.ProjectListToken)
	}
	if len(hide) == 0 {
		return match, false
	}
	return "(" + match + ") NOT project_token : (" + strings.Join(hide, " OR ") + ")", lists
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
	ID        int64
	CreatedAt int64
}

// compare orders keys as created_at then id, ascending.
func (k key) compare(o key) int {
	return cmp.Or(cmp.Compare(k.CreatedAt, o.CreatedAt), cmp.Compare(k.ID, o.ID))
}

// noneNewerBelow reports whether no event with an id below below is newer
// (created_at then id) than oldest, read from events_created: the events
// from oldest's created_at on, up to bound of them (false when there are
// more).
func (r reader) noneNewerBelow(ctx context.Context, oldest key, below int64, bound int) (bool, error) {
	type counts struct{ read, newer int }
	seen, err := sqlq.One(ctx, r.db, r.query, sqlq.F(`SELECT COUNT(*), coalesce(sum(id < ? AND (created_at > ? OR id > ?)), 0)
	FROM (SELECT id, created_at FROM events WHERE created_at >= ? ORDER BY created_at, id LIMIT ?)`,
		below, oldest.CreatedAt, oldest.ID, oldest.CreatedAt, bound), func(rows *sql.Rows, s *counts) error { return rows.Scan(&s.read, &s.newer) })
	return err == nil && seen.read < bound && seen.newer == 0, err
}
