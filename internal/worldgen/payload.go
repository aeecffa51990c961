package worldgen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// payloads builds the data, preData and tags of events. The random source
// is reseeded for every event from the seed and the event's index.
type payloads struct {
	w   *World
	src *rand.PCG
	r   *rand.Rand
	j   jsonWriter
}

func newPayloads(w *World) *payloads {
	src := rand.NewPCG(0, 0)
	return &payloads{w: w, src: src, r: rand.New(src)}
}

// fill sets the data, preData and tags of event number i.
func (p *payloads) fill(i int, s *skel, e *flagadmin.Event) {
	p.src.Seed(p.w.cfg.Seed^saltPayload, uint64(i))
	w, r := p.w, p.r
	var feature *flagadmin.Feature
	if s.feature >= 0 {
		feature = &w.features[s.feature]
		if !strings.HasPrefix(s.typ, "change-request-") {
			e.Tags = slices.Clone(feature.Tags)
		}
	}
	env := "production"
	if s.env >= 0 {
		env = environments[s.env]
	}
	data := func(build func()) rawJSON {
		p.j.reset()
		build()
		return p.j.bytes()
	}
	switch s.typ {
	case flagadmin.EventFeatureStrategyUpdate:
		// An update keeps the strategy's name (Unleash's own event log
		// reads the parameters of that name in both data and preData).
		slot, name := r.IntN(2), ""
		e.Data = data(func() { name = p.strategy(s.feature, env, slot, s.planted, "") })
		e.PreData = data(func() { p.strategy(s.feature, env, slot, false, name) })
	case flagadmin.EventFeatureStrategyAdd:
		slot := r.IntN(3)
		e.Data = data(func() { p.strategy(s.feature, env, slot, s.planted, "") })
	case flagadmin.EventFeatureStrategyRemove:
		e.PreData = data(func() { p.strategy(s.feature, env, r.IntN(3), false, "") })
	case flagadmin.EventFeatureEnvironmentEnabled, flagadmin.EventFeatureEnvironmentDisabled:
		e.Data = data(func() {
			j := &p.j
			j.obj("")
			j.str("name", feature.Name)
			j.str("project", feature.Project)
			j.str("environment", env)
			j.boolean("enabled", s.typ == flagadmin.EventFeatureEnvironmentEnabled)
			j.integer("strategies", int64(1+r.IntN(3)))
			j.end()
		})
	case flagadmin.EventFeatureUpdated, flagadmin.EventFeatureMetadataUpdated, flagadmin.EventFeatureImport:
		e.Data = data(func() { p.feature(feature, s.at, r.IntN(len(descriptionPhrases))) })
		if s.typ != flagadmin.EventFeatureImport {
			e.PreData = data(func() { p.feature(feature, s.at, r.IntN(len(descriptionPhrases))) })
		}
	case flagadmin.EventFeatureCreated:
		e.Data = data(func() { p.feature(feature, s.at, r.IntN(len(descriptionPhrases))) })
	case flagadmin.EventFeatureArchived:
		e.Data = data(func() {
			p.j.obj("")
			p.j.str("name", feature.Name)
			p.j.str("project", feature.Project)
			p.j.boolean("archived", true)
			p.j.end()
		})
	case flagadmin.EventFeatureVariantsUpdated, flagadmin.EventFeatureEnvironmentVariantsUpdated:
		e.Data = data(func() { p.variants(feature.Name) })
		e.PreData = data(func() { p.variants(feature.Name) })
	case flagadmin.EventStrategyOrderChanged:
		ids := []int{0, 1, 2}
		e.Data = data(func() { p.strategyOrder(s.feature, env, ids) })
		slices.Reverse(ids)
		e.PreData = data(func() { p.strategyOrder(s.feature, env, ids) })
	case flagadmin.EventFeatureTagged, flagadmin.EventFeatureUntagged:
		t := drawTags(r, feature.Project)
		if len(t) == 0 {
			t = []flagadmin.Tag{{Type: "simple", Value: "reviewed"}}
		}
		tag := data(func() {
			p.j.obj("")
			p.j.str("type", t[0].Type)
			p.j.str("value", t[0].Value)
			p.j.end()
		})
		if s.typ == flagadmin.EventFeatureTagged {
			e.Data = tag
		} else {
			e.PreData = tag
		}
	case flagadmin.EventFeatureStaleOn, flagadmin.EventFeatureStaleOff, flagadmin.EventFeaturePotentiallyStaleOn:
		e.Data = data(func() {
			p.j.obj("")
			p.j.str("name", feature.Name)
			if s.typ == flagadmin.EventFeaturePotentiallyStaleOn {
				p.j.boolean("potentiallyStale", true)
			} else {
				p.j.boolean("stale", s.typ == flagadmin.EventFeatureStaleOn)
			}
			p.j.end()
		})
	case flagadmin.EventFeatureTypeUpdated:
		types := flagadmin.FeatureTypes()
		from, to := types[r.IntN(len(types))], feature.Type
		e.Data = data(func() { p.j.obj(""); p.j.str("type", string(to)); p.j.end() })
		e.PreData = data(func() { p.j.obj(""); p.j.str("type", string(from)); p.j.end() })
	case flagadmin.EventFeatureDependencyAdded, flagadmin.EventFeatureDependencyRemoved:
		fs := w.proj[s.project].features
		parent := w.features[fs[0]].Name
		if fs[0] == s.feature {
			parent = w.features[fs[len(fs)-1]].Name
		}
		dep := data(func() {
			p.j.obj("")
			p.j.str("feature", parent)
			p.j.boolean("enabled", true)
			p.j.arr("variants")
			p.j.end()
			p.j.end()
		})
		if s.typ == flagadmin.EventFeatureDependencyAdded {
			e.Data = dep
		} else {
			e.PreData = dep
		}
	case flagadmin.EventFeatureFavorited, flagadmin.EventFeatureUnfavorited:
		e.Data = data(func() { p.j.obj(""); p.j.str("feature", feature.Name); p.j.end() })
	case flagadmin.EventFeatureCompleted:
		e.Data = data(func() {
			p.j.obj("")
			if r.Float64() < 0.7 {
				p.j.str("status", flagadmin.StatusKept)
				p.j.boolean("kept", true)
				p.j.str("statusValue", variantNames[r.IntN(len(variantNames))])
			} else {
				p.j.str("status", flagadmin.StatusDiscarded)
				p.j.boolean("kept", false)
			}
			p.j.end()
		})
	case flagadmin.EventFeatureUncompleted:
		e.Data = data(func() {
			p.j.obj("")
			p.j.str("feature", feature.Name)
			p.j.str("stage", flagadmin.StageLive)
			p.j.end()
		})
	case flagadmin.EventChangeRequestCreated, flagadmin.EventChangeRequestApproved, flagadmin.EventChangeRequestApplied, flagadmin.EventChangeRequestRejected:
		e.Data = data(func() { p.changeRequest(s, feature, env) })
	case flagadmin.EventProjectCreated, flagadmin.EventProjectUpdated:
		pr := &w.projects[s.project]
		e.Data = data(func() { p.project(pr, pr.Description) })
		if s.typ == flagadmin.EventProjectUpdated {
			e.PreData = data(func() { p.project(pr, "Flags of the "+pr.Name) })
		}
	case flagadmin.EventProjectArchived:
		pr := &w.projects[s.project]
		e.Data = data(func() { p.j.obj(""); p.j.str("id", pr.ID); p.j.str("name", pr.Name); p.j.end() })
	case flagadmin.EventProjectUserAdded, flagadmin.EventProjectUserRemoved, flagadmin.EventProjectUserRoleChanged:
		u := w.users[r.IntN(len(w.users))]
		role := data(func() {
			p.j.obj("")
			p.j.integer("roleId", int64(4+r.IntN(2)))
			p.j.str("roleName", []string{"Member", "Owner"}[r.IntN(2)])
			p.j.integer("userId", u.ID)
			p.j.str("userName", u.Name)
			p.j.end()
		})
		if s.typ == flagadmin.EventProjectUserRemoved {
			e.PreData = role
		} else {
			e.Data = role
		}
	case flagadmin.EventProjectGroupAdded, flagadmin.EventProjectGroupRoleChanged, flagadmin.EventProjectAccessUpdated:
		e.Data = data(func() {
			p.j.obj("")
			p.j.integer("roleId", int64(4+r.IntN(2)))
			p.j.arr("groups")
			for range 1 + r.IntN(2) {
				p.j.integer("", int64(1+r.IntN(max(1, len(w.groups)))))
			}
			p.j.end()
			p.j.arr("users")
			for range r.IntN(4) {
				p.j.integer("", w.users[r.IntN(len(w.users))].ID)
			}
			p.j.end()
			p.j.end()
		})
	case flagadmin.EventProjectFavorited, flagadmin.EventProjectUnfavorited:
		e.Data = data(func() { p.j.obj(""); p.j.str("project", w.projects[s.project].ID); p.j.end() })
	case flagadmin.EventProjectEnvironmentAdded, flagadmin.EventEnvironmentCreated, flagadmin.EventEnvironmentUpdated:
		e.Data = data(func() {
			p.j.obj("")
			p.j.str("name", env)
			p.j.str("type", env)
			p.j.boolean("enabled", true)
			p.j.integer("sortOrder", int64(s.env))
			p.j.end()
		})
	case flagadmin.EventSegmentCreated, flagadmin.EventSegmentUpdated:
		e.Data = data(func() { p.segment(s.project) })
		if s.typ == flagadmin.EventSegmentUpdated {
			e.PreData = data(func() { p.segment(s.project) })
		}
	case flagadmin.EventClientRegister, flagadmin.EventApplicationCreated, flagadmin.EventClientMetrics:
		e.Data = data(func() { p.client(s.typ, s.at) })
	case flagadmin.EventUserCreated, flagadmin.EventUserUpdated, flagadmin.EventUserDeleted,
		flagadmin.EventServiceAccountCreated, flagadmin.EventServiceAccountUpdated:
		u := w.users[r.IntN(len(w.users))]
		user := func() rawJSON { return data(func() { p.user(u) }) }
		switch s.typ {
		case flagadmin.EventUserDeleted:
			e.PreData = user()
		case flagadmin.EventUserUpdated, flagadmin.EventServiceAccountUpdated:
			e.Data, e.PreData = user(), user()
		default:
			e.Data = user()
		}
	case flagadmin.EventAPITokenCreated, flagadmin.EventAPITokenDeleted:
		tok := data(func() {
			p.j.obj("")
			p.j.str("tokenName", fmt.Sprintf("%s-%s", areas[r.IntN(len(areas))], components[r.IntN(len(components))]))
			p.j.str("type", "client")
			p.j.str("project", w.projects[r.IntN(len(w.projects))].ID)
			p.j.str("environment", environments[r.IntN(len(environments))])
			p.j.end()
		})
		if s.typ == flagadmin.EventAPITokenDeleted {
			e.PreData = tok
		} else {
			e.Data = tok
		}
	case flagadmin.EventPATCreated, flagadmin.EventPATDeleted:
		u := w.users[r.IntN(len(w.users))]
		e.Data = data(func() {
			p.j.obj("")
			p.j.str("description", "token for "+u.Username)
			p.j.integer("userId", u.ID)
			p.j.str("expiresAt", time.UnixMilli(s.at).UTC().AddDate(0, 6, 0).Format(flagadmin.TimeLayout))
			p.j.end()
		})
	case flagadmin.EventContextFieldCreated, flagadmin.EventContextFieldUpdated:
		e.Data = data(func() { p.contextField() })
		if s.typ == flagadmin.EventContextFieldUpdated {
			e.PreData = data(func() { p.contextField() })
		}
	case flagadmin.EventTagCreated, flagadmin.EventTagDeleted, flagadmin.EventTagTypeCreated:
		t := drawTags(r, w.projects[r.IntN(len(w.projects))].ID)
		if len(t) == 0 {
			t = []flagadmin.Tag{{Type: "simple", Value: "reviewed"}}
		}
		e.Data = data(func() {
			p.j.obj("")
			if s.typ == flagadmin.EventTagTypeCreated {
				p.j.str("name", t[0].Type)
				p.j.str("description", "Tags of type "+t[0].Type)
			} else {
				p.j.str("type", t[0].Type)
				p.j.str("value", t[0].Value)
			}
			p.j.end()
		})
	case flagadmin.EventGroupUserAdded, flagadmin.EventGroupUserRemoved, flagadmin.EventGroupUpdated:
		e.Data = data(func() {
			p.j.obj("")
			if len(w.groups) > 0 {
				g := w.groups[r.IntN(len(w.groups))]
				p.j.integer("groupId", g.ID)
				p.j.str("name", g.Name)
			}
			p.j.integer("userId", w.users[r.IntN(len(w.users))].ID)
			p.j.end()
		})
	case flagadmin.EventAddonConfigCreated, flagadmin.EventAddonConfigUpdated:
		e.Data = data(func() { p.addon() })
	default:
		e.Data = data(func() { p.generic(s) })
	}
}

