package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// BenchmarkSearchByColumn measures the search of a random project's, a
// random feature's and a random type's events (the type's a scan: no
// index), a page of 25 with its total, in a store of 200,000 events over
// 100 projects and 5,000 features (40 events each); each iteration asks for another value.
//
//	go test ./adapters/memstore -run '^$' -bench SearchByColumn -benchtime 2s
func BenchmarkSearchByColumn(b *testing.B) {
	const events, projects, features = 200_000, 100, 5_000
	ctx := context.Background()
	s := memstore.New()
	at := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	types := []string{flagadmin.EventFeatureUpdated, flagadmin.EventFeatureCreated, "feature-strategy-update", "feature-environment-enabled"}
	for start := 0; start < events; start += 10_000 {
		batch := &flagadmin.Batch{}
		for i := start; i < start+10_000; i++ {
			f, p := fmt.Sprintf("flag-%d", i%features), fmt.Sprintf("project-%d", i%features%projects)
			batch.Events = append(batch.Events, flagadmin.Event{Type: types[i%len(types)], CreatedBy: "x", CreatedAt: at.Add(time.Duration(i) * time.Minute),
				Project: &p, FeatureName: &f, Data: []byte(fmt.Sprintf(`{"name":%q,"enabled":true}`, f))})
		}
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		query func(i int) flagadmin.EventQuery
	}{
		{"project", func(i int) flagadmin.EventQuery {
			return flagadmin.EventQuery{Projects: []string{fmt.Sprintf("project-%d", i*37%projects)}, Limit: 25}
		}},
		{"feature", func(i int) flagadmin.EventQuery {
			return flagadmin.EventQuery{Features: []string{fmt.Sprintf("flag-%d", i*7919%features)}, Limit: 25}
		}},
		{"type (scan)", func(i int) flagadmin.EventQuery {
			return flagadmin.EventQuery{Types: []string{types[i%len(types)]}, Limit: 25}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				page, err := s.SearchEvents(ctx, c.query(i))
				if err != nil || len(page.Events) != 25 {
					b.Fatalf("%d events, %v", len(page.Events), err)
				}
				i++
			}
		})
	}
}
