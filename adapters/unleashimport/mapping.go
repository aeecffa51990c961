package unleashimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// The mapping rules of the import (docs/migrating-from-unleash.md, "What
// is carried over"), one function per rule. Each returns
// the flagadmin value and, when the value is not exactly the source's, the
// reason as it appears in the summary ("" when nothing was changed).

// rootRole maps the name and type of a user's Unleash root role: Admin,
// Editor and Viewer are kept; a custom root role (type root-custom, or any
// other name) and no root role at all are Viewer.
func rootRole(name string, found bool) (flagadmin.RootRole, string) {
	if !found {
		return flagadmin.RoleViewer, "no root role: Viewer"
	}
	switch r := flagadmin.RootRole(name); r {
	case flagadmin.RoleAdmin, flagadmin.RoleEditor, flagadmin.RoleViewer:
		return r, ""
	}
	return flagadmin.RoleViewer, fmt.Sprintf("custom root role %q: Viewer", name)
}

// rootRank orders root roles, so that of several rows a user keeps the
// strongest (an Unleash user has one).
func rootRank(name string) int {
	switch flagadmin.RootRole(name) {
	case flagadmin.RoleAdmin:
		return 3
	case flagadmin.RoleEditor:
		return 2
	case flagadmin.RoleViewer:
		return 1
	}
	return 0
}

// isRootRoleType tells root roles (built in or custom) from project roles
// by roles.type, as Unleash does (role_user.project is "default" for root
// roles and a real project id for project roles, default included).
func isRootRoleType(t string) bool { return t == "root" || t == "root-custom" }

// projectRole maps an Unleash project role: Owner is Owner; Member is
// Member; Reader and custom project roles are Member.
func projectRole(name string) (flagadmin.ProjectRole, string) {
	switch name {
	case "Owner":
		return flagadmin.ProjectRoleOwner, ""
	case "Member":
		return flagadmin.ProjectRoleMember, ""
	}
	return flagadmin.ProjectRoleMember, fmt.Sprintf("project role %q: Member", name)
}

// projectMode maps project_settings.project_mode (open when the project
// has no settings row, as Unleash's default project has none).
func projectMode(mode *string) (flagadmin.ProjectMode, string) {
	if mode == nil {
		return flagadmin.ModeOpen, ""
	}
	switch m := flagadmin.ProjectMode(*mode); m {
	case flagadmin.ModeOpen, flagadmin.ModeProtected, flagadmin.ModePrivate:
		return m, ""
	}
	return flagadmin.ModeOpen, fmt.Sprintf("unknown mode %q: open", *mode)
}

// featureType maps a flag type; a type flagadmin does not know (Unleash
// 8's sunset, custom types) is release, Unleash's default type.
func featureType(t string) (flagadmin.FeatureType, string) {
	if slices.Contains(flagadmin.FeatureTypes(), flagadmin.FeatureType(t)) {
		return flagadmin.FeatureType(t), ""
	}
	return flagadmin.TypeRelease, fmt.Sprintf("type %q: release", t)
}

// lifecycleRow is one row of feature_lifecycles.
type lifecycleRow struct {
	stage, status, statusValue string
	at                         time.Time
}

// stageRank orders the stages a flag goes through.
var stageRank = map[string]int{
	flagadmin.StageInitial: 1, flagadmin.StagePreLive: 2, flagadmin.StageLive: 3,
	flagadmin.StageCompleted: 4, flagadmin.StageArchived: 5,
}

// currentStage picks a flag's stage from its feature_lifecycles rows: the
// newest in the lifecycle's own order (initial, pre-live, live, completed,
// archived), where archived counts only while the flag is archived. Not by
// created_at: Unleash writes the initial row asynchronously, sometimes
// after the completed or archived one, and a revived flag keeps its old
// archived row next to the new initial one. A completed stage keeps its
// status and status value; an unknown stage or a completion without a
// valid status is passed over (the reason says so).
func currentStage(rows []lifecycleRow, archived bool) (flagadmin.Lifecycle, []string) {
	var best *lifecycleRow
	var notes []string
	for i := range rows {
		r := &rows[i]
		ok, note := stageCounts(r, archived)
		if note != "" {
			notes = append(notes, note)
		}
		if ok && (best == nil || laterStage(r, best)) {
			best = r
		}
	}
	if best == nil {
		return flagadmin.Lifecycle{Stage: flagadmin.StageInitial}, notes
	}
	lc := flagadmin.Lifecycle{Stage: best.stage}
	switch best.stage {
	case flagadmin.StageCompleted:
		lc.Status, lc.StatusValue = best.status, best.statusValue
	case flagadmin.StageArchived:
		if slices.ContainsFunc(rows, func(r lifecycleRow) bool { return r.stage == flagadmin.StageCompleted }) {
			notes = append(notes, "completed, then archived: the stage is archived, the outcome is in the events")
		}
	}
	return lc, notes
}