// rawJSON is a compact JSON object as events hold it.
type rawJSON = []byte

// strategy writes strategy number slot of the feature in env, of the
// strategy name sname ("" draws one), and returns its name; planted adds a
// constraint naming RareCustomer.
func (p *payloads) strategy(feature int32, env string, slot int, planted bool, sname string) string {
	j, r := &p.j, p.r
	name := p.w.features[feature].Name
	j.obj("")
	j.str("id", strategyID(p.w.cfg.Seed, feature, env, slot))
	if sname == "" {
		sname = strategyNames[r.IntN(len(strategyNames))]
	}
	j.str("name", sname)
	j.str("title", "")
	j.boolean("disabled", r.Float64() < 0.05)
	j.str("featureName", name)
	j.str("environment", env)
	j.obj("parameters")
	switch sname {
	case "flexibleRollout":
		j.str("groupId", name)
		j.str("rollout", strconv.Itoa([]int{0, 5, 10, 25, 33, 50, 75, 90, 100}[r.IntN(9)]))
		j.str("stickiness", []string{"default", "userId", "sessionId"}[r.IntN(3)])
	case "userWithId":
		ids := make([]string, 1+r.IntN(6))
		for i := range ids {
			ids[i] = strconv.Itoa(1000 + r.IntN(900000))
		}
		j.str("userIds", strings.Join(ids, ","))
	case "remoteAddress":
		j.str("IPs", fmt.Sprintf("10.%d.0.0/16,192.168.%d.0/24", r.IntN(256), r.IntN(256)))
	case "applicationHostname":
		j.str("hostNames", fmt.Sprintf("web-%d,web-%d", r.IntN(20), 20+r.IntN(20)))
	}
	j.end()
	j.arr("constraints")
	n := r.IntN(3)
	for range n {
		p.constraint(contextFields[r.IntN(len(contextFields))])
	}
	if planted {
		j.obj("")
		j.arr("values")
		j.str("", RareCustomer)
		j.str("", customers[r.IntN(len(customers))])
		j.end()
		j.boolean("inverted", false)
		j.str("operator", "IN")
		j.str("contextName", "tenantId")
		j.boolean("caseInsensitive", false)
		j.end()
	}
	j.end()
	j.arr("variants")
	j.end()
	j.arr("segments")
	if r.Float64() < 0.15 {
		j.integer("", int64(1+r.IntN(30)))
	}
	j.end()
	j.integer("sortOrder", int64(slot))
	j.end()
	return sname
}

