package flagadmin

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds. Every error the Service returns matches exactly one of these
// with errors.Is; anything else is an internal error. Stores return errors that
// match ErrNotFound, ErrConflict or ErrUnavailable, never raw driver errors.
var (
	// ErrAuthenticationRequired: the Authorization value is missing, unknown,
	// expired, or belongs to a deleted account (HTTP 401).
	ErrAuthenticationRequired = errors.New("authentication required")
	// ErrNoAccess: valid credentials without the permission the operation needs (HTTP 403).
	ErrNoAccess = errors.New("no access")
	// ErrNotFound: the addressed resource does not exist or is not visible to the caller (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrValidation: a parameter or body field is malformed (HTTP 400). Errors of
	// this kind are *ValidationError values that name the offending fields.
	ErrValidation = errors.New("invalid input")
	// ErrConflict: the write collides with existing data, such as a duplicate id.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: storage is unreachable, overloaded or timed out (HTTP 503).
	ErrUnavailable = errors.New("storage unavailable")
)

// FieldError names one offending parameter or field and says what is allowed.
type FieldError struct {
	// Path is the parameter or field, such as "limit" or "projects[2].mode".
	Path string `json:"path,omitempty"`
	// Message says what is wrong and what is allowed.
	Message string `json:"message"`
}

// ValidationError is the error of kind ErrValidation. It lists every
// offending field found.
type ValidationError struct {
	Fields []FieldError
}

// Error joins the field messages as "path: message; path: message".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		if f.Path == "" {
			parts[i] = f.Message
		} else {
			parts[i] = f.Path + ": " + f.Message
		}
	}
	return strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrValidation) true.
func (e *ValidationError) Is(target error) bool { return target == ErrValidation }

// invalid returns a ValidationError for one field.
func invalid(path, format string, args ...any) *ValidationError {
	return &ValidationError{Fields: []FieldError{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// prefixed returns a copy of err with every field path prefixed by prefix.
func prefixed(prefix string, err *ValidationError) *ValidationError {
	out := &ValidationError{Fields: make([]FieldError, len(err.Fields))}
	for i, f := range err.Fields {
		p := prefix
		if f.Path != "" {
			p += "." + f.Path
		}
		out.Fields[i] = FieldError{Path: p, Message: f.Message}
	}
	return out
}

// kindError carries a kind with a human-readable message.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Errorf returns an error of kind (ErrNotFound, ErrConflict, ...) whose
// message, made of format and args, is what the caller is told, as the
// Service's own errors are: for packages built over the Service, such as
// the verifiable log's.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// notFound returns an ErrNotFound error with a message for the caller.
func notFound(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf(format, args...)}
}

// noAccess returns an ErrNoAccess error with a message for the caller.
func noAccess(format string, args ...any) error {
	return &kindError{kind: ErrNoAccess, msg: fmt.Sprintf(format, args...)}
}

// authRequired returns an ErrAuthenticationRequired error with a message for the caller.
func authRequired(msg string) error {
	return &kindError{kind: ErrAuthenticationRequired, msg: msg}
}

// isKind reports whether err is of kind.
func isKind(err, kind error) bool { return err != nil && errors.Is(err, kind) }

// isKindWithMessage reports whether err already carries a caller-facing
// message made by this package.
func isKindWithMessage(err error) bool {
	var k *kindError
	return errors.As(err, &k)
}
