package vlog

import (
	"errors"
	"fmt"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// kindError is an error of one of the domain's kinds (flagadmin.ErrNotFound,
// ...) with a message for the caller.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// notFound returns a flagadmin.ErrNotFound error with a message for the
// caller.
func notFound(format string, args ...any) error {
	return &kindError{kind: flagadmin.ErrNotFound, msg: fmt.Sprintf(format, args...)}
}

// invalid returns a flagadmin.ValidationError for one parameter.
func invalid(path, format string, args ...any) *flagadmin.ValidationError {
	return &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// isKind reports whether err is of kind.
func isKind(err, kind error) bool { return err != nil && errors.Is(err, kind) }
