package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The reflection encoding ProjectListEntry.MarshalJSON used before the
// hand-written encoder: the oracle the tests compare it with, byte for byte.

type projectOracleTime time.Time

func (t projectOracleTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(t).UTC().Format(flagadmin.TimeLayout) + `"`), nil
}

func projectOracleTimePtr(t *time.Time) *projectOracleTime {
	if t == nil {
		return nil
	}
	v := projectOracleTime(*t)
	return &v
}

type projectOracleOwner flagadmin.ProjectOwner

func (o projectOracleOwner) MarshalJSON() ([]byte, error) {
	switch o.OwnerType {
	case flagadmin.OwnerUser:
		return projectOracleMarshal(struct {
			OwnerType string  `json:"ownerType"`
			Name      string  `json:"name"`
			Email     *string `json:"email"`
			ImageURL  *string `json:"imageUrl"`
		}{o.OwnerType, o.Name, o.Email, o.ImageURL})
	case flagadmin.OwnerGroup:
		return projectOracleMarshal(struct {
			OwnerType string `json:"ownerType"`
			Name      string `json:"name"`
		}{o.OwnerType, o.Name})
	default:
		return []byte(`{"ownerType":"system"}`), nil
	}
}

type projectOracleEntry flagadmin.ProjectListEntry

func (p projectOracleEntry) MarshalJSON() ([]byte, error) {
	type plain struct {
		ID                    string                `json:"id"`
		Name                  string                `json:"name"`
		Description           string                `json:"description"`
		Health                int                   `json:"health"`
		TechnicalDebt         int                   `json:"technicalDebt"`
		FeatureCount          int                   `json:"featureCount"`
		MemberCount           int                   `json:"memberCount"`
		CreatedAt             time.Time             `json:"createdAt"`
		LastUpdatedAt         *time.Time            `json:"lastUpdatedAt"`
		ArchivedAt            *time.Time            `json:"archivedAt"`
		Favorite              bool                  `json:"favorite"`
		Mode                  flagadmin.ProjectMode `json:"mode"`
		LastReportedFlagUsage *time.Time            `json:"lastReportedFlagUsage"`
		Owners                []projectOracleOwner  `json:"owners"`
	}
	var owners []projectOracleOwner
	if p.Owners != nil {
		owners = []projectOracleOwner{}
		for _, o := range p.Owners {
			owners = append(owners, projectOracleOwner(o))
		}
	}
	return projectOracleMarshal(struct {
		plain
		CreatedAt             projectOracleTime  `json:"createdAt"`
		LastUpdatedAt         *projectOracleTime `json:"lastUpdatedAt"`
		ArchivedAt            *projectOracleTime `json:"archivedAt"`
		LastReportedFlagUsage *projectOracleTime `json:"lastReportedFlagUsage"`
		CleanupCount          int                `json:"cleanupCount,omitempty"`
	}{plain{p.ID, p.Name, p.Description, p.Health, p.TechnicalDebt, p.FeatureCount, p.MemberCount, p.CreatedAt,
		p.LastUpdatedAt, p.ArchivedAt, p.Favorite, p.Mode, p.LastReportedFlagUsage, owners},
		projectOracleTime(p.CreatedAt), projectOracleTimePtr(p.LastUpdatedAt), projectOracleTimePtr(p.ArchivedAt), projectOracleTimePtr(p.LastReportedFlagUsage), p.CleanupCount})
}

