package flagadmin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
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

// Tag is a label on a feature or an event.
// Its JSON is Unleash's: {"value","type"} for a tag without a color key,
// {"type","value","color"} for one with it (MarshalJSON).
type Tag struct {
	// Value is 2 to 50 characters.
	Value string
	// Type is 2 to 50 characters.
	Type string
	// Color is the color of the tag's type, as Unleash writes it on the
	// tags of some events (those of a flag untagged: "#34A853", or null
	// for a type without one). The zero TagColor: the tag has no color
	// key, as Unleash writes a flag's tags on its other events.
	Color TagColor
}

// TagColor is the color key of a tag: absent (the zero value), null, or
// a color such as "#34A853".
type TagColor struct {
	hex   string
	state uint8 // colorAbsent, colorNull or colorSet
}

const (
	colorAbsent uint8 = iota
	colorNull
	colorSet
)

// ColorOf returns the color hex, such as "#34A853".
func ColorOf(hex string) TagColor { return TagColor{hex: hex, state: colorSet} }

// NullColor is a color key holding null: Unleash's color of a tag type
// that has none.
var NullColor = TagColor{state: colorNull}

// Present reports whether the tag has a color key, null or not.
func (c TagColor) Present() bool { return c.state != colorAbsent }

// Hex returns the color, and false when the key is absent or null.
func (c TagColor) Hex() (string, bool) { return c.hex, c.state == colorSet }

// String is the color, "null", or "" when absent.
func (c TagColor) String() string {
	switch c.state {
	case colorSet:
		return c.hex
	case colorNull:
		return "null"
	}
	return ""
}

// String is the tag as fmt shows a struct: {value type}, and the color
// (or null) after them when the tag has a color key.
func (t Tag) String() string {
	if !t.Color.Present() {
		return "{" + t.Value + " " + t.Type + "}"
	}
	return "{" + t.Value + " " + t.Type + " " + t.Color.String() + "}"
}

// flagEventTags returns a flag's tags as Unleash writes them on the
// flag's events (created, completed, ...): type and value, no color key;
// nil for nil.
func flagEventTags(tags []Tag) []Tag {
	if tags == nil {
		return nil
	}
	out := make([]Tag, len(tags))
	for i, t := range tags {
		out[i] = Tag{Value: t.Value, Type: t.Type}
	}
	return out
}

// MarshalJSON writes the tag as Unleash does: {"value":…,"type":…}
// without a color key, else {"type":…,"value":…,"color":…} (the color a
// string or null). Strings are escaped as encoding/json escapes them.
func (t Tag) MarshalJSON() ([]byte, error) {
	return AppendTagJSON(make([]byte, 0, 32+len(t.Value)+len(t.Type)+len(t.Color.hex)), t), nil
}

