package vlog

import (
	"fmt"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// notFound returns a flagadmin.ErrNotFound error with a message for the
// caller.
func notFound(format string, args ...any) error {
	return flagadmin.Errorf(flagadmin.ErrNotFound, format, args...)
}

// invalid returns a flagadmin.ValidationError for one parameter.
func invalid(path, format string, args ...any) *flagadmin.ValidationError {
	return &flagadmin.ValidationError{Fields: []flagadmin.FieldError{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}
