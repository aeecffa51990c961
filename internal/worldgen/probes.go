package worldgen

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Profile counts a world's events by the columns the event search filters
// on. It is exact: it walks the same skeletons Events turns into events.
type Profile struct {
	// Total is the number of events.
	Total int
	// ByType, ByProject, ByFeature and ByCreatedBy (createdByUserId) count
	// the events with each value; events without a project or feature are
	// not in ByProject or ByFeature.
	ByType      map[string]int
	ByProject   map[string]int
	ByFeature   map[string]int
	ByCreatedBy map[int64]int
	// ByMonth counts events by the UTC month of createdAt, keyed "2006-01".
	ByMonth map[string]int
	// WithProject and WithFeature count events with a project, and with a feature.
	WithProject, WithFeature int
	// Rare counts the events whose payload contains RareWord.
	Rare int
	// SameMillisecond counts events whose createdAt equals the previous event's.
	SameMillisecond int
	// Bursts counts the events that carry a groupId.
	Bursts int
	// First and Last are the createdAt of the first and the last event.
	First, Last time.Time
}

// Profile returns the world's event counts, computed on first use (a pass
// over the skeletons, without payloads) and shared afterwards. Treat it as
// read-only.
func (w *World) Profile() *Profile {
	w.profileOnce.Do(func() {
		p := &Profile{
			ByType: map[string]int{}, ByProject: map[string]int{}, ByFeature: map[string]int{},
			ByCreatedBy: map[int64]int{}, ByMonth: map[string]int{},
		}
		g := w.newGen()
		var s skel
		prev := int64(math.MinInt64)
		for g.step(&s) {
			p.Total++
			p.ByType[s.typ]++
			if s.project >= 0 {
				p.WithProject++
				p.ByProject[w.projects[s.project].ID]++
			}
			if s.feature >= 0 {
				p.WithFeature++
				p.ByFeature[w.features[s.feature].Name]++
			}
			switch {
			case s.actor >= 0:
				p.ByCreatedBy[w.users[s.actor].ID]++
			case s.actor == actorSystem:
				p.ByCreatedBy[flagadmin.SystemUserID]++
			default:
				p.ByCreatedBy[flagadmin.AdminTokenUserID]++
			}
			at := time.UnixMilli(s.at).UTC()
			p.ByMonth[at.Format("2006-01")]++
			if s.planted {
				p.Rare++
			}
			if s.at == prev {
				p.SameMillisecond++
			}
			if s.group != 0 {
				p.Bursts++
			}
			if p.Total == 1 {
				p.First = at
			}
			p.Last, prev = at, s.at
		}
		w.profile = p
	})
	return w.profile
}

// Probe is an event search whose result count is known: Total is the exact
// number of events of the world that match Params (for a root admin).
type Probe struct {
	// Name says what the probe filters on, such as "feature" or "type-large".
	Name string
	// Params are the query-string parameters of the search, limit 50.
	Params flagadmin.EventSearchParams
	// Total is how many events match.
	Total int
}

// Query returns the parsed form of Params, what Store.SearchEvents takes.
func (p Probe) Query() flagadmin.EventQuery {
	q, err := flagadmin.ParseEventSearch(p.Params)
	if err != nil {
		panic(fmt.Sprintf("worldgen: probe %s: %v", p.Name, err))
	}
	return q
}

// Selectivity returns the share of all events the probe matches.
func (p Probe) Selectivity(total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(p.Total) / float64(total)
}