// constraint writes a constraint on the context field.
func (p *payloads) constraint(field string) {
	j, r := &p.j, p.r
	op := "IN"
	var values []string
	switch field {
	case "tenantId":
		for range 1 + r.IntN(3) {
			values = append(values, customers[r.IntN(len(customers))])
		}
	case "region":
		values = []string{regions[r.IntN(len(regions))], regions[r.IntN(len(regions))]}
	case "country":
		for range 1 + r.IntN(4) {
			values = append(values, countries[r.IntN(len(countries))])
		}
	case "plan":
		values = []string{plans[r.IntN(len(plans))]}
		if r.Float64() < 0.3 {
			op = "NOT_IN"
		}
	case "appName":
		values = []string{areas[r.IntN(len(areas))] + "-" + components[r.IntN(len(components))]}
	case "userId":
		for range 1 + r.IntN(5) {
			values = append(values, strconv.Itoa(1000+r.IntN(900000)))
		}
	case "sessionId":
		op, values = "STR_STARTS_WITH", []string{"sess-" + strconv.Itoa(r.IntN(100))}
	case "currentTime":
		op = "DATE_AFTER"
		j.obj("")
		j.str("value", time.UnixMilli(p.w.startMs+r.Int64N(p.w.endMs-p.w.startMs)).UTC().Format(flagadmin.TimeLayout))
		j.boolean("inverted", false)
		j.str("operator", op)
		j.str("contextName", field)
		j.boolean("caseInsensitive", false)
		j.end()
		return
	}
	j.obj("")
	j.arr("values")
	for _, v := range values {
		j.str("", v)
	}
	j.end()
	j.boolean("inverted", r.Float64() < 0.05)
	j.str("operator", op)
	j.str("contextName", field)
	j.boolean("caseInsensitive", r.Float64() < 0.1)
	j.end()
}

