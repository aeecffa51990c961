package bunstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Event counts kept at write time. Every path that appends events also adds
// them to event_counts in the same transaction: one row for all events, one
// for the events without a project, and one per value of each filtered
// column (project, feature, type, creator, environment). Events are never
// deleted, so the counts only grow. A search whose total is the count of
// "all events" or of "events with one of these values in one column" (the
// common pages: no filter, or one IS / IS_ANY_OF filter, with the
// visibility of any caller for the project filter and no filter) reads its
// total from a few rows instead of counting up to millions of index entries.

// Dimensions of event_counts.
const (
	countAll         = "all"
	countNoProject   = "no-project"
	countProject     = "project"
	countFeature     = "feature"
	countType        = "type"
	countCreator     = "creator"
	countEnvironment = "environment"
)

// eventCountsSchema is the table of counts: (dim, val) → n.
var eventCountsSchema = []table{{name: "event_counts", body: `
		dim {SHORT} NOT NULL,
		val {EVENTKEY} NOT NULL,
		n BIGINT NOT NULL,
		PRIMARY KEY (dim, val)`}}

// backfillCounts recomputes event_counts from the events table.
func backfillCounts(name dialect.Name) []string {
	text := "CAST(created_by_user_id AS TEXT)"
	if name == dialect.MySQL {
		text = "CAST(created_by_user_id AS CHAR)"
	}
	group := func(dim, col string) string {
		return fmt.Sprintf("INSERT INTO event_counts (dim, val, n) SELECT '%s', %s, COUNT(*) FROM events WHERE %s IS NOT NULL GROUP BY %s",
			dim, col, col, col)
	}
	return []string{
		"DELETE FROM event_counts",
		"INSERT INTO event_counts (dim, val, n) SELECT '" + countAll + "', '', COUNT(*) FROM events",
		"INSERT INTO event_counts (dim, val, n) SELECT '" + countNoProject + "', '', COUNT(*) FROM events WHERE project IS NULL",
		group(countProject, "project"),
		group(countFeature, "feature_name"),
		group(countType, "type"),
		fmt.Sprintf("INSERT INTO event_counts (dim, val, n) SELECT '%s', %s, COUNT(*) FROM events WHERE created_by_user_id IS NOT NULL GROUP BY created_by_user_id", countCreator, text),
		group(countEnvironment, "environment"),
	}
}

// countKey is one row of event_counts.
type countKey struct{ dim, val string }

// countDelta is what a batch of events adds to one row.
type countDelta struct {
	countKey
	n int64
}

// countDeltas returns what events add to event_counts, ordered by key so
// that concurrent writers lock the rows in one order (no deadlocks).
func countDeltas(events []flagadmin.Event) []countDelta {
	m := map[countKey]int64{{countAll, ""}: int64(len(events))}
	add := func(dim string, v *string) {
		if v != nil {
			m[countKey{dim, *v}]++
		}
	}
	for _, e := range events {
		if e.Project == nil {
			m[countKey{countNoProject, ""}]++
		}
		add(countProject, e.Project)
		add(countFeature, e.FeatureName)
		m[countKey{countType, e.Type}]++
		if e.CreatedByUserID != nil {
			m[countKey{countCreator, strconv.FormatInt(*e.CreatedByUserID, 10)}]++
		}
		add(countEnvironment, e.Environment)
	}
	out := make([]countDelta, 0, len(m))
	for k, n := range m {
		out = append(out, countDelta{k, n})
	}
	slices.SortFunc(out, func(a, b countDelta) int { return cmp.Or(cmp.Compare(a.dim, b.dim), cmp.Compare(a.val, b.val)) })
	return out
}

// countChunk bounds the rows of one upsert statement (3 parameters each).
const countChunk = 5000

// upsertCountsSQL is the statement adding len(rows) deltas, with ? or $n
// placeholders.
func upsertCountsSQL(name dialect.Name, rows int, dollar bool) string {
	var b strings.Builder
	b.WriteString("INSERT INTO event_counts (dim, val, n) VALUES ")
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		if dollar {
			fmt.Fprintf(&b, "($%d, $%d, $%d)", 3*i+1, 3*i+2, 3*i+3)
		} else {
			b.WriteString("(?, ?, ?)")
		}
	}
	switch name {
	case dialect.MySQL:
		b.WriteString(" ON DUPLICATE KEY UPDATE n = n + VALUES(n)")
	case dialect.PG:
		b.WriteString(" ON CONFLICT (dim, val) DO UPDATE SET n = event_counts.n + EXCLUDED.n")
	default:
		b.WriteString(" ON CONFLICT (dim, val) DO UPDATE SET n = n + excluded.n")
	}
	return b.String()
}

