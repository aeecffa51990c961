package bunstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/worldgen"
)

// TestDayCounts checks the searches served by the day rows of event_counts
// against memstore, page and total: date ranges of whole UTC days (at day
// boundaries, open on either side, at the ends of the years that have days
// of their own), with every visibility, next to ranges that are not whole
// days; and offsets that skip whole months and days (large offsets,
// crossing day and month boundaries, landing exactly on a day's or a
// month's first event, past the end). Events
// arrive through every write path (Write, and InsertEvents, COPY on
// PostgreSQL), including events on both sides of midnight, before 1970 and
// before 1000. It then checks the month and day rows against the events,
// that writers spread over the shards, that rebuilding the counts from
// the events (the migrations' backfill, computed by the database) gives
// the same counts as the writes did, and the same results, as does the
// migration that adds each project's day rows; and that counts that
// disagree with each other are an error.
func TestDayCounts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, url string) {
		ctx := context.Background()
		store, err := bunstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		mem := memstore.New()
		w := worldgen.MustNew(worldgen.Config{Events: 3000, Projects: 6, Features: 40, Users: 10, Groups: 2, Seed: 11})
		both := func(b *flagadmin.Batch) {
			t.Helper()
			for _, s := range []flagadmin.Store{store, mem} {
				c := *b
				c.Events = slices.Clone(b.Events)
				if err := s.Write(ctx, &c); err != nil {
					t.Fatal(err)
				}
			}
		}
		both(w.Batch())
		for b := range w.Events(600) {
			if err := store.InsertEvents(ctx, b, 250); err != nil {
				t.Fatal(err)
			}
			if err := mem.Write(ctx, &flagadmin.Batch{Events: b}); err != nil {
				t.Fatal(err)
			}
		}
		p0, p1 := w.Projects()[0].ID, w.Projects()[1].ID
		cfg := w.Config()
		day := cfg.Start.AddDate(0, 0, 200).Truncate(24 * time.Hour)
		ms := time.Millisecond
		edges := []time.Time{
			day, day.Add(-ms), day.Add(ms), day.Add(24*time.Hour - ms), day.Add(24 * time.Hour),
			time.Date(999, 12, 31, 23, 59, 59, 999e6, time.UTC), time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(1900, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		}
		// One event per transaction, so that writers draw several shards.
		for i, at := range edges {
			for j, project := range []*string{&p0, &p1, nil} {
				e := flagadmin.Event{CreatedAt: at, Type: flagadmin.EventFeatureUpdated, CreatedBy: "edge", Project: project}
				if project == nil {
					e.Type = flagadmin.EventUserCreated
				}
				e.Data = json.RawMessage(fmt.Sprintf(`{"edge":%d}`, 3*i+j))
				both(&flagadmin.Batch{Events: []flagadmin.Event{e}})
			}
		}
		at := func(t time.Time) *time.Time { return &t }
		y1000, y10000 := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		type window struct{ from, before *time.Time }
		windows := []window{
			{at(day), at(day.Add(24 * time.Hour))},
			{at(day.Add(-24 * time.Hour)), at(day)},
			{at(day), nil},
			{nil, at(day)},
			{at(cfg.Start.AddDate(0, 2, 0)), at(cfg.Start.AddDate(0, 3, 0))},
			{at(y1000), nil},
			{nil, at(y1000)},
			{at(time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)), at(time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC))},
			{at(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)), at(y10000)},
			{nil, at(y10000)},
			{at(y10000), nil},
			{at(day.Add(time.Hour)), at(day.Add(48 * time.Hour))},  // not whole days: counted
			{at(day), at(day.Add(24*time.Hour + time.Nanosecond))}, // likewise
		}
		type visibility struct {
			require bool
			hidden  []string
		}
		visibilities := []visibility{{}, {require: true}, {hidden: []string{p1}}, {require: true, hidden: []string{p1, p0, p1}}}
		var queries []flagadmin.EventQuery
		for _, v := range visibilities {
			for _, win := range windows {
				for _, page := range [][2]int{{50, 0}, {7, 3}, {0, 0}, {50, 1_000_000}} {
					queries = append(queries, flagadmin.EventQuery{From: win.from, Before: win.before, RequireProject: v.require,
						HiddenProjects: v.hidden, Limit: page[0], Offset: page[1]})
				}
			}
			// Offsets that skip whole days, with and without dates (3033
			// events in all).
			for _, offset := range []int{999, 1000, 1001, 1234, 2000, 2500, 2999, 3000, 3010, 3033, 3034, 3100, 100_000} {
				for _, win := range []window{{}, {at(cfg.Start), at(cfg.End)}, {nil, at(day)}, {at(y1000), nil}} {
					queries = append(queries, flagadmin.EventQuery{From: win.from, Before: win.before, RequireProject: v.require,
						HiddenProjects: v.hidden, Limit: 50, Offset: offset})
				}
			}
		}
		// The offsets at which each day starts: a page there starts exactly
		// on a day's first event.
		all, err := mem.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(all.Events); i++ {
			if i >= 1000 && all.Events[i].CreatedAt.Truncate(24*time.Hour) != all.Events[i-1].CreatedAt.Truncate(24*time.Hour) && i%7 == 0 {
				queries = append(queries, flagadmin.EventQuery{Limit: 3, Offset: i}, flagadmin.EventQuery{Limit: 3, Offset: i - 1})
			}
		}
		// Pages that start at each month's first event, and one event to
		// either side, with each visibility, and hiding the project with
		// the fewest events or one with none (whose few hidden events
		// bound the months read closely: see monthSeek).
		perProject := map[string]int{}
		for _, e := range all.Events {
			if e.Project != nil {
				perProject[*e.Project]++
			}
		}
		rare := p0
		for p, n := range perProject {
			if n < perProject[rare] || (n == perProject[rare] && p < rare) {
				rare = p
			}
		}
		for _, v := range append(visibilities, visibility{hidden: []string{rare}}, visibility{require: true, hidden: []string{rare}},
			visibility{hidden: []string{"no-events"}}) {
			q := flagadmin.EventQuery{RequireProject: v.require, HiddenProjects: v.hidden}
			q.Limit = 1_000_000
			seen, err := mem.SearchEvents(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(seen.Events); i++ {
				if monthNumber(seen.Events[i].CreatedAt) == monthNumber(seen.Events[i-1].CreatedAt) {
					continue
				}
				for _, offset := range []int{i - 1, i, i + 1} {
					if offset >= 1000 {
						q.Limit, q.Offset = 2, offset
						queries = append(queries, q)
					}
				}
			}
		}
		// One column filter (IS and IS_ANY_OF) with each visibility: the
		// totals then take off the values' counts in hidden projects and
		// without a project.
		var types, features, envs []string
		var creators []int64
		for _, e := range all.Events {
			if len(types) < 2 && !slices.Contains(types, e.Type) {
				types = append(types, e.Type)
			}
			if e.FeatureName != nil && len(features) < 2 && !slices.Contains(features, *e.FeatureName) {
				features = append(features, *e.FeatureName)
			}
			if e.Environment != nil && len(envs) < 2 && !slices.Contains(envs, *e.Environment) {
				envs = append(envs, *e.Environment)
			}
			if e.CreatedByUserID != nil && len(creators) < 2 && !slices.Contains(creators, *e.CreatedByUserID) {
				creators = append(creators, *e.CreatedByUserID)
			}
		}
		for _, v := range visibilities {
			for _, f := range []flagadmin.EventQuery{
				{Types: types[:1]}, {Types: types}, {Types: []string{flagadmin.EventUserCreated}}, {Features: features[:1]}, {Features: features},
				{Environments: envs[:1]}, {Environments: envs}, {CreatedByUserIDs: creators[:1]}, {CreatedByUserIDs: creators},
			} {
				for _, page := range [][2]int{{20, 0}, {5, 40}} {
					f.RequireProject, f.HiddenProjects, f.Limit, f.Offset = v.require, v.hidden, page[0], page[1]
					queries = append(queries, f)
				}
			}
		}
		check := func(stage string) {
			t.Helper()
			for _, q := range queries {
				want, err := mem.SearchEvents(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := store.SearchEvents(ctx, q)
				if err != nil {
					t.Fatalf("%s: %s: %v", stage, describe(q), err)
				}
				if g, w := bunstore.PageKey(t, got), bunstore.PageKey(t, want); g != w {
					t.Errorf("%s: %s:\ngot  %.300s\nwant %.300s", stage, describe(q), g, w)
				}
			}
		}
		check("as written")
		before := countRows(t, store)
		// The month and day rows, which deep offsets skip by, against the
		// events counted here.
		periods := map[string]int64{}
		for _, e := range all.Events {
			for dim, num := range map[string]int64{"month": monthNumber(e.CreatedAt), "day": dayNumber(e.CreatedAt)} {
				periods[fmt.Sprintf("%s all  %d", dim, num)]++
				if e.Project == nil {
					periods[fmt.Sprintf("%s no-project  %d", dim, num)]++
				} else {
					periods[fmt.Sprintf("%s project %s %d", dim, *e.Project, num)]++
				}
			}
		}
		for k, n := range before.summed {
			if strings.HasPrefix(k, "month ") || strings.HasPrefix(k, "day ") {
				if periods[k] != n {
					t.Errorf("%s: written %d, want %d", k, n, periods[k])
				}
			}
		}
		for k, n := range periods {
			if _, ok := before.summed[k]; !ok {
				t.Errorf("%s: not written, want %d", k, n)
			}
		}
		if !strings.HasPrefix(url, "sqlite:") {
			shards := 0
			for k := range before.raw {
				if strings.HasPrefix(k, "events all ") && !strings.HasSuffix(k, "/0") {
					shards++
				}
			}
			if shards == 0 {
				t.Errorf("33 single-event writes all went to shard 0 of the counts")
			}
		}
		if err := store.Migrate(ctx, bunstore.WithRebuild()); err != nil {
			t.Fatal(err)
		}
		after := countRows(t, store)
		if !maps.Equal(before.summed, after.summed) {
			for k, n := range before.summed {
				if after.summed[k] != n {
					t.Errorf("%s: written %d, recounted %d", k, n, after.summed[k])
				}
			}
			for k, n := range after.summed {
				if _, ok := before.summed[k]; !ok {
					t.Errorf("%s: not written, recounted %d", k, n)
				}
			}
		}
		check("after recount")
		// A database written before each project's day rows were kept gets
		// them in a migration.
		for _, stmt := range []string{
			fmt.Sprintf("DELETE FROM event_counts WHERE dim = %d AND scope = %d", slices.Index(countDims, "day"), slices.Index(countScopes, "project")),
			"DELETE FROM bun_migrations WHERE name = '20261216090000'",
		} {
			if _, err := bunstore.DB(store).ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		if err := store.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if migrated := countRows(t, store); !maps.Equal(before.summed, migrated.summed) {
			t.Errorf("the counts after the migration differ from those written")
		}
		check("after the migration")
		// Counts that disagree with each other are an error, never a page
		// read off wrong counts: a day whose row of every event is gone
		// while its hidden project's row is there; then a day whose rows
		// are all gone, which its month's row still counts (a range of
		// days alone reads no month).
		visible, err := mem.SearchEvents(ctx, flagadmin.EventQuery{HiddenProjects: []string{p1}, Limit: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		inDay := slices.IndexFunc(visible.Events, func(e flagadmin.Event) bool { return e.CreatedAt.Before(day.Add(24 * time.Hour)) })
		if inDay < 1000 {
			t.Fatalf("the first event of %s is at offset %d, which is not skipped to by the counts", day.Format(time.DateOnly), inDay)
		}
		if before.summed[fmt.Sprintf("day project %s %d", p1, day.UnixMilli()/(24*time.Hour).Milliseconds())] == 0 {
			t.Fatalf("%s has no event of %s", p1, day.Format(time.DateOnly))
		}
		ranged := flagadmin.EventQuery{From: at(cfg.Start.Truncate(24 * time.Hour)), Before: at(y10000), HiddenProjects: []string{p1}, Limit: 50, Offset: 1000}
		deep := flagadmin.EventQuery{HiddenProjects: []string{p1}, Limit: 50, Offset: inDay}
		for _, c := range []struct {
			deleted string
			queries []flagadmin.EventQuery
		}{
			{"scope = " + strconv.Itoa(slices.Index(countScopes, "all")), []flagadmin.EventQuery{ranged, deep}},
			{"1 = 1", []flagadmin.EventQuery{deep}},
		} {
			if _, err := bunstore.DB(store).ExecContext(ctx, "DELETE FROM event_counts WHERE dim = ? AND num = ? AND "+c.deleted,
				slices.Index(countDims, "day"), day.UnixMilli()/(24*time.Hour).Milliseconds()); err != nil {
				t.Fatal(err)
			}
			for _, q := range c.queries {
				if page, err := store.SearchEvents(ctx, q); err == nil {
					t.Errorf("without the day rows (%s) of %s: %s: total %d, want an error", c.deleted, day.Format(time.DateOnly), describe(q), page.Total)
				}
			}
		}
	})
}

// dayNumber is the UTC day of t in days since 1970-01-01.
func dayNumber(t time.Time) int64 {
	ms, day := t.UnixMilli(), (24 * time.Hour).Milliseconds()
	if ms < 0 && ms%day != 0 {
		return ms/day - 1
	}
	return ms / day
}

// monthNumber is the UTC month of t in months since 1970-01.
func monthNumber(t time.Time) int64 {
	t = t.UTC()
	return int64(t.Year()-1970)*12 + int64(t.Month()) - 1
}

// counts are the rows of event_counts: raw by "dim scope project value
// num/shard", and summed over the shards of each.
type counts struct{ raw, summed map[string]int64 }

// countDims and countScopes name the dims and scopes of event_counts
// (eventcounts.Dim, eventcounts.Scope).
var (
	countDims   = []string{"events", "feature", "type", "creator", "environment", "day", "month"}
	countScopes = []string{"all", "no-project", "project"}
)

func countRows(t *testing.T, s *bunstore.Store) counts {
	t.Helper()
	rows, err := bunstore.DB(s).QueryContext(context.Background(), "SELECT dim, scope, project, value, num, shard, n FROM event_counts")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	c := counts{raw: map[string]int64{}, summed: map[string]int64{}}
	for rows.Next() {
		var dim, scope, shard int
		var project, value string
		var num, n int64
		if err := rows.Scan(&dim, &scope, &project, &value, &num, &shard, &n); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s %s %s %s", countDims[dim], countScopes[scope], project, value)
		if num != 0 || countDims[dim] == "day" || countDims[dim] == "month" || countDims[dim] == "creator" {
			key = fmt.Sprintf("%s %s %s %d", countDims[dim], countScopes[scope], project, num)
		}
		c.raw[key+"/"+strconv.Itoa(shard)] = n
		c.summed[key] += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// describe writes q's dates as times, which %+v writes as pointers.
func describe(q flagadmin.EventQuery) string {
	var dates string
	if q.From != nil {
		dates += " from " + q.From.Format(time.RFC3339Nano)
	}
	if q.Before != nil {
		dates += " before " + q.Before.Format(time.RFC3339Nano)
	}
	q.From, q.Before = nil, nil
	return fmt.Sprintf("%+v%s", q, dates)
}
