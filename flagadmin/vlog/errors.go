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

// joinFields returns one ValidationError naming the fields of every error
// given (nil ones skipped); it names none when none is given.
func joinFields(errs ...*flagadmin.ValidationError) *flagadmin.ValidationError {
	v := &flagadmin.ValidationError{}
	for _, e := range errs {
		if e != nil {
			v.Fields = append(v.Fields, e.Fields...)
		}
	}
	return v
}
