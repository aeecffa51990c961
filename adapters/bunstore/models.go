package bunstore

import (
	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Rows of the base tables (the events' row is stored.Event). Times are
// Unix milliseconds (UTC); JSON is text, NULL for nil (package stored).

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
	return projectRow{ID: p.ID, Name: p.Name, Description: p.Description, Mode: string(p.Mode), CreatedAt: stored.Millis(p.CreatedAt), ArchivedAt: stored.MillisPtr(p.ArchivedAt)}
}

func (r projectRow) project() flagadmin.Project {
	return flagadmin.Project{ID: r.ID, Name: r.Name, Description: r.Description, Mode: flagadmin.ProjectMode(r.Mode), CreatedAt: stored.Time(r.CreatedAt), ArchivedAt: stored.TimePtr(r.ArchivedAt)}
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
	tags, err := stored.TagsText(f.Tags)
	if err != nil {
		return featureRow{}, err
	}
	return featureRow{
		Name: f.Name, Project: f.Project, Type: string(f.Type), Stale: f.Stale,
		CreatedAt: stored.Millis(f.CreatedAt), ArchivedAt: stored.MillisPtr(f.ArchivedAt), LastSeenAt: stored.MillisPtr(f.LastSeenAt),
		Tags:           tags,
		LifecycleStage: f.Lifecycle.Stage, LifecycleStatus: f.Lifecycle.Status, LifecycleStatusValue: f.Lifecycle.StatusValue,
	}, nil
}

func (r featureRow) feature() (flagadmin.Feature, error) {
	tags, err := stored.Tags(r.Tags)
	if err != nil {
		return flagadmin.Feature{}, err
	}
	return flagadmin.Feature{
		Name: r.Name, Project: r.Project, Type: flagadmin.FeatureType(r.Type), Stale: r.Stale,
		CreatedAt: stored.Time(r.CreatedAt), ArchivedAt: stored.TimePtr(r.ArchivedAt), LastSeenAt: stored.TimePtr(r.LastSeenAt),
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
		Project: t.Project, Environment: t.Environment, ExpiresAt: stored.MillisPtr(t.ExpiresAt), CreatedAt: stored.Millis(t.CreatedAt),
	}
}

func (r tokenRow) token() flagadmin.APIToken {
	return flagadmin.APIToken{
		SecretHash: r.SecretHash, Name: r.Name, Type: flagadmin.TokenType(r.Type), UserID: r.UserID,
		Project: r.Project, Environment: r.Environment, ExpiresAt: stored.TimePtr(r.ExpiresAt), CreatedAt: stored.Time(r.CreatedAt),
	}
}
