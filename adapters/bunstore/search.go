package bunstore

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/summary"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// SearchEvents implements flagadmin.Store. The page and the total always
// describe one snapshot of the database.
//
// Without a free-text query, the total is read from the summaries when
// they give it (summaries.PlanSearch: event_counts), else counted from an
// index, and the page's ids are read from an index too (a deferred join),
// so only the page's own rows are fetched: in one read-only transaction,
// or in one statement when the summaries read it (summaries.ReadPage: on
// PostgreSQL). A large offset with no column filter may first skip whole
// months and days by their counts (Plan.Seek), and its page may be read
// by the summaries (summaries.ReadPageIn), then outside a transaction
// when the change counter says no write came in between (seekOutsideTx).
// With a free-text query,
// whose every candidate row must be read to be checked anyway, one pass
// returns the page's ids with the count of all matches (a window count)
// instead of checking every row twice, or the summaries read the page
// and its total in one statement (summaries.ReadTextPage).
func (s *Store) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if q.Text != "" {
		return s.searchText(ctx, q)
	}
	plan := s.summaries.PlanSearch(q)
	if q.Limit > 0 && plan.Seek == nil {
		page, read, err := s.summaries.ReadPage(ctx, s.rdb, summary.Page{Query: q, Total: s.total(q, plan), Where: s.pageWhere})
		if err != nil {
			return flagadmin.EventPage{}, s.fail("search events", err)
		}
		if read {
			return page, nil
		}
	}
	if plan.OutsideTx {
		page, read, err := s.seekOutsideTx(ctx, q, plan)
		if err != nil && ctx.Err() != nil {
			return flagadmin.EventPage{}, s.fail("search events", err)
		}
		if read {
			return page, nil
		}
		// A write came in between, or what the statements read apart did
		// not add up (err): read again in one transaction.
	}
	return s.searchInTx(ctx, q, plan)
}

// searchInTx is SearchEvents without free text in one read-only
// transaction, served by plan where it can be.
func (s *Store) searchInTx(ctx context.Context, q flagadmin.EventQuery, plan summary.Plan) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: []flagadmin.Event{}}
	err := s.inReadConn(ctx, "search events", func(ctx context.Context, conn bun.Conn, tx bun.Tx) error {
		start, err := s.pageStart(ctx, tx, q, plan)
		page.Total = start.Total
		if err != nil || q.Limit <= 0 || q.Offset >= start.Total {
			return err
		}
		where := s.startWhere(q, start)
		if plan.Seek != nil {
			skip := s.seekSkip(start)
			events, _, read, err := s.summaries.ReadPageIn(ctx, conn, where, q.Limit, skip, sqlq.Fragment{})
			if read {
				page.Events = events
				return err
			}
			return s.fetchPagePrepared(ctx, tx, preparedPage(where, q.Limit, skip), &page)
		}
		if summary.OnePlan(q) {
			return s.fetchPagePrepared(ctx, tx, preparedPage(where, q.Limit, s.seekSkip(start)), &page)
		}
		ids := where.Wrap("SELECT id FROM events WHERE ", pageOrder)
		ids = sqlq.Join(" ", ids, sqlq.F("LIMIT ? OFFSET ?", q.Limit, start.Offset))
		return s.fetchPage(ctx, tx, ids, &page)
	})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	return page, nil
}

// versionStamp is the change counter (versionSQL) as a scalar SQL
// expression of type bigint, read by a statement in its own snapshot.
var versionStamp = sqlq.F("(SELECT CAST(s.v AS bigint) FROM (" + versionSQL + ") AS s(v))")

