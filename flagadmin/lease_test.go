package flagadmin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestLease(t *testing.T) {
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	until := t0.Add(20 * time.Second)
	held := flagadmin.Lease{Holder: "a", Until: until}
	tests := []struct {
		name   string
		lease  flagadmin.Lease
		holder string
		now    time.Time
		// want: FreeFor (and Acquire's answer), HeldBy
		free, heldBy bool
	}{
		{"never held: free for anyone", flagadmin.Lease{}, "a", t0, true, false},
		{"released: free for anyone", flagadmin.Lease{}, "b", until, true, false},
		{"its holder renews it", held, "a", t0, true, true},
		{"another holder waits while it lasts", held, "b", t0, false, false},
		{"another holder waits until its last instant", held, "b", until.Add(-time.Nanosecond), false, false},
		{"it ends at until: another takes it then", held, "b", until, true, false},
		{"its holder no longer holds it at until", held, "a", until, true, false},
		{"its holder renews it after it ended", held, "a", until.Add(time.Hour), true, false},
		{"an empty holder is not a holder", held, "", t0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.lease.FreeFor(tt.holder, tt.now); got != tt.free {
				t.Errorf("FreeFor(%q, now) = %v, want %v", tt.holder, got, tt.free)
			}
			if got := tt.lease.HeldBy(tt.holder, tt.now); got != tt.heldBy {
				t.Errorf("HeldBy(%q, now) = %v, want %v", tt.holder, got, tt.heldBy)
			}
			l := tt.lease
			newUntil := tt.now.Add(20 * time.Second)
			if got := l.Acquire(tt.holder, tt.now, newUntil); got != tt.free {
				t.Errorf("Acquire(%q) = %v, want %v", tt.holder, got, tt.free)
			}
			want := tt.lease
			if tt.free {
				want = flagadmin.Lease{Holder: tt.holder, Until: newUntil}
			}
			if l != want {
				t.Errorf("after Acquire: got %+v, want %+v", l, want)
			}
		})
	}
}

func TestLeaseRelease(t *testing.T) {
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	l := flagadmin.Lease{Holder: "a", Until: t0.Add(20 * time.Second)}
	l.Release("b")
	if l.Holder != "a" || !l.Held(t0) {
		t.Fatalf("after a release by a non-holder: got %+v, want a's lease unchanged", l)
	}
	l.Release("a")
	if l != (flagadmin.Lease{}) || l.Held(t0) {
		t.Fatalf("after the holder's release: got %+v, want the zero Lease", l)
	}
	if !l.FreeFor("b", t0) {
		t.Fatal("a released lease is not free for another holder at once")
	}
}

// A lease changes hands only once it has ended unrenewed (or was
// released); its holder renews it before that.
func ExampleLease() {
	t0 := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	ttl := 20 * time.Second
	var l flagadmin.Lease
	fmt.Println(l.Acquire("server-a", t0, t0.Add(ttl)))                                  // taken
	fmt.Println(l.Acquire("server-b", t0.Add(5*time.Second), t0.Add(5*time.Second+ttl))) // a holds it
	fmt.Println(l.Acquire("server-a", t0.Add(5*time.Second), t0.Add(5*time.Second+ttl))) // renewed
	fmt.Println(l.Acquire("server-b", t0.Add(25*time.Second), t0.Add(25*time.Second+ttl)))
	fmt.Println(l.Holder, l.HeldBy("server-a", t0.Add(25*time.Second)))
	// Output:
	// true
	// false
	// true
	// true
	// server-b false
}