// strategyID returns a stable UUID for strategy slot of a feature in env.
func strategyID(seed uint64, feature int32, env string, slot int) string {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, x := range []uint64{uint64(feature), uint64(len(env)) << 8, uint64(env[0]), uint64(slot)} {
		h = splitmix(h ^ x)
	}
	lo := splitmix(h)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, uint16(lo>>48)&0x3fff|0x8000, lo&0xffffffffffff)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// feature writes a feature as feature events describe it.
func (p *payloads) feature(f *flagadmin.Feature, at int64, phrase int) {
	j := &p.j
	j.obj("")
	j.str("name", f.Name)
	j.str("description", descriptionPhrases[phrase])
	j.str("type", string(f.Type))
	j.str("project", f.Project)
	j.boolean("stale", f.Stale)
	j.boolean("impressionData", p.r.Float64() < 0.2)
	j.str("createdAt", f.CreatedAt.Format(flagadmin.TimeLayout))
	j.str("updatedAt", time.UnixMilli(at).UTC().Format(flagadmin.TimeLayout))
	j.arr("dependencies")
	j.end()
	j.end()
}

func (p *payloads) variants(feature string) {
	j, r := &p.j, p.r
	j.obj("")
	j.arr("variants")
	n := 2 + r.IntN(3)
	for i := range n {
		j.obj("")
		j.str("name", variantNames[(i+r.IntN(2))%len(variantNames)])
		j.integer("weight", int64(1000/n))
		j.str("weightType", "variable")
		j.str("stickiness", "default")
		if r.Float64() < 0.5 {
			j.obj("payload")
			j.str("type", "json")
			j.str("value", fmt.Sprintf(`{"layout":"%s","limit":%d}`, variantNames[r.IntN(len(variantNames))], 10*r.IntN(10)))
			j.end()
		}
		j.end()
	}
	j.end()
	j.str("featureName", feature)
	j.end()
}