// seekOutsideTx reads q's page at a large offset as SearchEvents does in a
// read transaction, the seek (plan.Seek) then the page (ReadPageIn), but on
// a connection outside one, each statement in a snapshot of its own, and
// reports whether it read it: a transaction's BEGIN and COMMIT cost as
// many round trips as the seek's statements themselves. The seek's first
// statement and the page's read the change counter (versionStamp). Every
// write transaction raises it before it commits (bumpVersion), and it
// never decreases, so when the two read the same value no write committed
// between them, and every statement in between saw the events and the
// counts that one transaction would have. Otherwise (or when the page came
// back empty, or the statements' counts did not add up: err) it reads
// nothing, and the caller reads again in one transaction.
func (s *Store) seekOutsideTx(ctx context.Context, q flagadmin.EventQuery, plan summary.Plan) (flagadmin.EventPage, bool, error) {
	conn, release, err := s.readerConn(ctx)
	if err != nil {
		return flagadmin.EventPage{}, false, err
	}
	defer release()
	start, err := plan.Seek(ctx, conn, versionStamp)
	if err != nil {
		return flagadmin.EventPage{}, false, err
	}
	page := flagadmin.EventPage{Total: start.Total, Events: []flagadmin.Event{}}
	if q.Offset >= start.Total {
		return page, true, nil // the seek's one statement
	}
	events, stamp, read, err := s.summaries.ReadPageIn(ctx, conn, s.startWhere(q, start), q.Limit, s.seekSkip(start), versionStamp)
	if err != nil || !read || len(events) == 0 || stamp != start.Stamp {
		return flagadmin.EventPage{}, false, err
	}
	page.Events = events
	return page, true, nil
}

// pageStart returns q's total and where its page starts: found by the
// summaries (plan.Seek) at a large offset, else at q.Offset of all
// matches, its total read by a statement kept prepared when one plan
// serves it for any value (summary.OnePlan).
func (s *Store) pageStart(ctx context.Context, tx bun.Tx, q flagadmin.EventQuery, plan summary.Plan) (summary.Start, error) {
	if plan.Seek != nil {
		return plan.Seek(ctx, tx, sqlq.Fragment{})
	}
	start := summary.Start{Offset: q.Offset}
	total := s.total(q, plan).Wrap("SELECT ", "")
	if !summary.OnePlan(q) {
		err := tx.NewRaw(total.Text, total.Args...).Scan(ctx, &start.Total)
		return start, err
	}
	var err error
	start.Total, err = sqlq.One(ctx, tx, s.sqlDialect.QueryPrepared, total, sqlq.Value[int])
	return start, err
}

// total is the SQL expression of q's total: from the summaries when plan
// gives it, else the count of q's matches.
func (s *Store) total(q flagadmin.EventQuery, plan summary.Plan) sqlq.Fragment {
	if !plan.Total.Empty() {
		return plan.Total
	}
	return s.filter(q).Wrap("(SELECT COUNT(*) FROM events WHERE ", ")")
}

// startWhere is the WHERE condition of q's page that starts at start:
// its matches after its cursor, and before start.Before when it has one.
func (s *Store) startWhere(q flagadmin.EventQuery, start summary.Start) sqlq.Fragment {
	where := s.pageWhere(q)
	if start.HasBefore {
		where = sqlq.And(where, sqlq.F("created_at < ?", start.Before))
	}
	return where
}

// seekSkip is the OFFSET clause of the page a seek found at start, kept
// prepared (PreparedOffset).
func (s *Store) seekSkip(start summary.Start) sqlq.Fragment {
	return sqlq.F(s.sqlDialect.PreparedOffset(), start.Offset)
}

// pageWhere is the WHERE condition of q's page: its matches after its
// cursor.
func (s *Store) pageWhere(q flagadmin.EventQuery) sqlq.Fragment {
	return sqlq.And(s.filter(q), s.after(q))
}

// pageOrder is the order of a page's events.
const pageOrder = " ORDER BY created_at DESC, id DESC"

// preparedPage is the statement of the page of limit events of where (a
// condition on events) after the rows skip (an OFFSET clause) skips, for
// fetchPagePrepared: the page's ids read from an index, then their rows.
// The pages of a seek, and those of a query one plan serves
// (summary.OnePlan), differ in their values alone: kept prepared, the
// limit written in the text (a placeholder there would plan for a tenth
// of the rows), the offset planned for once (PreparedOffset).
func preparedPage(where sqlq.Fragment, limit int, skip sqlq.Fragment) sqlq.Fragment {
	ids := where.Wrap("SELECT id FROM events WHERE ", pageOrder+" LIMIT "+strconv.Itoa(limit))
	return sqlq.Fill(pageSQL, sqlq.Join(" ", ids, skip))
}

