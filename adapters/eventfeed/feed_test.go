package eventfeed_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// start runs a feed over store until the test ends.
func start(t *testing.T, store eventfeed.Source, opts eventfeed.Options) *eventfeed.Feed {
	t.Helper()
	if opts.Interval == 0 {
		opts.Interval = 5 * time.Millisecond
	}
	f := eventfeed.New(store, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// write appends n events of project to store, named from first on.
func write(t *testing.T, store *memstore.Store, project string, first, n int) {
	t.Helper()
	var events []flagadmin.Event
	for i := range n {
		events = append(events, flagadmin.Event{Type: flagadmin.EventFeatureUpdated, CreatedBy: fmt.Sprintf("e%d", first+i),
			CreatedAt: time.Now().UTC(), Project: &project})
	}
	if err := store.Write(context.Background(), &flagadmin.Batch{Events: events}); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

// follower collects what Follow delivers, in a goroutine.
type follower struct {
	mu   sync.Mutex
	got  []flagadmin.Event
	err  error
	done chan struct{}
}

// follow starts Follow; before it takes each event, hook (when set) is
// called with the number of events it has taken.
func follow(ctx context.Context, f *eventfeed.Feed, q flagadmin.EventQuery, afterID int64, resume bool, hook func(n int)) *follower {
	st := &flagadmin.EventStream{Query: q, AfterID: afterID, Resume: resume}
	fl := &follower{done: make(chan struct{})}
	go func() {
		defer close(fl.done)
		err := st.Run(ctx, f, func(events []flagadmin.Event) error {
			for _, e := range events {
				if hook != nil {
					fl.mu.Lock()
					n := len(fl.got)
					fl.mu.Unlock()
					hook(n)
				}
				fl.mu.Lock()
				fl.got = append(fl.got, e)
				fl.mu.Unlock()
			}
			return nil
		})
		fl.mu.Lock()
		fl.err = err
		fl.mu.Unlock()
	}()
	return fl
}

func (fl *follower) names() []string {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	var out []string
	for _, e := range fl.got {
		out = append(out, e.CreatedBy)
	}
	return out
}

// waitFor waits until fl has n events, or fails after 5 s.
func (fl *follower) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if len(fl.names()) >= n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("got %d events %v, want %d", len(fl.names()), fl.names(), n)
}

func names(from, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("e%d", from+i))
	}
	return out
}

func TestFollowWithoutResumeStartsAfterTheNewestEvent(t *testing.T) {
	store := memstore.New()
	write(t, store, "web", 0, 3)
	f := start(t, store, eventfeed.Options{})
	fl := follow(t.Context(), f, flagadmin.EventQuery{}, 0, false, nil)
	waitOpen(t, f, 1)
	write(t, store, "web", 3, 2)
	fl.waitFor(t, 2)
	if got := fl.names(); !slices.Equal(got, names(3, 2)) {
		t.Errorf("got %v, want %v", got, names(3, 2))
	}
}

// waitOpen waits until the feed counts n open streams.
func waitOpen(t *testing.T, f *eventfeed.Feed, n int64) {
	t.Helper()
	for range 1000 {
		if f.Stats().OpenStreams == n {
			time.Sleep(20 * time.Millisecond) // past its LastEventID
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("open streams: got %d, want %d", f.Stats().OpenStreams, n)
}

func TestFollowReplaysThenFollowsWithQueryAndVisibility(t *testing.T) {
	store := memstore.New()
	write(t, store, "web", 0, 5)
	write(t, store, "secret", 5, 2)
	f := start(t, store, eventfeed.Options{})
	// A Viewer's stream: the private project hidden, and with it events
	// naming it among several projects, and events naming every project.
	q := flagadmin.EventQuery{RequireProject: true, HiddenProjects: []string{"secret", flagadmin.AllProjects}}
	fl := follow(t.Context(), f, q, 2, true, nil)
	fl.waitFor(t, 3)
	write(t, store, "secret", 7, 1)
	write(t, store, "web,secret", 8, 1)
	write(t, store, flagadmin.AllProjects, 9, 1)
	write(t, store, "web", 10, 1)
	write(t, store, "web,mobile", 11, 1)
	fl.waitFor(t, 5)
	want := append(names(2, 3), names(10, 2)...)
	if got := fl.names(); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestFollowHandOffExactlyOnce joins streams with resume points while
// writers append: each stream must get every event after its resume
// point, in id order, once each.
func TestFollowHandOffExactlyOnce(t *testing.T) {
	store := memstore.New()
	f := start(t, store, eventfeed.Options{Interval: time.Millisecond})
	const writers, writes = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range writes {
				write(t, store, "web", 1000*w+i, 1)
				time.Sleep(200 * time.Microsecond)
			}
		})
	}
	var followers []*follower
	var resumes []int64
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 20 {
		time.Sleep(time.Millisecond)
		resume := int64(i * 5)
		resumes = append(resumes, resume)
		followers = append(followers, follow(ctx, f, flagadmin.EventQuery{}, resume, true, nil))
	}
	wg.Wait()
	total := writers * writes
	for i, fl := range followers {
		fl.waitFor(t, total-int(resumes[i]))
	}
	time.Sleep(20 * time.Millisecond) // nothing more may come
	for i, fl := range followers {
		fl.mu.Lock()
		var ids []int64
		for _, e := range fl.got {
			ids = append(ids, e.ID)
		}
		fl.mu.Unlock()
		var want []int64
		for id := resumes[i] + 1; id <= int64(total); id++ {
			want = append(want, id)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("stream %d (after %d): got ids %v, want %d..%d once each", i, resumes[i], ids, resumes[i]+1, total)
		}
	}
}