func (p *payloads) strategyOrder(feature int32, env string, slots []int) {
	j := &p.j
	j.obj("")
	j.arr("strategyIds")
	for _, s := range slots {
		j.str("", strategyID(p.w.cfg.Seed, feature, env, s))
	}
	j.end()
	j.end()
}

func (p *payloads) changeRequest(s *skel, f *flagadmin.Feature, env string) {
	j, r := &p.j, p.r
	state := map[string]string{
		flagadmin.EventChangeRequestCreated:  "Draft",
		flagadmin.EventChangeRequestApproved: "Approved",
		flagadmin.EventChangeRequestApplied:  "Applied",
		flagadmin.EventChangeRequestRejected: "Rejected",
	}[s.typ]
	j.obj("")
	j.integer("changeRequestId", int64(1+r.IntN(50000)))
	j.str("environment", env)
	j.str("state", state)
	j.str("title", fmt.Sprintf("Roll out %s to %s", f.Name, customers[r.IntN(len(customers))]))
	j.arr("changes")
	j.obj("")
	j.integer("id", int64(1+r.IntN(200000)))
	j.str("action", []string{"updateStrategy", "addStrategy", "updateEnabled"}[r.IntN(3)])
	j.str("feature", f.Name)
	j.key("payload")
	p.strategy(s.feature, env, r.IntN(2), false, "")
	j.end()
	j.end()
	j.end()
}