// pageColumns are the columns of a page's events, from events AS e.
var pageColumns = "e." + strings.Join(stored.EventColumns, ", e.")

// pageSQL reads the rows of the events whose ids the query in its place
// selects, in no order: appendPage puts them in page order. Sorted by the
// statement, a page's rows, their data and all, went through SQLite's
// sorter, whose buffer grows by reallocation, each a new mapping of
// memory: 15% of the CPU of a random feature's page on SQLite, most of it
// in mmap and munmap.
var pageSQL = "SELECT " + pageColumns + " FROM (?) AS p JOIN events AS e ON e.id = p.id"

// fetchPage appends to page the events whose ids the query ids selects, in
// page order.
func (s *Store) fetchPage(ctx context.Context, tx bun.IDB, ids sqlq.Fragment, page *flagadmin.EventPage) error {
	var rows []stored.Event
	q := sqlq.Fill(pageSQL, ids)
	if err := tx.NewRaw(q.Text, q.Args...).Scan(ctx, &rows); err != nil {
		return err
	}
	return appendPage(page, rows)
}

// pageOf is the statement of the page of the events of ids (pageSQL),
// whose text depends on their number alone.
func pageOf(ids []int64) sqlq.Fragment {
	return sqlq.Fill(pageSQL, sqlq.In("SELECT id FROM events WHERE id", ids))
}

// fetchPagePrepared appends to page the events that stmt (a statement of
// pageColumns) reads, kept prepared where the database would plan it anew
// each time (QueryPrepared): for pages whose statements repeat with other
// values, and whose plan does not depend on them.
func (s *Store) fetchPagePrepared(ctx context.Context, tx bun.Tx, stmt sqlq.Fragment, page *flagadmin.EventPage) error {
	rows, err := s.sqlDialect.QueryPrepared(ctx, tx, stmt)
	if err != nil {
		return err
	}
	var read []stored.Event
	if err := s.rdb.ScanRows(ctx, rows, &read); err != nil {
		return err
	}
	return appendPage(page, read)
}

// searchText answers a query with free text: in one statement when the
// summaries read its page (summaries.ReadTextPage: on PostgreSQL), else in
// one read-only transaction.
func (s *Store) searchText(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	if q.Limit > 0 {
		page, read, err := s.summaries.ReadTextPage(ctx, s.rdb, q, s.filter(q), s.after(q))
		if err != nil {
			return flagadmin.EventPage{}, s.fail("search events", err)
		}
		if read {
			return page, nil
		}
	}
	page := flagadmin.EventPage{Events: []flagadmin.Event{}}
	err := s.inReadTx(ctx, "search events", func(ctx context.Context, tx bun.Tx) error {
		if q.Limit > 0 {
			found, err := s.textPage(ctx, tx, q, &page)
			if err != nil || found {
				return err
			}
			// The offset is past the last match: count them apart.
		}
		var total int64
		err := tx.NewRaw("SELECT ?", s.total(q, summary.Plan{})).Scan(ctx, &total)
		page.Total = int(total)
		return err
	})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	return page, nil
}

// textPage reads the page of a query with free text, with its total, and
// reports whether that told the total (false when the page is empty past
// the first one: the count of the matches came with no row). The
// summaries may find the page's events and the total from an index
// (summaries.FindTextPage: on SQLite); else they are read by a window.
//
// The window runs over the matches in a subquery, sorted after: with
// ORDER BY next to the window, PostgreSQL may walk the events_created
// index and check every event, believing that a LIMIT stops a window
// count early. The count stays over every match, whatever the cursor.
func (s *Store) textPage(ctx context.Context, tx bun.Tx, q flagadmin.EventQuery, page *flagadmin.EventPage) (bool, error) {
	rest := q
	rest.Text = ""
	ids, total, found, err := s.summaries.FindTextPage(ctx, tx, q, s.conditions(rest))
	if err != nil || found {
		page.Total = total
		if err != nil || len(ids) == 0 {
			return true, err
		}
		return true, s.fetchPagePrepared(ctx, tx, pageOf(ids), page)
	}
	matches := s.filter(q).Wrap("(SELECT id, created_at, COUNT(*) OVER () AS total FROM events WHERE ", ") AS m")
	sel := sqlq.Join(" WHERE ", matches.Wrap("SELECT id, total FROM ", ""), s.after(q))
	sel = sqlq.Join(" ", sel, sqlq.F("ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", q.Limit, q.Offset))
	var hits []struct {
		ID    int64 `bun:"id"`
		Total int   `bun:"total"`
	}
	if err := tx.NewRaw(sel.Text, sel.Args...).Scan(ctx, &hits); err != nil {
		return false, err
	}
	if len(hits) == 0 && (q.Offset > 0 || q.After != nil) {
		return false, nil
	}
	ids = make([]int64, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.ID)
		page.Total = h.Total
	}
	if len(ids) == 0 {
		return true, nil
	}
	return true, s.fetchPagePrepared(ctx, tx, pageOf(ids), page)
}

