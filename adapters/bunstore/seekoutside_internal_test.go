package bunstore

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// writeBeforePage are summaries that commit write, through another
// connection, before the first page read with a stamp (the page of a seek
// outside a transaction), and count the pages read with and without one.
type writeBeforePage struct {
	summaries
	write              func() error
	stamped, unstamped int
}

func (w *writeBeforePage) ReadPageIn(ctx context.Context, conn bun.Conn, where sqlq.Fragment, limit int, skip, stamp sqlq.Fragment) ([]flagadmin.Event, int64, bool, error) {
	if stamp.Empty() {
		w.unstamped++
	} else {
		w.stamped++
		if w.write != nil {
			if err := w.write(); err != nil {
				return nil, 0, true, err
			}
			w.write = nil
		}
	}
	return w.summaries.ReadPageIn(ctx, conn, where, limit, skip, stamp)
}

// TestSeekOutsideTxReadsAgainAfterAWrite: a page at a large offset is read
// outside a transaction (the seek, then the page), and when a write
// commits between the seek and its page, it is read again in one
// transaction: the page and the total are those of one snapshot, as a
// search after the write finds them, for every shape of seek (months and
// days, hidden projects, whole days).
func TestSeekOutsideTxReadsAgainAfterAWrite(t *testing.T) {
	ctx := context.Background()
	s, w := postgresPageWorld(t, 9)
	tuned := s.summaries
	cfg := w.Config()
	from, before := cfg.Start, cfg.End
	hidden := []string{w.Projects()[1].ID, w.Projects()[4].ID}
	visible := w.Projects()[0].ID
	for _, c := range []struct {
		name string
		q    flagadmin.EventQuery
	}{
		{"all", flagadmin.EventQuery{Offset: 1500, Limit: 50}},
		{"hidden projects", flagadmin.EventQuery{Offset: 1200, Limit: 50, RequireProject: true, HiddenProjects: hidden}},
		{"whole days", flagadmin.EventQuery{Offset: 1100, Limit: 50, From: &from, Before: &before, HiddenProjects: hidden}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if plan := tuned.PlanSearch(c.q); plan.Seek == nil || !plan.OutsideTx {
				t.Fatal("the query is not read by a seek outside a transaction")
			}
			// Without a write in between: one read, outside a transaction.
			spy := &writeBeforePage{summaries: tuned}
			s.summaries = spy
			t.Cleanup(func() { s.summaries = tuned })
			quiet, err := s.SearchEvents(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if spy.stamped != 1 || spy.unstamped != 0 {
				t.Fatalf("without a write: %d pages read with the stamp and %d without, want 1 and 0", spy.stamped, spy.unstamped)
			}

			// A newer event committed between the seek and its page moves
			// every page at an offset by one.
			late := flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "late " + c.name, Project: &visible, CreatedAt: before.AddDate(0, 0, -1)}
			spy = &writeBeforePage{summaries: tuned, write: func() error {
				return s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{late}})
			}}
			s.summaries = spy
			got, err := s.SearchEvents(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if spy.stamped != 1 || spy.unstamped != 1 {
				t.Errorf("with a write: %d pages read with the stamp and %d without, want 1 and 1 (read again in a transaction)", spy.stamped, spy.unstamped)
			}
			s.summaries = tuned
			want, err := s.SearchEvents(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if want.Total != quiet.Total+1 {
				t.Fatalf("total after the write %d, want %d", want.Total, quiet.Total+1)
			}
			if got.Total != want.Total || !slices.Equal(eventtest.IDs(got.Events), eventtest.IDs(want.Events)) {
				t.Errorf("read across a write: total %d, ids %v…; want those of one snapshot: total %d, ids %v…",
					got.Total, eventtest.IDs(got.Events)[:3], want.Total, eventtest.IDs(want.Events)[:3])
			}
		})
	}
}

// TestSeekOutsideTxUnderWrites: pages at large offsets read while a writer
// adds events throughout the history (as a follower's or an import's
// older events are) are each the page of one snapshot, the one their
// total names: every event added is visible and has a larger id than all
// before it, so a snapshot holding total visible events holds the total
// visible events of smallest ids, and the page is those at the offset in
// page order.
func TestSeekOutsideTxUnderWrites(t *testing.T) {
	ctx := context.Background()
	s, w := postgresPageWorld(t, 11)
	hidden := []string{w.Projects()[2].ID}
	visible := w.Projects()[0].ID
	start, span := w.Config().Start, w.Config().End.Sub(w.Config().Start)
	const writes, readers = 120, 3
	done := make(chan struct{})
	errs := make(chan error, readers+1)
	go func() {
		defer close(done)
		for i := range writes {
			e := flagadmin.Event{Type: flagadmin.EventFeatureCreated, CreatedBy: "writer", Project: &visible,
				CreatedAt: start.Add(time.Duration(i*7919) * time.Minute % span)}
			if err := s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{e}}); err != nil {
				errs <- err
				return
			}
		}
	}()
	type answer struct {
		q    flagadmin.EventQuery
		page flagadmin.EventPage
	}
	answers := make(chan answer, 10_000)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				q := flagadmin.EventQuery{Offset: 1000 + (r*701+i*397)%900, Limit: 50}
				if i%2 == 1 {
					q.RequireProject, q.HiddenProjects = true, hidden
				}
				page, err := s.SearchEvents(ctx, q)
				if err != nil {
					errs <- err
					return
				}
				answers <- answer{q, page}
			}
		}()
	}
	wg.Wait()
	close(answers)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every event now, in page order, with what visibility needs.
	var all []struct {
		ID      int64   `bun:"id"`
		Project *string `bun:"project"`
	}
	if err := s.rdb.NewRaw("SELECT id, project FROM events ORDER BY created_at DESC, id DESC").Scan(ctx, &all); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for a := range answers {
		var seen []int64 // the visible events' ids, in page order
		for _, e := range all {
			if a.q.RequireProject && (e.Project == nil || flagadmin.ProjectHidden(*e.Project, a.q.HiddenProjects)) {
				continue
			}
			seen = append(seen, e.ID)
		}
		ordered := slices.Sorted(slices.Values(seen))
		if a.page.Total > len(ordered) {
			t.Fatalf("%+v: total %d, more than the %d events there are", a.q, a.page.Total, len(ordered))
		}
		newest := ordered[a.page.Total-1] // the snapshot's visible events: ids up to this one
		var want []int64
		for _, id := range seen {
			if id <= newest {
				want = append(want, id)
			}
		}
		want = want[min(a.q.Offset, len(want)):min(a.q.Offset+a.q.Limit, len(want))]
		if got := eventtest.IDs(a.page.Events); len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("offset %d (hidden %v), total %d: page %v, want the snapshot's %v", a.q.Offset, a.q.HiddenProjects, a.page.Total, got, want)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no page was read while the writer wrote")
	}
	t.Logf("%d pages checked against their snapshots", checked)
}