func (p *payloads) project(pr *flagadmin.Project, description string) {
	j := &p.j
	j.obj("")
	j.str("id", pr.ID)
	j.str("name", pr.Name)
	j.str("description", description)
	j.str("mode", string(pr.Mode))
	j.str("defaultStickiness", "default")
	j.integer("featureLimit", 0)
	j.end()
}

func (p *payloads) segment(project int32) {
	j, r := &p.j, p.r
	j.obj("")
	j.integer("id", int64(1+r.IntN(30)))
	j.str("name", []string{"beta-customers", "internal-staff", "eu-users", "enterprise-plan", "early-adopters"}[r.IntN(5)])
	j.str("description", "Users targeted by several features")
	j.str("project", p.w.projects[project].ID)
	j.arr("constraints")
	for range 1 + r.IntN(2) {
		p.constraint(contextFields[r.IntN(len(contextFields))])
	}
	j.end()
	j.end()
}

func (p *payloads) client(typ string, at int64) {
	j, r := &p.j, p.r
	app := areas[r.IntN(len(areas))] + "-" + components[r.IntN(len(components))]
	j.obj("")
	j.str("appName", app)
	if typ == flagadmin.EventApplicationCreated {
		j.str("description", "Registered by its SDK")
		j.end()
		return
	}
	j.str("instanceId", fmt.Sprintf("%s-%x", app, r.Uint32()))
	j.str("sdkVersion", sdkVersions[r.IntN(len(sdkVersions))])
	j.str("environment", environments[r.IntN(len(environments))])
	j.str("started", time.UnixMilli(at).UTC().Format(flagadmin.TimeLayout))
	j.integer("interval", 15000)
	if typ == flagadmin.EventClientMetrics {
		j.obj("bucket")
		j.obj("toggles")
		for range 1 + r.IntN(3) {
			j.obj(p.w.features[r.IntN(len(p.w.features))].Name)
			j.integer("yes", int64(r.IntN(5000)))
			j.integer("no", int64(r.IntN(5000)))
			j.end()
		}
		j.end()
		j.end()
	} else {
		j.arr("strategies")
		for _, s := range []string{"default", "flexibleRollout", "userWithId", "remoteAddress", "applicationHostname"} {
			j.str("", s)
		}
		j.end()
	}
	j.end()
}

func (p *payloads) user(u flagadmin.User) {
	j := &p.j
	j.obj("")
	j.integer("id", u.ID)
	j.str("name", u.Name)
	j.str("username", u.Username)
	if u.Email != "" {
		j.str("email", u.Email)
	}
	j.str("rootRole", string(u.RootRole))
	j.boolean("isService", u.IsService)
	j.end()
}

