package flagadmin

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// TimeLayout is how every timestamp is written on the wire: RFC 3339 in UTC
// with milliseconds, such as 2025-01-02T03:04:05.000Z.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Truncate brings t to the precision every store keeps: UTC, whole milliseconds.
// The Service applies it to every time it writes, so all stores return the
// same instants.
func Truncate(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func truncatePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := Truncate(*t)
	return &v
}

// Tag is a label on a feature or an event (admin-api.md section 2.1).
type Tag struct {
	// Value is 2 to 50 characters.
	Value string `json:"value"`
	// Type is 2 to 50 characters.
	Type string `json:"type"`
}

// Validate checks the 2 to 50 character bounds of both fields.
func (t Tag) Validate() *ValidationError {
	v := &ValidationError{}
	for _, f := range []struct{ name, val string }{{"type", t.Type}, {"value", t.Value}} {
		if n := utf8.RuneCountInString(f.val); n < 2 || n > 50 {
			v.Fields = append(v.Fields, FieldError{Path: f.name, Message: "must be 2 to 50 characters"})
		}
	}
	if len(v.Fields) == 0 {
		return nil
	}
	return v
}

// Event is one record of the event log (admin-api.md section 2.1). Pointer
// fields and nil raw JSON are written as null. EventFields declares its
// fields as every encoding names them; a field added here is declared there.
type Event struct {
	// ID is assigned by the store: unique, increasing in insertion order.
	ID int64 `json:"id"`
	// CreatedAt is when the event happened, UTC with millisecond precision.
	CreatedAt time.Time `json:"createdAt"`
	// Type is one of the event types of the contract (IsKnownEventType).
	Type string `json:"type"`
	// CreatedBy names the actor: a user's email, username or name, or a token's name.
	CreatedBy string `json:"createdBy"`
	// CreatedByUserID is the actor's user id; -42 for admin tokens, -1337 for the system.
	CreatedByUserID *int64 `json:"createdByUserId"`
	// Environment the event relates to, if any.
	Environment *string `json:"environment"`
	// Project the event relates to, if any.
	Project *string `json:"project"`
	// FeatureName of the feature flag the event relates to, if any.
	FeatureName *string `json:"featureName"`
	// Data is a JSON object describing the event, or nil.
	Data json.RawMessage `json:"data"`
	// PreData is a JSON object describing the previous state, or nil.
	PreData json.RawMessage `json:"preData"`
	// Tags related to the event; written as [] when there are none.
	Tags []Tag `json:"tags"`
	// GroupType says what GroupID groups, such as "transaction" (Unleash
	// groups the events of one bulk change); null when absent.
	GroupType *string `json:"groupType"`
	// GroupID groups related events (filter "groupId"), such as the ULID of
	// the Unleash transaction that wrote them; null when absent.
	GroupID *string `json:"groupId"`
}

// marshalJSON is json.Marshal without HTML escaping (an encoder that
// escapes, such as json.Marshal of a value holding this one, escapes it
// again when it copies the bytes).
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// formatTime formats t in TimeLayout, in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// formatTimePtr formats t in TimeLayout, in UTC; nil stays nil.
func formatTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := formatTime(*t)
	return &s
}

// RootRole is a user's instance-wide role.
type RootRole string

// Root roles.
const (
	RoleAdmin  RootRole = "Admin"
	RoleEditor RootRole = "Editor"
	RoleViewer RootRole = "Viewer"
)

func (r RootRole) valid() bool { return r == RoleAdmin || r == RoleEditor || r == RoleViewer }

// ProjectRole is a user's or group's role in one project.
type ProjectRole string

// Project roles.
const (
	ProjectRoleOwner  ProjectRole = "Owner"
	ProjectRoleMember ProjectRole = "Member"
)

func (r ProjectRole) valid() bool { return r == ProjectRoleOwner || r == ProjectRoleMember }

// User is a person's account or a service account; both share one id space.
type User struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name,omitempty"`
	Username  string   `json:"username,omitempty"`
	Email     string   `json:"email,omitempty"`
	RootRole  RootRole `json:"rootRole"`
	IsService bool     `json:"isService"`
}

// DisplayName is what events record as createdBy for this user: the email,
// else the username, else the name.
func (u User) DisplayName() string {
	switch {
	case u.Email != "":
		return u.Email
	case u.Username != "":
		return u.Username
	default:
		return u.Name
	}
}

// Group is a named set of users that can hold project roles.
type Group struct {
	ID    int64   `json:"id"`
	Name  string  `json:"name"`
	Users []int64 `json:"users"`
}

// ProjectMode controls who can see and change a project.
type ProjectMode string