// appendPage appends the events of rows to page in page order
// (flagadmin.CompareEvents).
func appendPage(page *flagadmin.EventPage, rows []stored.Event) error {
	n := len(page.Events)
	err := appendEvents(page, rows)
	slices.SortFunc(page.Events[n:], flagadmin.CompareEvents)
	return err
}

// appendEvents appends the events of rows to page.
func appendEvents(page *flagadmin.EventPage, rows []stored.Event) error {
	for _, r := range rows {
		e, err := r.Event()
		if err != nil {
			return err
		}
		page.Events = append(page.Events, e)
	}
	return nil
}

// filter is the WHERE condition of q's matches: the SQL form of
// EventQuery.Matches (without its cursor, q.After), true ("1 = 1") when
// q has no filter.
func (s *Store) filter(q flagadmin.EventQuery) sqlq.Fragment {
	if where := s.conditions(q); !where.Empty() {
		return where
	}
	return sqlq.F("1 = 1")
}

// conditions is filter, empty when q has no filter.
func (s *Store) conditions(q flagadmin.EventQuery) sqlq.Fragment {
	var conds []sqlq.Fragment
	for c := range q.ColumnFilters() {
		switch {
		case c.Len() == 0: // an empty list filters nothing
		case c.Param.Kind == flagadmin.FilterIntegers:
			conds = append(conds, sqlq.In(stored.Column(c.Param.Column), c.Ints))
		default:
			conds = append(conds, sqlq.In(stored.Column(c.Param.Column), c.Strings))
		}
	}
	if q.From != nil {
		conds = append(conds, sqlq.F("created_at >= ?", stored.CeilMillis(*q.From)))
	}
	if q.Before != nil {
		conds = append(conds, sqlq.F("created_at < ?", stored.CeilMillis(*q.Before)))
	}
	if q.RequireProject {
		conds = append(conds, sqlq.F("project IS NOT NULL"))
	}
	if len(q.HiddenProjects) > 0 {
		conds = append(conds, stored.ProjectHidden(s.sqlDialect.Name(), "project", q.HiddenProjects).Wrap("(project IS NULL OR NOT ", ")"))
	}
	if q.Text != "" {
		conds = append(conds, s.textFilter(q.Text, q.TextScope))
	}
	return sqlq.And(conds...)
}

// textFilter keeps the events whose search texts in scope contain text, a
// literal: from an index when the summaries answer text
// (summaries.MatchText: SQLite's FTS5 table, PostgreSQL's token index),
// else by the dialect's test of each text (sqlDialect.Contains), a scan
// of the texts. Both texts are
// computed with strings.ToLower, the function that lower-cases the query,
// and queries cannot contain control characters, so a match never spans
// the newline between two texts: the test is exactly strings.Contains.
func (s *Store) textFilter(text string, scope flagadmin.TextScope) sqlq.Fragment {
	if match, ok := s.summaries.MatchText(text, scope); ok {
		return match
	}
	payload := s.sqlDialect.Contains("search_payload", text)
	if scope == flagadmin.TextPayload {
		return payload
	}
	meta := s.sqlDialect.Contains("search_meta", text)
	return sqlq.Join(" OR ", payload, meta).Wrap("(", ")")
}
