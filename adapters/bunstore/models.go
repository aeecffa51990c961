package bunstore

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Rows of the schema (migrations.go). Times are Unix milliseconds (UTC);
// JSON is text, NULL for nil.

type userRow struct {
	bun.BaseModel `bun:"table:users"`

	ID        int64  `bun:"id,pk,autoincrement"`
	Name      string `bun:"name"`
	Username  string `bun:"username"`
	Email     string `bun:"email"`
	RootRole  string `bun:"root_role"`
	IsService bool   `bun:"is_service"`
}

func userRowOf(u flagadmin.User) userRow {
	return userRow{ID: u.ID, Name: u.Name, Username: u.Username, Email: u.Email, RootRole: string(u.RootRole), IsService: u.IsService}
}

func (r userRow) user() flagadmin.User {
	return flagadmin.User{ID: r.ID, Name: r.Name, Username: r.Username, Email: r.Email, RootRole: flagadmin.RootRole(r.RootRole), IsService: r.IsService}
}

type groupRow struct {
	bun.BaseModel `bun:"table:user_groups"`

	ID   int64  `bun:"id,pk,autoincrement"`
	Name string `bun:"name"`
}

type groupMemberRow struct {
	bun.BaseModel `bun:"table:group_members"`

	GroupID int64 `bun:"group_id,pk"`
	UserID  int64 `bun:"user_id,pk"`
}

type projectRow struct {
	bun.BaseModel `bun:"table:projects"`

	ID          string `bun:"id,pk"`
	Name        string `bun:"name"`
	Description string `bun:"description"`
	Mode        string `bun:"mode"`
	CreatedAt   int64  `bun:"created_at"`
	ArchivedAt  *int64 `bun:"archived_at"`
}

func projectRowOf(p flagadmin.Project) projectRow {
	return projectRow{ID: p.ID, Name: p.Name, Description: p.Description, Mode: string(p.Mode), CreatedAt: millis(p.CreatedAt), ArchivedAt: millisPtr(p.ArchivedAt)}
}

func (r projectRow) project() flagadmin.Project {
	return flagadmin.Project{ID: r.ID, Name: r.Name, Description: r.Description, Mode: flagadmin.ProjectMode(r.Mode), CreatedAt: timeOf(r.CreatedAt), ArchivedAt: timePtr(r.ArchivedAt)}
}

type projectMemberRow struct {
	bun.BaseModel `bun:"table:project_members"`

	ID        int64  `bun:"id,pk,autoincrement"`
	ProjectID string `bun:"project_id"`
	UserID    *int64 `bun:"user_id"`
	GroupID   *int64 `bun:"group_id"`
	Role      string `bun:"role"`
}

type favoriteRow struct {
	bun.BaseModel `bun:"table:project_favorites"`

	ProjectID string `bun:"project_id,pk"`
	UserID    int64  `bun:"user_id,pk"`
}

type featureRow struct {
	bun.BaseModel `bun:"table:features"`

	Name                 string  `bun:"name,pk"`
	Project              string  `bun:"project"`
	Type                 string  `bun:"type"`
	Stale                bool    `bun:"stale"`
	CreatedAt            int64   `bun:"created_at"`
	ArchivedAt           *int64  `bun:"archived_at"`
	LastSeenAt           *int64  `bun:"last_seen_at"`
	Tags                 *string `bun:"tags"`
	LifecycleStage       string  `bun:"lifecycle_stage"`
	LifecycleStatus      string  `bun:"lifecycle_status"`
	LifecycleStatusValue string  `bun:"lifecycle_status_value"`
}

func featureRowOf(f flagadmin.Feature) (featureRow, error) {
	tags, err := tagsText(f.Tags)
	if err != nil {
		return featureRow{}, err
	}
	return featureRow{
		Name: f.Name, Project: f.Project, Type: string(f.Type), Stale: f.Stale,
		CreatedAt: millis(f.CreatedAt), ArchivedAt: millisPtr(f.ArchivedAt), LastSeenAt: millisPtr(f.LastSeenAt),
		Tags:           tags,
		LifecycleStage: f.Lifecycle.Stage, LifecycleStatus: f.Lifecycle.Status, LifecycleStatusValue: f.Lifecycle.StatusValue,
	}, nil
}

