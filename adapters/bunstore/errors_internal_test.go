package bunstore

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/flagadmin"
)

func TestFailKeepsDriverTextOutOfTheMessage(t *testing.T) {
	s := &Store{log: discardLogger()}
	driverErr := &pgconn.PgError{Code: "23505", Message: `duplicate key value violates unique constraint "users_pkey"`}
	err := s.fail("write", fmt.Errorf("INSERT INTO users ...: %w", driverErr))
	if got, want := err.Error(), "bunstore: write: conflict"; got != want {
		t.Errorf("message: got %q, want %q", got, want)
	}
	if !errors.Is(err, flagadmin.ErrConflict) {
		t.Errorf("errors.Is(err, ErrConflict) = false, want true")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Errorf("the driver error is not reachable for logs with errors.As")
	}
	if got, want := s.fail("search events", errors.New("syntax error at or near SELECT")).Error(), "bunstore: search events: storage failure"; got != want {
		t.Errorf("unexpected failure: got %q, want %q", got, want)
	}
	caller := errors.New("the caller's own error")
	if got := s.fail("update feature", &callbackError{caller}); got != caller {
		t.Errorf("callback error: got %v, want it returned as it is", got)
	}
}

// TestFailLogsNothing checks that a failure is left for the caller to log
// once (with its request id): the store logs nothing, and the driver's
// text is in the error's LogValue.
func TestFailLogsNothing(t *testing.T) {
	var logs strings.Builder
	s := &Store{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, cause := range []error{
		&pgconn.PgError{Code: "57014", Message: "canceling statement due to statement timeout"},
		&pgconn.PgError{Code: "23505", Message: "duplicate key value"},
		errors.New("syntax error at or near SELECT"),
	} {
		err := s.fail("search events", cause)
		var lv slog.LogValuer
		if !errors.As(err, &lv) || !strings.Contains(lv.LogValue().String(), cause.Error()) {
			t.Errorf("%v: the error's LogValue does not show the driver's text", cause)
		}
	}
	if logs.Len() != 0 {
		t.Errorf("fail logged:\n%s", logs.String())
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