// projectOracleMarshal is json.Marshal without HTML escaping.
func projectOracleMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// projectEntries are list entries with every kind of field value.
func projectEntries() []flagadmin.ProjectListEntry {
	tricky := "a<b>&c \u2028 \u2029 \x01\x1f\x7f \xff\xfe é 😀 \"q\" \\ \t\n\r\b\f"
	t1 := time.Date(2025, 2, 1, 10, 30, 0, 123_456_789, time.FixedZone("x", 3600))
	t2 := time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)
	email := "o<w>n&er@example.com"
	return []flagadmin.ProjectListEntry{
		{},
		{ID: "web", Name: tricky, Description: tricky, Health: 43, TechnicalDebt: 57, FeatureCount: 7, MemberCount: 1 << 40,
			CreatedAt: t1, LastUpdatedAt: &t2, ArchivedAt: &t1, Favorite: true, Mode: flagadmin.ModePrivate, LastReportedFlagUsage: &t2,
			CleanupCount: 5,
			Owners: []flagadmin.ProjectOwner{
				flagadmin.UserOwner(flagadmin.User{ID: 3, Name: tricky, Email: email}),
				flagadmin.UserOwner(flagadmin.User{ID: 4, Username: "no-mail"}),
				{OwnerType: flagadmin.OwnerGroup, ID: 2, Name: tricky},
				{OwnerType: flagadmin.OwnerSystem},
				{OwnerType: "unknown", Name: "x"},
			}},
		{ID: "empty-owners", Owners: []flagadmin.ProjectOwner{}, Health: -1, Mode: "o\"pen"},
	}
}

func TestProjectListEntryJSON(t *testing.T) {
	for i, p := range projectEntries() {
		want, err := projectOracleMarshal(projectOracleEntry(p))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendProjectListEntry([]byte("prefix"), &p); string(got) != "prefix"+string(want) {
			t.Errorf("entry %d appendProjectListEntry:\n got %s\nwant prefix%s", i, got, want)
		}
		// encoding/json, as Huma marshals a list, must write the same bytes.
		got, err := projectOracleMarshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("entry %d through encoding/json:\n got %s\nwant %s", i, got, want)
		}
		for j, o := range p.Owners {
			want, _ := projectOracleMarshal(projectOracleOwner(o))
			if got := appendProjectOwner(nil, &o); !bytes.Equal(got, want) {
				t.Errorf("entry %d owner %d:\n got %s\nwant %s", i, j, got, want)
			}
		}
	}
}

// BenchmarkProjectListJSON encodes a list of 10,000 projects (the large
// benchmark world's size) by hand and, for comparison, through reflection.
func BenchmarkProjectListJSON(b *testing.B) {
	t0 := time.Date(2025, 2, 1, 10, 30, 0, 123_000_000, time.UTC)
	var list []flagadmin.ProjectListEntry
	for i := range 10_000 {
		owners := []flagadmin.ProjectOwner{flagadmin.UserOwner(flagadmin.User{ID: int64(i), Name: fmt.Sprintf("Owner %d", i), Email: fmt.Sprintf("owner%d@example.com", i)})}
		if i%3 == 0 {
			owners = append(owners, flagadmin.ProjectOwner{OwnerType: flagadmin.OwnerGroup, ID: 1, Name: "Team Platform"})
		}
		list = append(list, flagadmin.ProjectListEntry{
			ID: fmt.Sprintf("team-project-%d", i), Name: fmt.Sprintf("Team Project %d", i),
			Description: "Feature flags of the team project, owned by the team", Health: i % 100, TechnicalDebt: 100 - i%100,
			FeatureCount: 20, MemberCount: 5, CreatedAt: t0, LastUpdatedAt: &t0, Mode: flagadmin.ModeOpen, LastReportedFlagUsage: &t0, Owners: owners,
		})
	}
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 64<<10)
		var n int
		for b.Loop() {
			n = 0
			for i := range list {
				buf = appendProjectListEntry(buf[:0], &list[i])
				n += len(buf)
			}
		}
		b.SetBytes(int64(n))
	})
	b.Run("encoding/json", func(b *testing.B) {
		var n int
		for b.Loop() {
			out, err := projectOracleMarshal(struct {
				Version  int                          `json:"version"`
				Projects []flagadmin.ProjectListEntry `json:"projects"`
			}{1, list})
			if err != nil {
				b.Fatal(err)
			}
			n = len(out)
		}
		b.SetBytes(int64(n))
	})
}