// addCounts adds events to event_counts through exec, in the caller's transaction.
func addCounts(ctx context.Context, name dialect.Name, dollar bool, events []flagadmin.Event, exec func(ctx context.Context, query string, args ...any) error) error {
	if len(events) == 0 {
		return nil
	}
	deltas := countDeltas(events)
	for start := 0; start < len(deltas); start += countChunk {
		part := deltas[start:min(len(deltas), start+countChunk)]
		args := make([]any, 0, 3*len(part))
		for _, d := range part {
			args = append(args, d.dim, d.val, d.n)
		}
		if err := exec(ctx, upsertCountsSQL(name, len(part), dollar), args...); err != nil {
			return err
		}
	}
	return nil
}

// addCountsBun adds events to event_counts in a bun transaction.
func (s *Store) addCountsBun(ctx context.Context, db bun.IDB, events []flagadmin.Event) error {
	return addCounts(ctx, s.dialect, false, events, func(ctx context.Context, query string, args ...any) error {
		_, err := db.ExecContext(ctx, query, args...)
		return err
	})
}

// addCountsPgx adds events to event_counts in a pgx transaction (the COPY path).
func addCountsPgx(ctx context.Context, tx pgx.Tx, events []flagadmin.Event) error {
	return addCounts(ctx, dialect.PG, true, events, func(ctx context.Context, query string, args ...any) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
}

// countedTotal returns the total of q from event_counts when q's matches are
// a sum of counted rows: no free text, no dates, no id or group filter, at
// most one column filter, and a visibility restriction only together with no
// filter or a project filter. ok is false otherwise.
func (s *Store) countedTotal(ctx context.Context, tx bun.Tx, q flagadmin.EventQuery) (total int, ok bool, err error) {
	if q.Text != "" || q.From != nil || q.Before != nil || len(q.IDs) > 0 || len(q.GroupIDs) > 0 {
		return 0, false, nil
	}
	var filters []countKey
	set := 0
	for _, f := range []struct {
		dim    string
		values []string
	}{{countProject, q.Projects}, {countFeature, q.Features}, {countType, q.Types}, {countEnvironment, q.Environments}} {
		if len(f.values) > 0 {
			set++
			for _, v := range f.values {
				filters = append(filters, countKey{f.dim, v})
			}
		}
	}
	if len(q.CreatedByUserIDs) > 0 {
		set++
		for _, id := range q.CreatedByUserIDs {
			filters = append(filters, countKey{countCreator, strconv.FormatInt(id, 10)})
		}
	}
	restricted := q.RequireProject || len(q.HiddenProjects) > 0
	switch {
	case set > 1:
		return 0, false, nil
	case set == 1 && restricted && filters[0].dim != countProject:
		return 0, false, nil
	}
	hidden := map[string]bool{}
	for _, p := range q.HiddenProjects {
		hidden[p] = true
	}
	// want: the rows to add (+1) or subtract (-1), each counted once.
	want := map[countKey]int{}
	if set == 0 {
		want[countKey{countAll, ""}] = 1
		if q.RequireProject {
			want[countKey{countNoProject, ""}] = -1
		}
		for p := range hidden {
			want[countKey{countProject, p}] = -1
		}
	} else {
		for _, k := range filters {
			if k.dim == countProject && hidden[k.val] {
				continue
			}
			want[k] = 1
		}
	}
	if len(want) == 0 {
		return 0, true, nil
	}
	byDim := map[string][]string{}
	for k := range want {
		byDim[k.dim] = append(byDim[k.dim], k.val)
	}
	sel := tx.NewSelect().Table("event_counts").Column("dim", "val", "n")
	sel = sel.WhereGroup(" AND ", func(g *bun.SelectQuery) *bun.SelectQuery {
		for _, dim := range slices.Sorted(maps.Keys(byDim)) {
			g = g.WhereOr("(dim = ? AND val IN (?))", dim, bun.In(byDim[dim]))
		}
		return g
	})
	var rows []struct {
		Dim string `bun:"dim"`
		Val string `bun:"val"`
		N   int64  `bun:"n"`
	}
	if err := sel.Scan(ctx, &rows); err != nil {
		return 0, false, err
	}
	var n int64
	for _, r := range rows {
		n += int64(want[countKey{r.Dim, r.Val}]) * r.N
	}
	return int(n), true, nil
}