func (r featureRow) feature() (flagadmin.Feature, error) {
	tags, err := tagsOf(r.Tags)
	if err != nil {
		return flagadmin.Feature{}, err
	}
	return flagadmin.Feature{
		Name: r.Name, Project: r.Project, Type: flagadmin.FeatureType(r.Type), Stale: r.Stale,
		CreatedAt: timeOf(r.CreatedAt), ArchivedAt: timePtr(r.ArchivedAt), LastSeenAt: timePtr(r.LastSeenAt),
		Tags:      tags,
		Lifecycle: flagadmin.Lifecycle{Stage: r.LifecycleStage, Status: r.LifecycleStatus, StatusValue: r.LifecycleStatusValue},
	}, nil
}

type tokenRow struct {
	bun.BaseModel `bun:"table:api_tokens"`

	SecretHash  string `bun:"secret_hash,pk"`
	Name        string `bun:"name"`
	Type        string `bun:"type"`
	UserID      *int64 `bun:"user_id"`
	Project     string `bun:"project"`
	Environment string `bun:"environment"`
	ExpiresAt   *int64 `bun:"expires_at"`
	CreatedAt   int64  `bun:"created_at"`
}

func tokenRowOf(t flagadmin.APIToken) tokenRow {
	return tokenRow{
		SecretHash: t.SecretHash, Name: t.Name, Type: string(t.Type), UserID: t.UserID,
		Project: t.Project, Environment: t.Environment, ExpiresAt: millisPtr(t.ExpiresAt), CreatedAt: millis(t.CreatedAt),
	}
}

func (r tokenRow) token() flagadmin.APIToken {
	return flagadmin.APIToken{
		SecretHash: r.SecretHash, Name: r.Name, Type: flagadmin.TokenType(r.Type), UserID: r.UserID,
		Project: r.Project, Environment: r.Environment, ExpiresAt: timePtr(r.ExpiresAt), CreatedAt: timeOf(r.CreatedAt),
	}
}

// eventColumns are the columns an event is read back from (not the search texts).
var eventColumns = []string{"id", "created_at", "type", "created_by", "created_by_user_id", "environment", "project", "feature_name", "data", "pre_data", "tags", "group_type", "group_id"}

type eventRow struct {
	bun.BaseModel `bun:"table:events"`

	ID              int64   `bun:"id,pk,autoincrement"`
	CreatedAt       int64   `bun:"created_at"`
	Type            string  `bun:"type"`
	CreatedBy       string  `bun:"created_by"`
	CreatedByUserID *int64  `bun:"created_by_user_id"`
	Environment     *string `bun:"environment"`
	Project         *string `bun:"project"`
	FeatureName     *string `bun:"feature_name"`
	Data            *string `bun:"data"`
	PreData         *string `bun:"pre_data"`
	Tags            *string `bun:"tags"`
	GroupType       *string `bun:"group_type"`
	GroupID         *string `bun:"group_id"`
	SearchPayload   string  `bun:"search_payload"`
	SearchMeta      string  `bun:"search_meta"`
}

// eventRowOf returns the row of e with its search texts; the id is left to the database.
func eventRowOf(e flagadmin.Event) (eventRow, error) {
	tags, err := tagsText(e.Tags)
	if err != nil {
		return eventRow{}, err
	}
	payload, meta := flagadmin.SearchTexts(e)
	return eventRow{
		CreatedAt: millis(e.CreatedAt), Type: e.Type, CreatedBy: e.CreatedBy, CreatedByUserID: e.CreatedByUserID,
		Environment: e.Environment, Project: e.Project, FeatureName: e.FeatureName,
		Data: rawText(e.Data), PreData: rawText(e.PreData), Tags: tags, GroupType: e.GroupType, GroupID: e.GroupID,
		SearchPayload: payload, SearchMeta: meta,
	}, nil
}