// AppendTagJSON appends the tag's JSON (Tag.MarshalJSON), strings
// escaped as encoding/json escapes them with HTML escaping off.
func AppendTagJSON(b []byte, t Tag) []byte {
	if !t.Color.Present() {
		b = append(b, `{"value":`...)
		b = AppendJSONString(b, t.Value)
		b = append(b, `,"type":`...)
		b = AppendJSONString(b, t.Type)
		return append(b, '}')
	}
	b = append(b, `{"type":`...)
	b = AppendJSONString(b, t.Type)
	b = append(b, `,"value":`...)
	b = AppendJSONString(b, t.Value)
	b = append(b, `,"color":`...)
	if hex, ok := t.Color.Hex(); ok {
		b = AppendJSONString(b, hex)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// UnmarshalJSON reads a tag: value, type, and color when the key is
// there (a string or null). Another key is an error, as Unleash's tags
// have no other.
func (t *Tag) UnmarshalJSON(data []byte) error {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*t = Tag{}
	for k, raw := range in {
		var err error
		switch k {
		case "value":
			err = json.Unmarshal(raw, &t.Value)
		case "type":
			err = json.Unmarshal(raw, &t.Type)
		case "color":
			var hex *string
			if err = json.Unmarshal(raw, &hex); err == nil {
				t.Color = NullColor
				if hex != nil {
					t.Color = ColorOf(*hex)
				}
			}
		default:
			err = fmt.Errorf("json: unknown field %q", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tagColorPattern is the form of a tag's color: Unleash's, #RRGGBB.
var tagColorPattern = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)

// Validate checks the 2 to 50 character bounds of type and value, and
// that a color, when there is one (not null), is #RRGGBB.
func (t Tag) Validate() *ValidationError {
	v := &ValidationError{}
	for _, f := range []struct{ name, val string }{{"type", t.Type}, {"value", t.Value}} {
		if n := utf8.RuneCountInString(f.val); n < 2 || n > 50 {
			v.Fields = append(v.Fields, FieldError{Path: f.name, Message: "must be 2 to 50 characters"})
		}
	}
	if hex, ok := t.Color.Hex(); ok && !tagColorPattern.MatchString(hex) {
		v.Fields = append(v.Fields, FieldError{Path: "color", Message: "must be a color #RRGGBB or null"})
	}
	if len(v.Fields) == 0 {
		return nil
	}
	return v
}

// Event is one record of the event log, with Unleash's fields. Its
// struct is the declaration of the Event shape: EventFields reads it
// once (each field's JSON name, and its kind from its Go type), and every
// encoding, decoding and copy of an event is written from that table.
// Pointer fields and nil raw JSON are written as null, but for a *string
// tagged omitempty (GroupType, GroupID), whose key is left out when nil.
type Event struct {
	// ID is assigned by the store: unique, increasing in insertion order.
	ID int64 `json:"id" minimum:"1" doc:"The event's id: unique, increasing in insertion order."`
	// CreatedAt is when the event happened, UTC with millisecond precision.
	CreatedAt time.Time `json:"createdAt" doc:"When the event happened: RFC 3339 in UTC with milliseconds." example:"2025-01-02T03:04:05.000Z"`
	// Type is the event's type: a known one (IsKnownEventType) for events
	// the Service records; imported and followed events keep Unleash's.
	Type string `json:"type" doc:"The event type, such as feature-created. Events imported from or following Unleash keep Unleash's type, whatever its name." example:"feature-created"`
	// CreatedBy names the actor: a user's email, username or name, or a token's name.
	CreatedBy string `json:"createdBy" doc:"Who caused the event: a user's email, else username, else name; a token's name." example:"ada@example.com"`
	// CreatedByUserID is the actor's user id; -42 for admin tokens, -1337 for the system.
	CreatedByUserID *int64 `json:"createdByUserId" doc:"The id of the user who caused the event; -42 for admin tokens, -1337 for the system."`
	// Environment the event relates to, if any.
	Environment *string `json:"environment" doc:"The environment the event relates to, if any."`
	// Project the event relates to, if any.
	Project *string `json:"project" doc:"The project the event relates to, if any."`
	// FeatureName of the feature flag the event relates to, if any.
	FeatureName *string `json:"featureName" doc:"The feature flag the event relates to, if any."`
	// Data is a JSON object describing the event, or nil.
	Data json.RawMessage `json:"data" doc:"Extra data about the event, such as the flag's new state."`
	// PreData is a JSON object describing the previous state, or nil.
	PreData json.RawMessage `json:"preData" doc:"Data describing the previous state of the subject."`
	// Tags related to the event; written as [] when there are none.
	Tags []Tag `json:"tags" doc:"Tags related to the event; [] when there are none."`
	// GroupType says what GroupID groups, such as "transaction" (Unleash
	// groups the events of one bulk change); nil, and left out of the
	// JSON, when the event belongs to no group, as Unleash leaves it out.
	GroupType *string `json:"groupType,omitempty" doc:"What groupId groups, such as transaction (the events of one bulk change in Unleash); left out when the event belongs to no group." example:"transaction"`
	// GroupID groups related events (filter "groupId"), such as the ULID of
	// the Unleash transaction that wrote them; nil and left out like GroupType.
	GroupID *string `json:"groupId,omitempty" doc:"An id shared by related events, such as the ULID of the Unleash transaction that wrote them (filter groupId); left out when the event belongs to no group." example:"01M8564MBTV5HMX3GH6SHGBVKG"`
	// Salt is the random salt of the event's leaf in the verifiable log
	// (adapters/tlog/leaf), never shown with the event: a store draws it
	// (NewSalt) when it writes an event without one, and reads it back
	// only for the log.
	Salt []byte `json:"-"`
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

// ProjectAccess is what decides which projects a user may see and change.
type ProjectAccess struct {
	// Roles holds every project in which the user holds a role, directly
	// or through a group, with the strongest role (AddRole).
	Roles map[string]ProjectRole
	// Private holds the ids of all projects whose mode is private, sorted.
	Private []string
}

// AddRole records that the user holds role in project: a project's
// strongest role counts, Owner over Member.
func (a *ProjectAccess) AddRole(project string, role ProjectRole) {
	if a.Roles == nil {
		a.Roles = map[string]ProjectRole{}
	}
	if role == ProjectRoleOwner || a.Roles[project] == "" {
		a.Roles[project] = role
	}
}

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
