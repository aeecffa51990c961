package flagadmin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Identifier rules for project ids and feature names: URL-friendly, 1 to 100 characters.
var urlFriendly = regexp.MustCompile(`^[A-Za-z0-9_.~-]{1,100}$`)

// fieldErrors accumulates FieldErrors.
type fieldErrors struct{ fields []FieldError }

func (f *fieldErrors) add(path, format string, args ...any) {
	f.fields = append(f.fields, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (f *fieldErrors) merge(prefix string, v *ValidationError) {
	if v != nil {
		f.fields = append(f.fields, prefixed(prefix, v).Fields...)
	}
}

func (f *fieldErrors) err() *ValidationError {
	if len(f.fields) == 0 {
		return nil
	}
	return &ValidationError{Fields: f.fields}
}

// normalizeUser fills defaults and checks a user or service account.
func normalizeUser(u *User) *ValidationError {
	var f fieldErrors
	if u.ID < 0 {
		f.add("id", "must be a positive integer")
	}
	if u.RootRole == "" {
		u.RootRole = RoleViewer
	}
	if !u.RootRole.valid() {
		f.add("rootRole", "must be one of Admin, Editor, Viewer, got %s", QuoteInput(string(u.RootRole)))
	}
	if u.Name == "" && u.Username == "" && u.Email == "" {
		f.add("name", "a name, username or email is required")
	}
	return f.err()
}

// normalizeGroup checks a group.
func normalizeGroup(g *Group) *ValidationError {
	var f fieldErrors
	if g.ID < 0 {
		f.add("id", "must be a positive integer")
	}
	if g.Name == "" {
		f.add("name", "is required")
	}
	return f.err()
}

// normalizeProject fills defaults (name = id, mode open, createdAt now) and checks a project.
func normalizeProject(p *Project, now time.Time) *ValidationError {
	var f fieldErrors
	if !urlFriendly.MatchString(p.ID) {
		f.add("id", "must be 1 to 100 letters, digits, or _ . ~ -, got %s", QuoteInput(p.ID))
	}
	if p.Name == "" {
		p.Name = p.ID
	}
	if p.Mode == "" {
		p.Mode = ModeOpen
	}
	if !p.Mode.valid() {
		f.add("mode", "must be one of open, protected, private, got %s", QuoteInput(string(p.Mode)))
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	p.CreatedAt = Truncate(p.CreatedAt)
	p.ArchivedAt = truncatePtr(p.ArchivedAt)
	for i, m := range p.Members {
		f.merge(fmt.Sprintf("members[%d]", i), validateMembership(m))
	}
	return f.err()
}

func validateMembership(m ProjectMembership) *ValidationError {
	var f fieldErrors
	if (m.UserID == nil) == (m.GroupID == nil) {
		f.add("userId", "exactly one of userId and groupId is required")
	}
	if !m.Role.valid() {
		f.add("role", "must be Owner or Member, got %s", QuoteInput(string(m.Role)))
	}
	return f.err()
}

// normalizeFeature fills defaults (type release, createdAt now, stage
// initial) and checks a feature.
func normalizeFeature(ft *Feature, now time.Time) *ValidationError {
	var f fieldErrors
	if !urlFriendly.MatchString(ft.Name) {
		f.add("name", "must be 1 to 100 letters, digits, or _ . ~ -, got %s", QuoteInput(ft.Name))
	}
	if ft.Project == "" {
		f.add("project", "is required")
	}
	if ft.Type == "" {
		ft.Type = TypeRelease
	}
	if !ft.Type.valid() {
		f.add("type", "must be one of release, experiment, operational, kill-switch, permission, got %s", QuoteInput(string(ft.Type)))
	}
	if ft.CreatedAt.IsZero() {
		ft.CreatedAt = now
	}
	ft.CreatedAt = Truncate(ft.CreatedAt)
	ft.ArchivedAt = truncatePtr(ft.ArchivedAt)
	ft.LastSeenAt = truncatePtr(ft.LastSeenAt)
	for i, t := range ft.Tags {
		f.merge(fmt.Sprintf("tags[%d]", i), t.Validate())
	}
	lc := &ft.Lifecycle
	if lc.Stage == "" {
		lc.Stage = StageInitial
	}
	if !validStage(lc.Stage) {
		f.add("lifecycle.stage", "must be one of initial, pre-live, live, completed, archived, got %s", QuoteInput(lc.Stage))
	}
	switch {
	case lc.Stage == StageCompleted && lc.Status != StatusKept && lc.Status != StatusDiscarded:
		f.add("lifecycle.status", "must be kept or discarded for a completed feature")
	case lc.Stage != StageCompleted && (lc.Status != "" || lc.StatusValue != ""):
		f.add("lifecycle.status", "is only allowed when the stage is completed")
	}
	return f.err()
}

// normalizeEvent fills createdAt (now) and checks an event to append.
func normalizeEvent(e *Event, now time.Time) *ValidationError {
	var f fieldErrors
	if e.ID != 0 {
		f.add("id", "is assigned by the store and must not be given")
	}
	if !IsKnownEventType(e.Type) {
		f.add("type", "unknown event type %s", QuoteInput(e.Type))
	}
	if e.CreatedBy == "" {
		f.add("createdBy", "is required")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	e.CreatedAt = Truncate(e.CreatedAt)
	for _, d := range eventFields { // data, preData
		if d.Kind != FieldJSONOrNull {
			continue
		}
		raw := bytes.TrimSpace(*d.JSON(e))
		if len(raw) == 0 || string(raw) == "null" {
			*d.JSON(e) = nil
			continue
		}
		if raw[0] != '{' || !json.Valid(raw) {
			f.add(d.Name, "must be a JSON object or null")
			continue
		}
		*d.JSON(e) = compactJSON(raw)
	}
	for i, t := range e.Tags {
		f.merge(fmt.Sprintf("tags[%d]", i), t.Validate())
	}
	if v := f.err(); v != nil {
		return v
	}
	// Into the log's normal form: a number beyond the range of a double
	// is refused, naming the field (the writer can give it as a string).
	_, v := normalizeEventForm(e, RefuseOutOfRange)
	return v
}

// normalizeToken checks a token given with its secret (seed files).
func normalizeToken(t *APIToken, secret string, now time.Time) *ValidationError {
	var f fieldErrors
	shape, ok := TokenShape(secret)
	if !ok {
		f.add("secret", "must look like *:*.<secret>, user:<secret> or <project>:<environment>.<secret>")
	}
	if t.Type == "" && t.UserID != nil {
		t.Type = TokenUser
	}
	switch t.Type {
	case TokenAdmin, TokenUser:
		if ok && shape != t.Type {
			f.add("secret", "a %s token's secret must start with %s", t.Type, map[TokenType]string{TokenAdmin: "*:*.", TokenUser: "user:"}[t.Type])
		}
	case TokenClient, TokenFrontend:
		if ok && shape != TokenClient {
			f.add("secret", "a %s token's secret must look like <project>:<environment>.<secret>", t.Type)
		}
		if ok {
			scope, _, _ := strings.Cut(secret, ".")
			t.Project, t.Environment, _ = strings.Cut(scope, ":")
		}
	default:
		f.add("type", "must be admin, client or frontend, or omitted with userId, got %s", QuoteInput(string(t.Type)))
	}
	if (t.Type == TokenUser) != (t.UserID != nil) {
		f.add("userId", "is required for personal tokens and allowed only for them")
	}
	if t.Name == "" {
		t.Name = string(t.Type)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	t.CreatedAt = Truncate(t.CreatedAt)
	t.ExpiresAt = truncatePtr(t.ExpiresAt)
	t.SecretHash = HashSecret(secret)
	return f.err()
}
