package flagadmin

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ProjectListVersion is the version field of the project list response.
const ProjectListVersion = 1

// Owner types of ProjectOwner.
const (
	OwnerUser   = "user"
	OwnerGroup  = "group"
	OwnerSystem = "system"
)

// ProjectOwner is one element of a project's owners: a user or group holding
// the Owner role, or the system when there is none.
type ProjectOwner struct {
	// OwnerType is user, group or system.
	OwnerType string `json:"ownerType"`
	// ID is the user's or group's id (not written to JSON).
	ID int64 `json:"-"`
	// Name is the user's name (else username, else email) or the group's name.
	Name string `json:"name,omitempty"`
	// Email is a user owner's email, null when it has none.
	Email *string `json:"email,omitempty"`
	// ImageURL is a user owner's avatar, null when it has no email.
	ImageURL *string `json:"imageUrl,omitempty"`
}

// UserOwner returns the owner entry of user u.
func UserOwner(u User) ProjectOwner {
	o := ProjectOwner{OwnerType: OwnerUser, ID: u.ID, Name: cmp.Or(u.Name, u.Username, u.Email)}
	var email, image *string
	if u.Email != "" {
		e := u.Email
		sum := md5.Sum([]byte(strings.ToLower(strings.TrimSpace(e))))
		img := "https://gravatar.com/avatar/" + hex.EncodeToString(sum[:]) + "?s=42&d=retro&r=g"
		email, image = &e, &img
	}
	o.Email, o.ImageURL = email, image
	return o
}

// GroupOwner returns the owner entry of group g.
func GroupOwner(g Group) ProjectOwner {
	return ProjectOwner{OwnerType: OwnerGroup, ID: g.ID, Name: g.Name}
}

// MarshalJSON writes user owners with email and imageUrl (null when absent)
// and group and system owners without them; see AppendJSON.
func (o ProjectOwner) MarshalJSON() ([]byte, error) {
	return o.AppendJSON(nil), nil
}

// AppendJSON appends the owner's JSON (the bytes MarshalJSON returns) to b:
// {"ownerType":"user","name":...,"email":...,"imageUrl":...} for a user,
// {"ownerType":"group","name":...} for a group, {"ownerType":"system"}
// for any other owner type.
func (o ProjectOwner) AppendJSON(b []byte) []byte {
	switch o.OwnerType {
	case OwnerUser:
		b = append(b, `{"ownerType":"user","name":`...)
		b = appendJSONString(b, o.Name)
		b = append(b, `,"email":`...)
		b = appendJSONStringPtr(b, o.Email)
		b = append(b, `,"imageUrl":`...)
		b = appendJSONStringPtr(b, o.ImageURL)
		return append(b, '}')
	case OwnerGroup:
		b = append(b, `{"ownerType":"group","name":`...)
		b = appendJSONString(b, o.Name)
		return append(b, '}')
	default:
		return append(b, `{"ownerType":"system"}`...)
	}
}

// ProjectListEntry is one element of the project list (admin-api.md section
// 2.2, decisions section 6).
type ProjectListEntry struct {
	ID                    string         `json:"id"`
	Name                  string         `json:"name"`
	Description           string         `json:"description"`
	Health                int            `json:"health"`
	TechnicalDebt         int            `json:"technicalDebt"`
	FeatureCount          int            `json:"featureCount"`
	MemberCount           int            `json:"memberCount"`
	CreatedAt             time.Time      `json:"createdAt"`
	LastUpdatedAt         *time.Time     `json:"lastUpdatedAt"`
	ArchivedAt            *time.Time     `json:"archivedAt"`
	Favorite              bool           `json:"favorite"`
	Mode                  ProjectMode    `json:"mode"`
	LastReportedFlagUsage *time.Time     `json:"lastReportedFlagUsage"`
	Owners                []ProjectOwner `json:"owners"`
}

// MarshalJSON writes dates in TimeLayout; see AppendJSON.
func (p ProjectListEntry) MarshalJSON() ([]byte, error) {
	return p.AppendJSON(make([]byte, 0, 512)), nil
}