func TestSlowStreamIsDroppedOthersGoOn(t *testing.T) {
	store := memstore.New()
	f := start(t, store, eventfeed.Options{Buffer: 4})
	slow := make(chan struct{})
	stuck := follow(t.Context(), f, flagadmin.EventQuery{}, 0, false, func(int) { <-slow })
	fast := follow(t.Context(), f, flagadmin.EventQuery{}, 0, false, nil)
	waitOpen(t, f, 2)
	for i := range 20 {
		write(t, store, "web", i, 1)
		time.Sleep(10 * time.Millisecond)
	}
	fast.waitFor(t, 20)
	close(slow)
	select {
	case <-stuck.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow stream did not end")
	}
	if !errors.Is(stuck.err, flagadmin.ErrStreamEnded) {
		t.Errorf("slow stream: got error %v, want ErrStreamEnded", stuck.err)
	}
	if n := len(stuck.names()); n >= 20 {
		t.Errorf("slow stream got all %d events, want it cut off", n)
	}
	if got := f.Stats().Dropped; got != 1 {
		t.Errorf("dropped: got %d, want 1", got)
	}
	write(t, store, "web", 20, 1)
	fast.waitFor(t, 21)
}

func TestStoppingTheFeedEndsStreams(t *testing.T) {
	store := memstore.New()
	f := eventfeed.New(store, eventfeed.Options{Interval: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() { defer close(runDone); f.Run(ctx) }()
	fl := follow(t.Context(), f, flagadmin.EventQuery{}, 0, false, nil)
	waitOpen(t, f, 1)
	cancel()
	<-runDone
	select {
	case <-fl.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end with the feed")
	}
	if !errors.Is(fl.err, flagadmin.ErrStreamEnded) {
		t.Errorf("got error %v, want ErrStreamEnded", fl.err)
	}
	if err := f.Follow(t.Context(), flagadmin.EventQuery{}, 0, func([]flagadmin.Event) error { return nil }); !errors.Is(err, flagadmin.ErrStreamEnded) {
		t.Errorf("Follow after the feed stopped: got %v, want ErrStreamEnded", err)
	}
}

func TestLongReplayCatchesUpInsteadOfDropping(t *testing.T) {
	store := memstore.New()
	write(t, store, "web", 0, 2000)
	f := start(t, store, eventfeed.Options{Buffer: 4, Interval: time.Millisecond})
	// The stream takes its first 100 events slowly: the events written
	// meanwhile overflow its buffer of 4 while it replays.
	fl := follow(t.Context(), f, flagadmin.EventQuery{}, 0, true, func(n int) {
		if n < 100 {
			time.Sleep(time.Millisecond)
		}
	})
	for i := range 50 {
		write(t, store, "web", 2000+i, 1)
		time.Sleep(time.Millisecond)
	}
	fl.waitFor(t, 2050)
	if got := fl.names(); !slices.Equal(got, names(0, 2050)) {
		t.Errorf("got %d events, want e0..e2049 in order once each", len(got))
	}
	if fl.err != nil {
		t.Errorf("got error %v", fl.err)
	}
}

// flakySource fails every read while down is set, as a database that is
// unreachable for a while.
type flakySource struct {
	*memstore.Store
	down atomic.Bool
}

func (s *flakySource) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	if s.down.Load() {
		return errors.Join(flagadmin.ErrUnavailable, errors.New("connection refused"))
	}
	return s.Store.ExportEvents(ctx, q, afterID, fn)
}

// TestStreamsPauseWhileTheStoreIsDown: the reader's failures pause the
// streams (they do not end), and they resume with no gap.
func TestStreamsPauseWhileTheStoreIsDown(t *testing.T) {
	src := &flakySource{Store: memstore.New()}
	var logs syncbuffer.Buffer
	f := start(t, src, eventfeed.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	fl := follow(t.Context(), f, flagadmin.EventQuery{}, 0, false, nil)
	waitOpen(t, f, 1)
	write(t, src.Store, "web", 0, 2)
	fl.waitFor(t, 2)
	src.down.Store(true)
	write(t, src.Store, "web", 2, 3)
	time.Sleep(100 * time.Millisecond)
	if n := len(fl.names()); n != 2 {
		t.Errorf("while down: got %d events, want the 2 read before", n)
	}
	select {
	case <-fl.done:
		t.Fatalf("the stream ended while the store was down: %v", fl.err)
	default:
	}
	src.down.Store(false)
	fl.waitFor(t, 5)
	if got := fl.names(); !slices.Equal(got, names(0, 5)) {
		t.Errorf("got %v, want %v", got, names(0, 5))
	}
	if n := strings.Count(logs.String(), "cannot read the event log"); n != 1 {
		t.Errorf("logged the failure %d times, want once:\n%s", n, logs.String())
	}
}
