package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// failingStore fails Ping with err.
type failingStore struct {
	flagadmin.VersionedStore
	err error
}

func (s failingStore) Ping(context.Context) error { return s.err }

func TestStoreCountsErrorsByKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind string // "" for not counted
	}{
		{fmt.Errorf("dial: %w", flagadmin.ErrUnavailable), "unavailable"},
		{fmt.Errorf("%w: %w", flagadmin.ErrUnavailable, context.DeadlineExceeded), "timeout"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("duplicate: %w", flagadmin.ErrConflict), "conflict"},
		{errors.New("bad bytes"), "other"},
		{flagadmin.ErrNotFound, ""},
		{&flagadmin.ValidationError{}, ""},
	} {
		m := metrics.New()
		s := m.Store(failingStore{VersionedStore: memstore.New(), err: tc.err})
		if err := s.Ping(context.Background()); !errors.Is(err, tc.err) {
			t.Fatalf("Ping: got %v, want the store's error", err)
		}
		for _, kind := range []string{"unavailable", "timeout", "canceled", "conflict", "other"} {
			want := 0.0
			if kind == tc.kind {
				want = 1
			}
			if got := counterValue(t, m, "flagadmin_storage_errors_total", "kind", kind); got != want {
				t.Errorf("%v: errors of kind %s = %v, want %v", tc.err, kind, got, want)
			}
		}
	}
}

func TestStoreCountsEventsByType(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	svc := flagadmin.NewService(m.Store(memstore.New()))
	if _, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "bot", IsService: true, RootRole: flagadmin.RoleViewer}); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteServiceAccount(ctx, flagadmin.System, "1"); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteServiceAccount(ctx, flagadmin.System, "1"); !errors.Is(err, flagadmin.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	for typ, want := range map[string]float64{"service-account-created": 1, "service-account-deleted": 1} {
		if got := counterValue(t, m, "flagadmin_events_recorded_total", "type", typ); got != want {
			t.Errorf("events of type %s: %v, want %v", typ, got, want)
		}
	}
	if got := counterValue(t, m, "flagadmin_storage_errors_total", "kind", "other"); got != 0 {
		t.Errorf("a 404 counted as a storage error: %v", got)
	}
	// A type that is not a known event type is counted as other.
	s := m.Store(memstore.New())
	if err := s.Write(ctx, &flagadmin.Batch{Events: []flagadmin.Event{{Type: "made-up-by-a-seed", CreatedBy: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, m, "flagadmin_events_recorded_total", "type", "other"); got != 1 {
		t.Errorf("events of an unknown type: %v under other, want 1", got)
	}
}

// counterValue returns the value of the series of name whose label is value (0 if absent).
func counterValue(t *testing.T, m *metrics.Metrics, name, label, value string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.Metric {
			for _, l := range s.Label {
				if l.GetName() == label && l.GetValue() == value {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
