package unleashimport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
	"github.com/flagadmin/flagadmin/internal/unleashschema"
)

// store is a target store and the same store as flagadmin.Store.
type store interface {
	unleashimport.Target
	flagadmin.Store
}

// targets open an empty store of each kind.
var targets = []struct {
	name string
	open func(t *testing.T) store
}{
	{"memory", func(t *testing.T) store { return memstore.New() }},
	{"sqlite", func(t *testing.T) store { return openBun(t, dbtest.SQLite(t)) }},
	{"postgres", func(t *testing.T) store { return openBun(t, dbtest.Postgres(t)) }},
	{"mysql", func(t *testing.T) store { return openBun(t, dbtest.MySQL(t)) }},
}

func openBun(t *testing.T, url string) *bunstore.Store {
	t.Helper()
	s, err := bunstore.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openSource(t *testing.T, url string) *unleashimport.Source {
	t.Helper()
	src, err := unleashimport.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func TestImportFixture(t *testing.T) {
	url := unleashfixture.ReadOnly(t)
	exp := unleashfixture.LoadExpected(t)
	names := featureNames(t, url)
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			st := tg.open(t)
			var progress bytes.Buffer
			sum, err := unleashimport.Import(ctx, openSource(t, url), st, unleashimport.Options{Progress: &progress})
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			checkSummary(t, sum)
			for _, want := range []string{"read users: 13 rows", "events: 2297 in "} {
				if !bytes.Contains(progress.Bytes(), []byte(want)) {
					t.Errorf("progress: no %q in\n%s", want, progress.String())
				}
			}
			svc := flagadmin.NewService(st)
			checkFacts(t, svc, st, exp, names)
			checkEventsAsUnleashWritesThem(t, st, url)
			checkProjectListAsUnleash(t, svc)
			checkSearchesAsUnleashAnswered(t, svc)
			checkTokens(t, svc, exp)
			checkNextIDs(t, svc, st)

			// A second import is refused, naming what the store holds.
			_, err = unleashimport.Import(ctx, openSource(t, url), st, unleashimport.Options{})
			if !errors.Is(err, unleashimport.ErrNotEmpty) || !errors.Is(err, flagadmin.ErrConflict) {
				t.Fatalf("second import: got %v, want ErrNotEmpty", err)
			}
			if want := "it holds 11 users, 2 groups, 4 projects, 49 features, 12 tokens, 2300 events"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
				t.Errorf("second import: got %q, want it to say %q", err, want)
			}
		})
	}
}

// featureNames lists the flags of the source.
func featureNames(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), "SELECT name FROM features ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func checkSummary(t *testing.T, sum *unleashimport.Summary) {
	t.Helper()
	for _, c := range []struct {
		kind                          string
		read, imported, skip, mapDown int
	}{
		{"users", 11, 8, 3, 0},
		{"service accounts", 2, 2, 0, 0},
		{"projects", 4, 4, 0, 0},
		{"project roles", 13, 13, 0, 1},
		{"flags", 49, 49, 0, 3},
		{"API tokens", 10, 9, 1, 1},
		{"personal access tokens", 4, 3, 1, 0},
		{"favorite flags", 5, 0, 5, 0},
	} {
		k := sum.Kind(c.kind)
		if k == nil {
			t.Errorf("summary: no kind %q", c.kind)
			continue
		}
		if got := [4]int{k.Read, k.Imported, k.SkippedTotal(), k.MappedDownTotal()}; got != [4]int{c.read, c.imported, c.skip, c.mapDown} {
			t.Errorf("summary %s: got read/imported/skipped/mapped down %v, want %v", c.kind, got, [4]int{c.read, c.imported, c.skip, c.mapDown})
		}
	}
	ev := sum.Kind("events")
	if ev.Read != 2297 || ev.Imported != 2297 || ev.MappedDown["type unknown to flagadmin: kept as it is"] != 2 {
		t.Errorf("summary events: got %+v", ev)
	}
	if len(sum.NotImportable) != 2 {
		t.Errorf("not importable: got %q, want the hashed PAT and API token", sum.NotImportable)
	}
	var out bytes.Buffer
	if err := sum.Write(&out); err != nil || !bytes.Contains(out.Bytes(), []byte(`custom root role`)) && !bytes.Contains(out.Bytes(), []byte(`project role "Reader": Member`)) {
		t.Errorf("summary text: %v\n%s", err, out.String())
	}
}