func (r eventRow) event() (flagadmin.Event, error) {
	tags, err := tagsOf(r.Tags)
	if err != nil {
		return flagadmin.Event{}, err
	}
	return flagadmin.Event{
		ID: r.ID, CreatedAt: timeOf(r.CreatedAt), Type: r.Type, CreatedBy: r.CreatedBy, CreatedByUserID: r.CreatedByUserID,
		Environment: r.Environment, Project: r.Project, FeatureName: r.FeatureName,
		Data: rawOf(r.Data), PreData: rawOf(r.PreData), Tags: tags, GroupType: r.GroupType, GroupID: r.GroupID,
	}, nil
}

// millis is t in Unix milliseconds (the domain keeps millisecond precision).
func millis(t time.Time) int64 { return t.UnixMilli() }

// ceilMillis is the smallest number of Unix milliseconds not before t: a
// stored time m is before t exactly when m < ceilMillis(t).
func ceilMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

func millisPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	ms := millis(*t)
	return &ms
}

func timeOf(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func timePtr(ms *int64) *time.Time {
	if ms == nil {
		return nil
	}
	t := timeOf(*ms)
	return &t
}

// rawText stores raw JSON as text; nil or empty is NULL.
func rawText(raw json.RawMessage) *string {
	if len(raw) == 0 {
		return nil
	}
	s := string(raw)
	return &s
}

func rawOf(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// tagsText stores tags as a JSON array; nil tags are NULL, so nil and empty
// come back as they were written.
func tagsText(tags []flagadmin.Tag) (*string, error) {
	if tags == nil {
		return nil, nil
	}
	b, err := json.Marshal(tags)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

func tagsOf(s *string) ([]flagadmin.Tag, error) {
	if s == nil {
		return nil, nil
	}
	if tags, ok := parseCanonicalTags(*s); ok {
		return tags, nil
	}
	tags := []flagadmin.Tag{}
	if err := json.Unmarshal([]byte(*s), &tags); err != nil {
		return nil, err
	}
	return tags, nil
}

// parseCanonicalTags reads tags in the exact form the store writes them,
// [{"value":"...","type":"..."},...] without spaces or escapes, without
// reflection: decoding tags with encoding/json was a fifth of a search
// page's server CPU. Anything else (an escape, a space, another order,
// invalid UTF-8 or a control character) reports false, for
// encoding/json to decode, so the result is always what it would give.
func parseCanonicalTags(s string) ([]flagadmin.Tag, bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	tags := []flagadmin.Tag{}
	rest := s[1 : len(s)-1]
	for rest != "" {
		if len(tags) > 0 {
			if rest[0] != ',' {
				return nil, false
			}
			rest = rest[1:]
		}
		var t flagadmin.Tag
		var ok bool
		if rest, ok = strings.CutPrefix(rest, `{"value":`); !ok {
			return nil, false
		}
		if t.Value, rest, ok = plainJSONString(rest); !ok {
			return nil, false
		}
		if rest, ok = strings.CutPrefix(rest, `,"type":`); !ok {
			return nil, false
		}
		if t.Type, rest, ok = plainJSONString(rest); !ok {
			return nil, false
		}
		if rest, ok = strings.CutPrefix(rest, "}"); !ok {
			return nil, false
		}
		tags = append(tags, t)
	}
	return tags, true
}

// plainJSONString reads a JSON string at the start of s that needs no
// decoding: no backslash, no control character, valid UTF-8. It returns the
// string's value and what follows it.
func plainJSONString(s string) (value, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	v := s[1 : 1+end]
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '\\' {
			return "", "", false
		}
	}
	if !utf8.ValidString(v) {
		return "", "", false
	}
	return v, s[2+end:], true
}