// stageCounts reports whether a lifecycle row can be a flag's stage
// (currentStage), and why not when that is worth a note.
func stageCounts(r *lifecycleRow, archived bool) (bool, string) {
	switch _, known := stageRank[r.stage]; {
	case !known:
		return false, fmt.Sprintf("unknown lifecycle stage %q passed over", r.stage)
	case r.stage == flagadmin.StageArchived && !archived:
		return false, ""
	case r.stage == flagadmin.StageCompleted && r.status != flagadmin.StatusKept && r.status != flagadmin.StatusDiscarded:
		return false, fmt.Sprintf("completed stage with status %q passed over", r.status)
	}
	return true, ""
}

// laterStage reports whether r is further in the lifecycle than best, or
// as far and newer.
func laterStage(r, best *lifecycleRow) bool {
	rank, bestRank := stageRank[r.stage], stageRank[best.stage]
	return rank > bestRank || (rank == bestRank && r.at.After(best.at))
}

// tokenType maps api_tokens.type: admin; client, which Unleash 8 calls
// backend; frontend. ok is false for any other type.
func tokenType(t string) (flagadmin.TokenType, bool) {
	switch strings.ToLower(t) {
	case "admin":
		return flagadmin.TokenAdmin, true
	case "client", "backend":
		return flagadmin.TokenClient, true
	case "frontend":
		return flagadmin.TokenFrontend, true
	}
	return "", false
}

// tokenScope maps a token's projects (api_token_project rows; none means
// every project) to flagadmin's one project string: "*", the project, or
// several joined with commas (which flagadmin keeps as the token's label:
// client and frontend tokens have no admin access to scope).
func tokenScope(projects []string) (string, string) {
	switch len(projects) {
	case 0:
		return "*", ""
	case 1:
		return projects[0], ""
	}
	return strings.Join(projects, ","), "several projects: kept as one comma-separated scope"
}

// eventTags maps an event's tags (JSON [{"type","value",...}]): each tag
// keeps its type and value, and its color key as Unleash wrote it (a
// color, null, or no key); a tag outside flagadmin's 2-to-50-character
// rule is dropped, and a color that is not #RRGGBB loses its key.
func eventTags(raw []byte) ([]flagadmin.Tag, []string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil, nil
	}
	var in []struct {
		Type  any             `json:"type"`
		Value any             `json:"value"`
		Color json.RawMessage `json:"color"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, []string{"tags not a JSON list of tags: dropped"}, nil
	}
	var out []flagadmin.Tag
	var notes []string
	for _, t := range in {
		tag := flagadmin.Tag{Type: fmt.Sprint(t.Type), Value: fmt.Sprint(t.Value)}
		if tag.Validate() != nil {
			notes = append(notes, "tag outside 2 to 50 characters: dropped")
			continue
		}
		if t.Color != nil {
			var hex *string
			if json.Unmarshal(t.Color, &hex) == nil {
				tag.Color = flagadmin.NullColor
				if hex != nil {
					tag.Color = flagadmin.ColorOf(*hex)
				}
			}
			if !tag.Color.Present() || tag.Validate() != nil {
				tag.Color = flagadmin.TagColor{}
				notes = append(notes, "tag color not #RRGGBB or null: dropped")
			}
		}
		out = append(out, tag)
	}
	return out, notes, nil
}

// eventJSON maps data or pre_data: compact JSON text; JSON null or SQL
// NULL is nil; a value that is not an object (flagadmin's events carry
// objects) is wrapped as {"value": ...}.
func eventJSON(raw []byte) (json.RawMessage, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, "not JSON: dropped"
	}
	if buf.Bytes()[0] != '{' {
		return json.RawMessage(`{"value":` + buf.String() + `}`), "not a JSON object: wrapped as {\"value\": ...}"
	}
	return json.RawMessage(buf.Bytes()), ""
}