type userFact struct {
	ID        int64   `json:"id"`
	Name      *string `json:"name"`
	Username  *string `json:"username"`
	Email     *string `json:"email"`
	IsService bool    `json:"is_service"`
	IsSystem  bool    `json:"is_system"`
	Deleted   bool    `json:"deleted"`
	RootRole  *string `json:"root_role"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func checkFacts(t *testing.T, svc *flagadmin.Service, st store, exp *unleashfixture.Expected, names []string) {
	t.Helper()
	ctx := context.Background()

	// Users and service accounts, with their root roles.
	var users []userFact
	exp.Fact(t, "users", &users)
	account := map[string]int64{} // email or username -> id
	roots := map[string]int{}
	for _, u := range users {
		got, err := st.User(ctx, u.ID)
		if u.IsSystem || u.Deleted {
			if !errors.Is(err, flagadmin.ErrNotFound) {
				t.Errorf("user %d (system or deleted): got %+v, %v; want not imported", u.ID, got, err)
			}
			continue
		}
		account[str(u.Email)+str(u.Username)] = u.ID
		want := flagadmin.User{ID: u.ID, Name: str(u.Name), Username: str(u.Username), Email: str(u.Email), RootRole: flagadmin.RootRole(str(u.RootRole)), IsService: u.IsService}
		if err != nil || got != want {
			t.Errorf("user %d: got %+v, %v; want %+v", u.ID, got, err, want)
		}
		roots[str(u.RootRole)]++
	}
	var wantRoots map[string]int
	exp.Fact(t, "root_role_assignments_by_role", &wantRoots)
	if !reflect.DeepEqual(roots, wantRoots) {
		t.Errorf("root roles: got %v, want %v", roots, wantRoots)
	}

	// Groups and their members.
	var groups []struct {
		ID           int64    `json:"id"`
		Name         string   `json:"name"`
		Members      []string `json:"members"`
		ProjectRoles []struct {
			Project, Role string
		} `json:"project_roles"`
	}
	exp.Fact(t, "groups", &groups)
	groupRoles := map[int64]map[string]flagadmin.ProjectRole{} // user -> project -> role through groups
	for _, g := range groups {
		got, err := st.Group(ctx, g.ID)
		var want []int64
		for _, m := range g.Members {
			want = append(want, account[m])
		}
		slices.Sort(want)
		slices.Sort(got.Users)
		if err != nil || got.Name != g.Name || !slices.Equal(got.Users, want) {
			t.Errorf("group %d: got %+v, %v; want %q with %v", g.ID, got, err, g.Name, want)
		}
		for _, uid := range want {
			for _, pr := range g.ProjectRoles {
				if groupRoles[uid] == nil {
					groupRoles[uid] = map[string]flagadmin.ProjectRole{}
				}
				groupRoles[uid][pr.Project] = mappedRole(pr.Role)
			}
		}
	}

	// Project roles, directly and through groups (the strongest wins).
	var assignments []struct {
		Project, Account, Role string
	}
	exp.Fact(t, "project_role_assignments", &assignments)
	wantRoles := map[int64]map[string]flagadmin.ProjectRole{}
	for uid, m := range groupRoles {
		wantRoles[uid] = maps(m)
	}
	for _, a := range assignments {
		uid := account[a.Account]
		if wantRoles[uid] == nil {
			wantRoles[uid] = map[string]flagadmin.ProjectRole{}
		}
		if r := mappedRole(a.Role); wantRoles[uid][a.Project] != flagadmin.ProjectRoleOwner {
			wantRoles[uid][a.Project] = r
		}
	}
	for _, uid := range account {
		access, err := st.ProjectAccess(ctx, uid)
		got, want := access.Roles, wantRoles[uid]
		if want == nil {
			want = map[string]flagadmin.ProjectRole{}
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("project roles of user %d: got %v, %v; want %v", uid, got, err, want)
		}
	}

	// Projects: mode, archived, active flags; favorites.
	var projects []struct {
		ID             string `json:"id"`
		Name           string `json:"name"`
		Mode           string `json:"mode"`
		Archived       bool   `json:"archived"`
		ActiveFeatures int    `json:"active_features"`
	}
	exp.Fact(t, "projects", &projects)
	favorites := 0
	for _, archived := range []bool{false, true} {
		stats, err := st.ProjectStats(ctx, flagadmin.ProjectStatsQuery{Archived: archived})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]flagadmin.ProjectStats{}
		for _, s := range stats {
			got[s.Project.ID] = s
		}
		for _, p := range projects {
			s, ok := got[p.ID]
			if p.Archived != archived {
				if ok {
					t.Errorf("project %s listed with archived=%v", p.ID, archived)
				}
				continue
			}
			if !ok || s.Project.Name != p.Name || string(s.Project.Mode) != p.Mode || s.FeatureCount != p.ActiveFeatures {
				t.Errorf("project %s: got %+v (present %v); want %+v", p.ID, s, ok, p)
			}
		}
		for _, uid := range account {
			stats, err := st.ProjectStats(ctx, flagadmin.ProjectStatsQuery{Archived: archived, FavoritesOf: &uid})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stats {
				if s.Favorite {
					favorites++
				}
			}
		}
	}
	var wantFavorites int
	exp.Fact(t, "favorite_projects", &wantFavorites)
	if favorites != wantFavorites {
		t.Errorf("favorite projects: got %d, want %d", favorites, wantFavorites)
	}

	// Flags: type (sunset is release), stale, archived, tags, lifecycle.
	var total int
	exp.Fact(t, "features_total", &total)
	if len(names) != total {
		t.Fatalf("source flags: got %d, want %d", len(names), total)
	}
	var wantTypes map[string]int
	exp.Fact(t, "features_by_type", &wantTypes)
	wantTypes["release"] += wantTypes["sunset"]
	delete(wantTypes, "sunset")
	var wantStale []string
	exp.Fact(t, "features_stale", &wantStale)
	var archivedFacts []struct{ Name, Project string }
	exp.Fact(t, "features_archived", &archivedFacts)
	var wantTagsByType map[string]int
	exp.Fact(t, "feature_tags_by_type", &wantTagsByType)
	var lifecycles map[string][]struct {
		Stage       string  `json:"stage"`
		Status      *string `json:"status"`
		StatusValue *string `json:"statusValue"`
	}
	exp.Fact(t, "lifecycle_by_feature", &lifecycles)
	types, tagsByType := map[string]int{}, map[string]int{}
	var stale []string
	var archived []struct{ Name, Project string }
	for _, name := range names {
		f, err := st.Feature(ctx, name)
		if err != nil {
			t.Errorf("flag %s: %v", name, err)
			continue
		}
		types[string(f.Type)]++
		if f.Stale {
			stale = append(stale, name)
		}
		if f.ArchivedAt != nil {
			archived = append(archived, struct{ Name, Project string }{name, f.Project})
		}
		for _, tag := range f.Tags {
			tagsByType[tag.Type]++
		}
		// The stage: the furthest along, archived only while archived.
		want := flagadmin.Lifecycle{Stage: flagadmin.StageInitial}
		rank := map[string]int{"initial": 1, "pre-live": 2, "live": 3, "completed": 4, "archived": 5}
		for _, l := range lifecycles[name] {
			if l.Stage == "archived" && f.ArchivedAt == nil {
				continue
			}
			if rank[l.Stage] > rank[want.Stage] || (l.Stage == want.Stage && l.Stage == "initial") {
				want = flagadmin.Lifecycle{Stage: l.Stage}
				if l.Stage == "completed" {
					want.Status, want.StatusValue = str(l.Status), str(l.StatusValue)
				}
			}
		}
		if f.Lifecycle != want {
			t.Errorf("flag %s lifecycle: got %+v, want %+v", name, f.Lifecycle, want)
		}
	}
	if !reflect.DeepEqual(types, wantTypes) {
		t.Errorf("flag types: got %v, want %v", types, wantTypes)
	}
	if !slices.Equal(stale, wantStale) {
		t.Errorf("stale flags: got %v, want %v", stale, wantStale)
	}
	if !reflect.DeepEqual(archived, archivedFacts) {
		t.Errorf("archived flags: got %v, want %v", archived, archivedFacts)
	}
	if !reflect.DeepEqual(tagsByType, wantTagsByType) {
		t.Errorf("flag tags: got %v, want %v", tagsByType, wantTagsByType)
	}
	// The completions the fixture's README lists, by hand.
	for name, want := range map[string]flagadmin.Lifecycle{
		"pricing-page-ab":         {Stage: "completed", Status: "kept", StatusValue: "variant-b"},
		"dark-mode":               {Stage: "completed", Status: "kept"},
		"recommendation-algo-v3":  {Stage: "completed", Status: "kept", StatusValue: "v3-model"},
		"cta-button-color":        {Stage: "completed", Status: "discarded"},
		"legacy-checkout-sunset":  {Stage: "completed", Status: "discarded", StatusValue: "replaced-by-checkout-v2"},
		"payments-new-psp":        {Stage: "completed", Status: "kept", StatusValue: "new-psp"},
		"email-subject-line-test": {Stage: "archived"},
		"signup-form-length":      {Stage: "initial"},
		"legacy-web-banner":       {Stage: "archived"},
	} {
		if f, err := st.Feature(ctx, name); err != nil || f.Lifecycle != want {
			t.Errorf("flag %s: got %+v, %v; want %+v", name, f.Lifecycle, err, want)
		}
	}

	checkEvents(t, st, exp)
}

func mappedRole(unleash string) flagadmin.ProjectRole {
	if unleash == "Owner" {
		return flagadmin.ProjectRoleOwner
	}
	return flagadmin.ProjectRoleMember
}

func maps[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkEvents compares every event fact with the imported log.
func checkEvents(t *testing.T, st store, exp *unleashfixture.Expected) {
	t.Helper()
	byType, byProject, byEnv, byUserID, byCreatedBy := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	withFeature, n := 0, 0
	var first, last int64
	err := st.ExportEvents(context.Background(), flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
		n++
		if first == 0 {
			first = e.ID
		}
		last = e.ID
		byType[e.Type]++
		byProject[orNull(e.Project)]++
		byEnv[orNull(e.Environment)]++
		uid := "(null)"
		if e.CreatedByUserID != nil {
			uid = fmt.Sprint(*e.CreatedByUserID)
		}
		byUserID[uid]++
		byCreatedBy[e.CreatedBy]++
		if e.FeatureName != nil {
			withFeature++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int
	exp.Fact(t, "events_total", &total)
	var minMax struct{ Min, Max int64 }
	exp.Fact(t, "events_min_max_id", &minMax)
	if n != total || first != minMax.Min || last != minMax.Max {
		t.Errorf("events: got %d, ids %d..%d; want %d, ids %d..%d", n, first, last, total, minMax.Min, minMax.Max)
	}
	for _, c := range []struct {
		fact string
		got  map[string]int
	}{{"events_by_type", byType}, {"events_by_project", byProject}, {"events_by_environment", byEnv},
		{"events_by_created_by_user_id", byUserID}, {"events_by_created_by", byCreatedBy}} {
		var want map[string]int
		exp.Fact(t, c.fact, &want)
		if !reflect.DeepEqual(c.got, want) {
			t.Errorf("%s: got %v, want %v", c.fact, c.got, want)
		}
	}
	var wantWithFeature, distinct int
	exp.Fact(t, "events_with_feature_name", &wantWithFeature)
	exp.Fact(t, "events_distinct_types", &distinct)
	if withFeature != wantWithFeature || len(byType) != distinct {
		t.Errorf("events with a flag: got %d, want %d; types: got %d, want %d", withFeature, wantWithFeature, len(byType), distinct)
	}
	// Free text, through the full-text index the load rebuilt (Unleash
	// answered 60 for the same query: events-search-query.json).
	page, err := st.SearchEvents(context.Background(), flagadmin.EventQuery{Text: "variant-b", TextScope: flagadmin.TextPayload, Limit: 5})
	if err != nil || page.Total != 60 {
		t.Errorf("query variant-b: got total %d, %v; want 60", page.Total, err)
	}
	// One event in full, as Unleash stored it (timestamps to the millisecond).
	page, err = st.SearchEvents(context.Background(), flagadmin.EventQuery{IDs: []int64{2296}, Limit: 1})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("event 2296: %v %+v", err, page)
	}
	e := page.Events[0]
	if e.Type != "api-token-created" || e.CreatedBy != "admin" || *e.CreatedByUserID != -42 || *e.Project != "default" ||
		*e.Environment != "production" || !bytes.Contains(e.Data, []byte(`"tokenName":"edge-proxy-secure"`)) || e.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("event 2296: got %+v", e)
	}
}

// checkEventsAsUnleashWritesThem: every imported event, served, has the
// tags Unleash stored, byte for byte (with their color where Unleash wrote
// one), groupType and groupId exactly when the source row has them, and
// passes Unleash's eventSchema.
func checkEventsAsUnleashWritesThem(t *testing.T, st store, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	type row struct {
		tags            string
		groupType, grID *string
	}
	source := map[int64]row{}
	rows, err := conn.Query(ctx, "SELECT id, tags::text, group_type, group_id FROM events")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var r row
		if err := rows.Scan(&id, &r.tags, &r.groupType, &r.grID); err != nil {
			t.Fatal(err)
		}
		source[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	colored, problems := 0, 0
	err = st.ExportEvents(ctx, flagadmin.EventQuery{}, 0, func(e flagadmin.Event) error {
		r, ok := source[e.ID]
		if !ok || problems > 5 {
			return nil
		}
		served := eventjson.AppendEvent(nil, &e)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(served, &keys); err != nil {
			return err
		}
		_, hasType := keys["groupType"]
		_, hasID := keys["groupId"]
		if string(keys["tags"]) != r.tags || hasType != (r.groupType != nil) || hasID != (r.grID != nil) {
			problems++
			t.Errorf("event %d: served %s; Unleash stored tags %s, group_type %v, group_id %v", e.ID, served, r.tags, r.groupType != nil, r.grID != nil)
		}
		if errs := unleashschema.EventErrors(served); errs != nil {
			problems++
			t.Errorf("event %d: Unleash's eventSchema refuses %s: %q", e.ID, served, errs)
		}
		if bytes.Contains(keys["tags"], []byte(`"color":`)) {
			colored++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if colored == 0 {
		t.Errorf("no imported event has a tag color; Unleash's feature-untagged events carry them")
	}
}

func orNull(s *string) string {
	if s == nil {
		return "(null)"
	}
	return *s
}

// checkTokens: every token stored in clear authenticates with its role;
// those Unleash stored as hashes do not.
func checkTokens(t *testing.T, svc *flagadmin.Service, exp *unleashfixture.Expected) {
	t.Helper()
	ctx := context.Background()
	var tokens []struct {
		Secret string `json:"secret"`
		Name   string `json:"token_name"`
		Type   string `json:"type"`
	}
	exp.Fact(t, "api_tokens", &tokens)
	for _, tok := range tokens {
		p, err := svc.Authenticate(ctx, tok.Secret)
		want := flagadmin.PrincipalClientToken
		if tok.Type == "admin" {
			want = flagadmin.PrincipalAdminToken
		}
		if err != nil || p.Kind != want {
			t.Errorf("API token %s (%s): got %+v, %v; want kind %v", tok.Name, tok.Type, p, err, want)
		}
		if want == flagadmin.PrincipalAdminToken && p.Name != tok.Name {
			t.Errorf("admin token: got name %q, want %q", p.Name, tok.Name)
		}
	}
	var pats []struct {
		ID     int64   `json:"id"`
		Owner  string  `json:"owner"`
		Secret *string `json:"secret"`
	}
	exp.Fact(t, "personal_access_tokens", &pats)
	owners := map[string]flagadmin.RootRole{
		"bob.editor@example.com": flagadmin.RoleEditor, "dave.viewer@example.com": flagadmin.RoleViewer, "ci-pipeline": flagadmin.RoleEditor,
	}
	for _, pat := range pats {
		if pat.Secret == nil {
			continue
		}
		p, err := svc.Authenticate(ctx, *pat.Secret)
		if err != nil || p.Kind != flagadmin.PrincipalUser || p.User.DisplayName() != pat.Owner || p.User.RootRole != owners[pat.Owner] {
			t.Errorf("PAT %d of %s: got %+v, %v; want the user with root role %s", pat.ID, pat.Owner, p, err, owners[pat.Owner])
		}
	}
	for _, s := range exp.SecretsNotInDatabase.PersonalAccessTokens {
		if _, err := svc.Authenticate(ctx, s.Secret); !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
			t.Errorf("hashed PAT %d: got %v, want 401", s.ID, err)
		}
	}
	for _, s := range exp.SecretsNotInDatabase.APITokens {
		if _, err := svc.Authenticate(ctx, s.Secret); !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
			t.Errorf("hashed API token %s: got %v, want 401", s.TokenName, err)
		}
	}
}

// checkNextIDs: after the import, a lifecycle completion gets the next
// event id, and new users and groups ids above the imported ones.
func checkNextIDs(t *testing.T, svc *flagadmin.Service, st store) {
	t.Helper()
	ctx := context.Background()
	if err := svc.CompleteLifecycle(ctx, flagadmin.System, "default", "new-onboarding-flow", flagadmin.CompleteRequest{Status: "kept"}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	page, err := st.SearchEvents(ctx, flagadmin.EventQuery{Limit: 1})
	if err != nil || len(page.Events) != 1 {
		t.Fatal(err)
	}
	if e := page.Events[0]; e.ID != 2298 || e.Type != "feature-completed" {
		t.Errorf("newest event: got id %d, %s; want 2298, feature-completed", e.ID, e.Type)
	}
	u, err := svc.CreateUser(ctx, flagadmin.System, flagadmin.User{Name: "New Person", Email: "new@example.com", RootRole: flagadmin.RoleViewer})
	if err != nil || u.ID != 12 {
		t.Errorf("new user: got id %d, %v; want 12, above the imported 11", u.ID, err)
	}
	g, err := svc.CreateGroup(ctx, flagadmin.System, flagadmin.Group{Name: "New group"})
	if err != nil || g.ID != 2 {
		t.Errorf("new group: got id %d, %v; want 2", g.ID, err)
	}
}

// TestSeedRoundTrip: the fixture written as a seed file and loaded into an
// empty store gives the same searches as the import into a store, apart
// from the events a seed file cannot hold (types unknown to flagadmin),
// which the summary counts.
func TestSeedRoundTrip(t *testing.T) {
	url := unleashfixture.ReadOnly(t)
	ctx := context.Background()
	direct := memstore.New()
	if _, err := unleashimport.Import(ctx, openSource(t, url), direct, unleashimport.Options{}); err != nil {
		t.Fatal(err)
	}
	var seedFile bytes.Buffer
	sum, err := unleashimport.WriteSeed(ctx, openSource(t, url), &seedFile, unleashimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	skipped := sum.Kind("events").Skipped["type unknown to flagadmin (a seed file holds known types only)"]
	if skipped != 2 {
		t.Fatalf("seed: got %d events skipped for their type, want 2 (feature-link-added)", skipped)
	}
	loaded := memstore.New()
	if err := flagadmin.NewService(loaded).LoadSeed(ctx, &seedFile); err != nil {
		t.Fatalf("LoadSeed: %v", err)
	}
	admin := flagadmin.AdminToken("admin")
	for _, params := range []flagadmin.EventSearchParams{
		{Limit: "1000"},
		{Type: "IS:feature-completed"},
		{Feature: "IS:pricing-page-ab", Limit: "100"},
		{Project: "IS_ANY_OF:mobile-app,legacy-web"},
		{CreatedBy: "IS:3", Limit: "1000"},
		{CreatedBy: "IS:-42", Limit: "1000", Offset: "10"},
		{Environment: "IS:production", Limit: "1000"},
		{Query: "variant-b", Limit: "100"},
		{From: "IS:2026-11-23", To: "IS:2026-11-23", Limit: "5"},
		{Project: "IS:*"},
	} {
		b, err := flagadmin.NewService(loaded).SearchEvents(ctx, admin, params)
		if err != nil {
			t.Fatal(err)
		}
		// What the seed should give: every match of the import but those of
		// unknown types, paged as params says.
		all := allMatches(t, flagadmin.NewService(direct), admin, params)
		offset, limit := atoi(params.Offset, 0), atoi(params.Limit, 50)
		want := all[min(offset, len(all)):min(offset+limit, len(all))]
		if b.Total != len(all) || !sameEventsButIDs(b.Events, want) {
			t.Errorf("search %+v: seed gives total %d, %d events; import gives %d, %d events (without unknown types)",
				params, b.Total, len(b.Events), len(all), len(want))
		}
	}
	// Everything else of the world too: users, projects, flags, tokens.
	a, _ := direct.Contents(ctx)
	b, _ := loaded.Contents(ctx)
	a["events"] -= int64(skipped)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("contents: seed %v, import %v", b, a)
	}
	checkTokens(t, flagadmin.NewService(loaded), unleashfixture.LoadExpected(t))
}

// allMatches walks every page of params' matches, without those of event
// types unknown to flagadmin.
func allMatches(t *testing.T, svc *flagadmin.Service, p flagadmin.Principal, params flagadmin.EventSearchParams) []flagadmin.Event {
	t.Helper()
	var out []flagadmin.Event
	params.Limit = "1000"
	for offset := 0; ; offset += 1000 {
		params.Offset = fmt.Sprint(offset)
		page, err := svc.SearchEvents(context.Background(), p, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			if flagadmin.IsKnownEventType(e.Type) {
				out = append(out, e)
			}
		}
		if offset+1000 >= page.Total {
			return out
		}
	}
}

func atoi(s string, def int) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// sameEventsButIDs compares events as the API writes them, ids aside.
func sameEventsButIDs(a, b []flagadmin.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.ID, y.ID = 0, 0
		jx, errx := x.MarshalJSON()
		jy, erry := y.MarshalJSON()
		if errx != nil || erry != nil || !bytes.Equal(jx, jy) {
			return false
		}
	}
	return true
}

// checkProjectListAsUnleash compares the project list's entry of the
// default project with the one Unleash 8.2.0 answered on the fixture
// (responses/projects.json), field for field, for the fields computed from
// what the import reads: when an SDK last reported one of its flags
// (Unleash keeps it in last_seen_at_metrics), its flags (those whose
// lifecycle is completed: cleanupCount) and members.
func checkProjectListAsUnleash(t *testing.T, svc *flagadmin.Service) {
	t.Helper()
	recorded := unleashfixture.ReadRecording(t, "projects.json")
	var unleash struct{ Projects []map[string]any }
	if err := json.Unmarshal([]byte(recorded.Response.Body), &unleash); err != nil {
		t.Fatal(err)
	}
	list, err := svc.ListProjects(context.Background(), flagadmin.AdminToken("admin"), flagadmin.ProjectListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var ours []map[string]any
	if err := json.Unmarshal(b, &ours); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ours, func(p map[string]any) bool { return p["id"] == "default" })
	if i < 0 || len(unleash.Projects) != 1 {
		t.Fatalf("the default project: ours %v, Unleash's %d entries", ours, len(unleash.Projects))
	}
	for _, field := range []string{"id", "name", "description", "featureCount", "memberCount", "createdAt", "archivedAt", "mode", "lastReportedFlagUsage", "cleanupCount"} {
		if got, want := ours[i][field], unleash.Projects[0][field]; !reflect.DeepEqual(got, want) {
			t.Errorf("default project's %s: %v, Unleash answers %v", field, got, want)
		}
	}
}
