package bunstore_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/faultsql"
)

// TestAtomicity fails each write right before its commit, at the commit of
// the transaction that inserted its events, and checks that neither its
// state change nor its events are stored: they commit in one transaction.
func TestAtomicity(t *testing.T) {
	injected := errors.New("injected failure")
	cases := []struct {
		name string
		run  func(ctx context.Context, f fixture) error
		// unchanged checks the state the failed operation would have changed.
		unchanged func(t *testing.T, f fixture)
		// events is how many events the operation records (0 for 1).
		events int
	}{
		{"UpdateFeature",
			func(ctx context.Context, f fixture) error {
				return f.svc.CompleteLifecycle(ctx, flagadmin.System, "web", "checkout", flagadmin.CompleteRequest{Status: flagadmin.StatusKept})
			},
			func(t *testing.T, f fixture) {
				ft, err := f.store.Feature(context.Background(), "checkout")
				must(t, "Feature", err)
				if got, want := ft.Lifecycle, (flagadmin.Lifecycle{Stage: flagadmin.StageInitial}); got != want {
					t.Errorf("lifecycle: got %+v, want %+v", got, want)
				}
			}, 0},
		{"DeleteUser",
			func(ctx context.Context, f fixture) error {
				return f.svc.DeleteServiceAccount(ctx, flagadmin.System, strconv.FormatInt(f.account.ID, 10))
			},
			func(t *testing.T, f fixture) {
				ctx := context.Background()
				if _, err := f.store.User(ctx, f.account.ID); err != nil {
					t.Errorf("User(%d): got %v, want the account", f.account.ID, err)
				}
				_, owner, err := f.store.LookupToken(ctx, flagadmin.HashSecret(f.secret))
				if err != nil || owner == nil || owner.ID != f.account.ID {
					t.Errorf("LookupToken: got owner %v, error %v; want the account's token", owner, err)
				}
			}, 0},
		{"DeleteToken",
			func(ctx context.Context, f fixture) error {
				_, err := f.svc.RevokeAPIToken(ctx, flagadmin.System, f.secret)
				return err
			},
			func(t *testing.T, f fixture) {
				if _, _, err := f.store.LookupToken(context.Background(), flagadmin.HashSecret(f.secret)); err != nil {
					t.Errorf("LookupToken: got %v, want the token", err)
				}
			}, 0},
		{"Write",
			func(ctx context.Context, f fixture) error {
				_, err := f.svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "Nina"})
				return err
			},
			func(t *testing.T, f fixture) {
				if _, err := f.store.User(context.Background(), f.account.ID+1); !errors.Is(err, flagadmin.ErrNotFound) {
					t.Errorf("User(%d): got %v, want ErrNotFound", f.account.ID+1, err)
				}
			}, 0},
		{"WriteWithToken",
			func(ctx context.Context, f fixture) error {
				_, _, _, err := f.svc.CreateUserWithToken(ctx, flagadmin.System, flagadmin.User{Name: "Bot", IsService: true}, flagadmin.NewAPIToken{Name: "bot"})
				return err
			},
			func(t *testing.T, f fixture) {
				ctx := context.Background()
				if _, err := f.store.User(ctx, f.account.ID+1); !errors.Is(err, flagadmin.ErrNotFound) {
					t.Errorf("User(%d): got %v, want ErrNotFound", f.account.ID+1, err)
				}
				if n, err := f.store.CountTokens(ctx, flagadmin.TokenUser); err != nil || n != 1 {
					t.Errorf("user tokens: got %d (%v), want the fixture's 1", n, err)
				}
			}, 2},
	}
	for _, e := range engines {
		for _, c := range cases {
			t.Run(e.name+"/"+c.name, func(t *testing.T) {
				s, faults := openWithFaults(t, e.url(t))
				f := newFixture(t, s)
				before := events(t, s)
				var commits atomic.Int32
				remove := faults.Add(faultsql.Rule{Match: eventWrites, AtCommit: true, Before: func(context.Context, string) error {
					commits.Add(1)
					return injected
				}})
				err := c.run(context.Background(), f)
				if !errors.Is(err, injected) {
					t.Fatalf("got error %v, want the injected failure", err)
				}
				if got := commits.Load(); got != 1 {
					t.Errorf("failed %d commits, want the write's one", got)
				}
				remove()
				c.unchanged(t, f)
				if after := events(t, s); !reflect.DeepEqual(after, before) {
					t.Errorf("events changed: got %d events, want the %d from before", len(after), len(before))
				}
				// Without the failure the same operation goes through.
				if err := c.run(context.Background(), f); err != nil {
					t.Fatalf("without the failure: %v", err)
				}
				if got, want := len(events(t, s)), len(before)+max(c.events, 1); got != want {
					t.Errorf("got %d events, want %d", got, want)
				}
			})
		}
	}
}