// Probes returns searches of known selectivity over the world, in this
// order:
//
//   - "none": no filter.
//   - "feature": one feature with about 0.01% of the events.
//   - "project": one project with about 2.5% (between 1% and 5% at the default size).
//   - "type-small": the event type closest to 2.5%.
//   - "type-large": the most frequent event type (over 25%).
//   - "createdBy": the user closest to 2.5%.
//   - "project-any-of-5": IS_ANY_OF five projects of about 1% each.
//   - "date-range": one calendar month, about 4%.
//   - "query": RareWord, planted in about 0.4% of the payloads.
//   - "offset-N": no filter, offset 100000 (half the events in small worlds).
func (w *World) Probes() []Probe {
	prof := w.Profile()
	total := prof.Total
	share := func(f float64) int { return max(1, int(math.Round(f*float64(total)))) }
	limit := "50"
	var out []Probe
	add := func(name string, params flagadmin.EventSearchParams, n int) {
		params.Limit = limit
		out = append(out, Probe{Name: name, Params: params, Total: n})
	}
	add("none", flagadmin.EventSearchParams{}, total)

	features := make([]string, len(w.features))
	for i, f := range w.features {
		features[i] = f.Name
	}
	f := closest(features, prof.ByFeature, share(0.0001))
	add("feature", flagadmin.EventSearchParams{Feature: "IS:" + f}, prof.ByFeature[f])

	projects := make([]string, len(w.projects))
	for i, p := range w.projects {
		projects[i] = p.ID
	}
	pr := closest(projects, prof.ByProject, share(0.025))
	add("project", flagadmin.EventSearchParams{Project: "IS:" + pr}, prof.ByProject[pr])

	types := flagadmin.EventTypes()
	small := closest(types, prof.ByType, share(0.025))
	add("type-small", flagadmin.EventSearchParams{Type: "IS:" + small}, prof.ByType[small])
	large := slices.MaxFunc(types, func(a, b string) int {
		return cmp.Or(cmp.Compare(prof.ByType[a], prof.ByType[b]), cmp.Compare(b, a))
	})
	add("type-large", flagadmin.EventSearchParams{Type: "IS:" + large}, prof.ByType[large])

	users := make([]int64, len(w.users))
	for i, u := range w.users {
		users[i] = u.ID
	}
	u := closest(users, prof.ByCreatedBy, share(0.025))
	add("createdBy", flagadmin.EventSearchParams{CreatedBy: "IS:" + strconv.FormatInt(u, 10)}, prof.ByCreatedBy[u])

	others := slices.DeleteFunc(slices.Clone(projects), func(id string) bool { return id == pr })
	target := share(0.01)
	slices.SortStableFunc(others, func(a, b string) int {
		return cmp.Compare(distance(prof.ByProject[a], target), distance(prof.ByProject[b], target))
	})
	anyOf := others[:min(5, len(others))]
	n := 0
	for _, id := range anyOf {
		n += prof.ByProject[id]
	}
	value := "IS_ANY_OF:"
	for i, id := range anyOf {
		if i > 0 {
			value += ","
		}
		value += id
	}
	add(fmt.Sprintf("project-any-of-%d", len(anyOf)), flagadmin.EventSearchParams{Project: value}, n)

	mid := time.UnixMilli(w.startMs + (w.endMs-w.startMs)*6/10).UTC()
	from := time.Date(mid.Year(), mid.Month(), 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, -1)
	add("date-range", flagadmin.EventSearchParams{From: "IS:" + from.Format(time.DateOnly), To: "IS:" + to.Format(time.DateOnly)}, prof.ByMonth[from.Format("2006-01")])

	add("query", flagadmin.EventSearchParams{Query: RareWord}, prof.Rare)

	offset := 100_000
	if total < 2*offset {
		offset = total / 2
	}
	add(fmt.Sprintf("offset-%d", offset), flagadmin.EventSearchParams{Offset: strconv.Itoa(offset)}, total)
	return out
}

// Probe returns the probe with this name.
func (w *World) Probe(name string) (Probe, bool) {
	for _, p := range w.Probes() {
		if p.Name == name {
			return p, true
		}
	}
	return Probe{}, false
}

// closest returns the candidate whose count is nearest to target; the
// first one in candidates' order on a tie.
func closest[K comparable](candidates []K, counts map[K]int, target int) K {
	best := candidates[0]
	for _, c := range candidates[1:] {
		if distance(counts[c], target) < distance(counts[best], target) {
			best = c
		}
	}
	return best
}

func distance(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}