// AppendJSON appends the entry's JSON (the bytes MarshalJSON returns) to b,
// without reflection: the fields in the order encoding/json wrote them
// (the dates last), dates in TimeLayout, owners null when nil.
func (p ProjectListEntry) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, p.ID)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, p.Name)
	b = append(b, `,"description":`...)
	b = appendJSONString(b, p.Description)
	b = append(b, `,"health":`...)
	b = strconv.AppendInt(b, int64(p.Health), 10)
	b = append(b, `,"technicalDebt":`...)
	b = strconv.AppendInt(b, int64(p.TechnicalDebt), 10)
	b = append(b, `,"featureCount":`...)
	b = strconv.AppendInt(b, int64(p.FeatureCount), 10)
	b = append(b, `,"memberCount":`...)
	b = strconv.AppendInt(b, int64(p.MemberCount), 10)
	b = append(b, `,"favorite":`...)
	b = strconv.AppendBool(b, p.Favorite)
	b = append(b, `,"mode":`...)
	b = appendJSONString(b, string(p.Mode))
	b = append(b, `,"owners":`...)
	if p.Owners == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, o := range p.Owners {
			if i > 0 {
				b = append(b, ',')
			}
			b = o.AppendJSON(b)
		}
		b = append(b, ']')
	}
	b = append(b, `,"createdAt":`...)
	b = appendJSONTime(b, p.CreatedAt)
	b = append(b, `,"lastUpdatedAt":`...)
	b = appendJSONTimePtr(b, p.LastUpdatedAt)
	b = append(b, `,"archivedAt":`...)
	b = appendJSONTimePtr(b, p.ArchivedAt)
	b = append(b, `,"lastReportedFlagUsage":`...)
	b = appendJSONTimePtr(b, p.LastReportedFlagUsage)
	return append(b, '}')
}

// appendJSONTimePtr appends t in TimeLayout as a JSON string, null when nil.
func appendJSONTimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendJSONTime(b, *t)
}

// ProjectListOptions are the parameters of the project list.
type ProjectListOptions struct {
	// Archived lists only archived projects when true, only active ones when false.
	Archived bool
}

// Health returns the health score of a project: round(100 - stale% -
// potentiallyStale%) over its non-archived features, clamped to 0..100; 100
// when it has none.
func Health(featureCount, stale, potentiallyStale int) int {
	if featureCount <= 0 {
		return 100
	}
	h := 100 - 100*float64(stale)/float64(featureCount) - 100*float64(potentiallyStale)/float64(featureCount)
	return min(100, max(0, int(math.Round(h))))
}

// PotentiallyStaleCutoffs returns, for each feature type with a lifetime, the
// creation time before which a feature of that type is potentially stale at now.
func PotentiallyStaleCutoffs(now time.Time) map[FeatureType]time.Time {
	out := map[FeatureType]time.Time{}
	for _, t := range FeatureTypes() {
		if life := t.Lifetime(); life > 0 {
			out[t] = now.Add(-life)
		}
	}
	return out
}

// ListProjects returns the project list (GET /api/admin/projects): active or
// archived projects the caller can see, ordered by name then id.
func (s *Service) ListProjects(ctx context.Context, p Principal, opts ProjectListOptions) ([]ProjectListEntry, error) {
	if err := requireAdminAPI(p); err != nil {
		return nil, err
	}
	hidden, _, _, err := s.visibility(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.listProjects(ctx, p, opts, hidden, s.now())
}

// listProjects returns the project list of opts for p, who does not see
// the projects hidden, at the time now.
func (s *Service) listProjects(ctx context.Context, p Principal, opts ProjectListOptions, hidden []string, now time.Time) ([]ProjectListEntry, error) {
	stats, err := s.store.ProjectStats(ctx, ProjectStatsQuery{
		Archived:               opts.Archived,
		FavoritesOf:            p.userID(),
		PotentiallyStaleBefore: PotentiallyStaleCutoffs(now),
	})
	if err != nil {
		return nil, err
	}
	isHidden := make(map[string]bool, len(hidden))
	for _, id := range hidden {
		isHidden[id] = true
	}
	out := make([]ProjectListEntry, 0, len(stats))
	for _, st := range stats {
		if isHidden[st.Project.ID] {
			continue
		}
		out = append(out, projectListEntry(st))
	}
	slices.SortFunc(out, func(a, b ProjectListEntry) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func projectListEntry(st ProjectStats) ProjectListEntry {
	health := Health(st.FeatureCount, st.StaleCount, st.PotentiallyStaleCount)
	return ProjectListEntry{
		ID:                    st.Project.ID,
		Name:                  st.Project.Name,
		Description:           st.Project.Description,
		Health:                health,
		TechnicalDebt:         100 - health,
		FeatureCount:          st.FeatureCount,
		MemberCount:           st.MemberCount,
		CreatedAt:             st.Project.CreatedAt,
		LastUpdatedAt:         st.LastUpdatedAt,
		ArchivedAt:            st.Project.ArchivedAt,
		Favorite:              st.Favorite,
		Mode:                  st.Project.Mode,
		LastReportedFlagUsage: st.LastReportedFlagUsage,
		Owners:                sortedOwners(st.Owners),
	}
}

// sortedOwners orders users before groups, each by name then id; no owner
// gives the system owner.
func sortedOwners(owners []ProjectOwner) []ProjectOwner {
	if len(owners) == 0 {
		return []ProjectOwner{{OwnerType: OwnerSystem}}
	}
	out := slices.Clone(owners)
	rank := func(o ProjectOwner) int {
		if o.OwnerType == OwnerUser {
			return 0
		}
		return 1
	}
	slices.SortFunc(out, func(a, b ProjectOwner) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out
}