// Project modes.
const (
	// ModeOpen: every root Editor may change features.
	ModeOpen ProjectMode = "open"
	// ModeProtected: only project members and admins may change features.
	ModeProtected ProjectMode = "protected"
	// ModePrivate: like protected, and invisible to non-members who are not root admins.
	ModePrivate ProjectMode = "private"
)

func (m ProjectMode) valid() bool { return m == ModeOpen || m == ModeProtected || m == ModePrivate }

// ProjectMembership grants a project role to exactly one of a user or a group.
type ProjectMembership struct {
	UserID  *int64      `json:"userId,omitempty"`
	GroupID *int64      `json:"groupId,omitempty"`
	Role    ProjectRole `json:"role"`
}

// Project is a group of features.
type Project struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Mode        ProjectMode `json:"mode"`
	CreatedAt   time.Time   `json:"createdAt"`
	ArchivedAt  *time.Time  `json:"archivedAt"`
	// Members lists the project's role holders.
	Members []ProjectMembership `json:"members,omitempty"`
	// FavoritedBy lists the ids of users who marked the project as favorite.
	FavoritedBy []int64 `json:"favoritedBy,omitempty"`
}

// FeatureType decides how long a feature may live before it is potentially stale.
type FeatureType string

// Feature types.
const (
	TypeRelease     FeatureType = "release"
	TypeExperiment  FeatureType = "experiment"
	TypeOperational FeatureType = "operational"
	TypeKillSwitch  FeatureType = "kill-switch"
	TypePermission  FeatureType = "permission"
)

// Lifetime is how long a feature of this type lives before it is potentially
// stale; 0 means never.
func (t FeatureType) Lifetime() time.Duration {
	switch t {
	case TypeRelease, TypeExperiment:
		return 40 * 24 * time.Hour
	case TypeOperational:
		return 7 * 24 * time.Hour
	default:
		return 0
	}
}

// FeatureTypes lists every feature type.
func FeatureTypes() []FeatureType {
	return []FeatureType{TypeRelease, TypeExperiment, TypeOperational, TypeKillSwitch, TypePermission}
}

func (t FeatureType) valid() bool {
	switch t {
	case TypeRelease, TypeExperiment, TypeOperational, TypeKillSwitch, TypePermission:
		return true
	}
	return false
}

// Lifecycle stages.
const (
	StageInitial   = "initial"
	StagePreLive   = "pre-live"
	StageLive      = "live"
	StageCompleted = "completed"
	StageArchived  = "archived"
)

// Lifecycle outcomes of a completed feature.
const (
	StatusKept      = "kept"
	StatusDiscarded = "discarded"
)

func validStage(s string) bool {
	switch s {
	case StageInitial, StagePreLive, StageLive, StageCompleted, StageArchived:
		return true
	}
	return false
}

// Lifecycle is a feature's lifecycle stage; Status and StatusValue are set
// when the stage is completed.
type Lifecycle struct {
	Stage       string `json:"stage"`
	Status      string `json:"status,omitempty"`
	StatusValue string `json:"statusValue,omitempty"`
}

// Feature is a feature flag. Names are unique across projects.
type Feature struct {
	Name       string      `json:"name"`
	Project    string      `json:"project"`
	Type       FeatureType `json:"type"`
	Stale      bool        `json:"stale"`
	CreatedAt  time.Time   `json:"createdAt"`
	ArchivedAt *time.Time  `json:"archivedAt"`
	LastSeenAt *time.Time  `json:"lastSeenAt"`
	Tags       []Tag       `json:"tags"`
	Lifecycle  Lifecycle   `json:"lifecycle"`
}

// TokenType is the kind of an API token.
type TokenType string

// Token types.
const (
	// TokenAdmin: "*:*.<secret>", acts as a root admin.
	TokenAdmin TokenType = "admin"
	// TokenClient: "<project>:<env>.<secret>", valid but not for the admin API.
	TokenClient TokenType = "client"
	// TokenFrontend: "<project>:<env>.<secret>", valid but not for the admin API.
	TokenFrontend TokenType = "frontend"
	// TokenUser: "user:<secret>", a personal access or service account token acting as its user.
	TokenUser TokenType = "user"
)

// APIToken is a stored credential. The store keeps only SecretHash.
type APIToken struct {
	// SecretHash is HashSecret of the full Authorization value.
	SecretHash string
	Name       string
	Type       TokenType
	// UserID is the owning account of a TokenUser token.
	UserID *int64
	// Project and Environment scope client and frontend tokens ("*" for all).
	Project     string
	Environment string
	ExpiresAt   *time.Time
	CreatedAt   time.Time
}