func (p *payloads) contextField() {
	j, r := &p.j, p.r
	field := contextFields[r.IntN(len(contextFields))]
	j.obj("")
	j.str("name", field)
	j.str("description", "Context field "+field+" sent by the SDKs")
	j.boolean("stickiness", r.Float64() < 0.3)
	j.arr("legalValues")
	for range r.IntN(4) {
		j.obj("")
		j.str("value", plans[r.IntN(len(plans))])
		j.str("description", "Customers on this plan")
		j.end()
	}
	j.end()
	j.end()
}

func (p *payloads) addon() {
	j, r := &p.j, p.r
	j.obj("")
	j.str("provider", []string{"slack", "webhook", "teams", "datadog"}[r.IntN(4)])
	j.str("description", "Notify the on-call channel")
	j.boolean("enabled", true)
	j.obj("parameters")
	j.str("url", "https://hooks.example.com/services/T000/B000")
	j.str("defaultChannel", "#feature-flags")
	j.end()
	j.arr("events")
	j.str("", flagadmin.EventFeatureCreated)
	j.str("", flagadmin.EventFeatureEnvironmentEnabled)
	j.str("", flagadmin.EventFeatureEnvironmentDisabled)
	j.end()
	j.end()
}

func (p *payloads) generic(s *skel) {
	j, r := &p.j, p.r
	j.obj("")
	j.integer("id", int64(1+r.IntN(1000)))
	j.str("name", areas[r.IntN(len(areas))]+"-"+strings.TrimSuffix(s.typ, "-updated"))
	j.str("description", "Changed through the admin UI")
	j.end()
}

// jsonWriter appends compact JSON to a buffer, placing commas itself.
type jsonWriter struct {
	b        []byte
	open     []byte // closing bracket of each open container
	wrote    []bool // whether the container at that depth has an element
	afterKey bool
}

func (j *jsonWriter) reset() {
	j.b, j.open, j.wrote, j.afterKey = j.b[:0], j.open[:0], j.wrote[:0], false
}

// bytes returns a copy of what was written.
func (j *jsonWriter) bytes() []byte { return slices.Clone(j.b) }

// elem starts a value: the key when key is not empty, else a comma if needed.
func (j *jsonWriter) elem(key string) {
	if key != "" {
		j.key(key)
	}
	if j.afterKey {
		j.afterKey = false
		return
	}
	if n := len(j.wrote); n > 0 {
		if j.wrote[n-1] {
			j.b = append(j.b, ',')
		}
		j.wrote[n-1] = true
	}
}

// key writes an object key; the next value belongs to it.
func (j *jsonWriter) key(k string) {
	j.elem("")
	j.b = appendString(j.b, k)
	j.b = append(j.b, ':')
	j.afterKey = true
}

func (j *jsonWriter) obj(key string) { j.push(key, '{', '}') }
func (j *jsonWriter) arr(key string) { j.push(key, '[', ']') }

func (j *jsonWriter) push(key string, open, close byte) {
	j.elem(key)
	j.b = append(j.b, open)
	j.open = append(j.open, close)
	j.wrote = append(j.wrote, false)
}

// end closes the innermost open object or array.
func (j *jsonWriter) end() {
	n := len(j.open) - 1
	j.b = append(j.b, j.open[n])
	j.open, j.wrote = j.open[:n], j.wrote[:n]
}

func (j *jsonWriter) str(key, v string) {
	j.elem(key)
	j.b = appendString(j.b, v)
}

func (j *jsonWriter) integer(key string, v int64) {
	j.elem(key)
	j.b = strconv.AppendInt(j.b, v, 10)
}

func (j *jsonWriter) boolean(key string, v bool) {
	j.elem(key)
	j.b = strconv.AppendBool(j.b, v)
}

// plain reports whether s is printable ASCII that JSON writes as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendString appends s as a JSON string, escaped as encoding/json would.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	if plain(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c == '<' || c == '>' || c == '&':
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == '\u2028' || r == '\u2029' {
				b = append(b, `\u202`...)
				b = append(b, hexDigits[r&0xf])
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}
