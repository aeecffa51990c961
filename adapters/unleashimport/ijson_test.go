package unleashimport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
	"github.com/flagadmin/flagadmin/internal/unleashfixture"
)

// unleashNonIJSON are data texts an Unleash database can hold (its events'
// data is PostgreSQL json, kept as written) that are not I-JSON, with the
// normal form flagadmin stores, shows and commits to on import. (PostgreSQL
// refuses unpaired surrogates and bytes that are not UTF-8: the domain's
// tests cover those.)
var unleashNonIJSON = []nonIJSONCase{
	{`{"n":9007199254740993}`, `{"n":9007199254740992}`, "", "data: a number beyond double precision: the nearest double"},
	{`{"n":99999999999999999999}`, `{"n":100000000000000000000}`, "", "data: a number beyond double precision: the nearest double"},
	{`{"n":[0.30000000000000000001,1e-400]}`, `{"n":[0.3,0]}`, "", "data: a number beyond double precision: the nearest double"},
	// pre_data is jsonb: PostgreSQL writes 1e400 with its 401 digits
	// and keeps the last of repeated names, in its own order.
	{`{"n":1e400,"m":[-1e400]}`, `{"n":"1e400","m":["-1e400"]}`,
		`{"m":["-1` + strings.Repeat("0", 400) + `"],"n":"1` + strings.Repeat("0", 400) + `"}`,
		"data: a number beyond the range of a double: the string of its text"},
	{`{"a":1,"b":2,"a":3}`, `{"b":2,"a":3}`, `{"a":3,"b":2}`, "data: a member name given twice: the last member kept"},
}

// nonIJSONCase is data inserted as an Unleash event's data and pre_data,
// and its normal form from each (wantPre when it differs).
type nonIJSONCase struct{ data, want, wantPre, note string }

// TestImportNormalizesEvents: events whose data is not I-JSON are imported
// (into a seed file too) in the log's normal form, counted as mapped down
// with what changed, and their content is what a strict RFC 8785
// implementation writes. TestFollowNormalizesEvents checks following.
func TestImportNormalizesEvents(t *testing.T) {
	url := unleashfixture.Restore(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ids := make([]int64, len(unleashNonIJSON))
	for i, c := range unleashNonIJSON {
		err := conn.QueryRow(ctx, `INSERT INTO events (type, created_by, created_by_user_id, data, pre_data, created_at)
			VALUES ('feature-updated', 'i-json', 3, $1::json, $1::json, now()) RETURNING id`, c.data).Scan(&ids[i])
		if err != nil {
			t.Fatalf("insert %s: %v", c.data, err)
		}
	}

	st := saltingLoader{memstore.New()}
	sum, err := unleashimport.Import(ctx, openSource(t, url), st, unleashimport.Options{})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	page, err := st.Store.SearchEvents(ctx, flagadmin.EventQuery{Limit: 100, IDs: ids})
	if err != nil || len(page.Events) != len(ids) {
		t.Fatalf("imported events: %d, %v; want %d", len(page.Events), err, len(ids))
	}
	byID := map[int64]flagadmin.Event{}
	for _, e := range page.Events {
		byID[e.ID] = e
	}
	for i, c := range unleashNonIJSON {
		e := byID[ids[i]]
		if string(e.Data) != c.want || string(e.PreData) != c.pre() {
			t.Errorf("%s: imported data %s, preData %s; want %s, %s", c.data, e.Data, e.PreData, c.want, c.pre())
		}
		checkStrictContent(t, e)
		if n := sum.Kind("events").MappedDown[c.note]; n == 0 {
			t.Errorf("summary: no events mapped down for %q in %v", c.note, sum.Kind("events").MappedDown)
		}
	}

	// A seed file holds the same normal form, which its loading keeps.
	var seedFile bytes.Buffer
	if _, err := unleashimport.WriteSeed(ctx, openSource(t, url), &seedFile, unleashimport.Options{}); err != nil {
		t.Fatal(err)
	}
	seed, err := flagadmin.ParseSeed(&seedFile)
	if err != nil {
		t.Fatalf("ParseSeed: %v", err)
	}
	found := 0
	for _, e := range seed.Events {
		if e.CreatedBy != "i-json" {
			continue
		}
		c := unleashNonIJSON[found]
		if !jsonSame(e.Data, c.want) || !jsonSame(e.PreData, c.pre()) {
			t.Errorf("%s: seed data %s, preData %s; want %s, %s", c.data, e.Data, e.PreData, c.want, c.pre())
		}
		found++
	}
	if found != len(unleashNonIJSON) {
		t.Errorf("seed: %d of the events, want %d", found, len(unleashNonIJSON))
	}
}

// pre is the normal form of c.data as pre_data (jsonb) holds it.
func (c nonIJSONCase) pre() string {
	if c.wantPre != "" {
		return c.wantPre
	}
	return c.want
}

// jsonSame reports whether raw is the JSON text want, but for white space.
func jsonSame(raw json.RawMessage, want string) bool {
	var b bytes.Buffer
	return json.Compact(&b, raw) == nil && b.String() == want
}

// checkStrictContent checks that the content e's leaf commits to is
// accepted by a strict RFC 8785 implementation and left unchanged.
func checkStrictContent(t *testing.T, e flagadmin.Event) {
	t.Helper()
	content, err := leaf.EventContent(e)
	if err != nil {
		t.Fatalf("EventContent of event %d: %v", e.ID, err)
	}
	if strict, err := jcs.Transform(content); err != nil || !bytes.Equal(strict, content) {
		t.Errorf("gowebpki/jcs on event %d's content: %s, %v; want it unchanged:\n%s", e.ID, strict, err, content)
	}
}

// saltingLoader gives every event it loads a salt: the stores draw it
// themselves (leaf.NewSalt) once they keep salts; until then this
// stands in.
type saltingLoader struct{ *memstore.Store }

func (s saltingLoader) Load(ctx context.Context, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	c := *b
	c.Events = salted(b.Events)
	return s.Store.Load(ctx, &c, func(emit func([]flagadmin.Event) error) error {
		return events(func(batch []flagadmin.Event) error { return emit(salted(batch)) })
	})
}

// TestFollowNormalizesEvents: events written in Unleash while it is
// followed are stored in the normal form, as imported ones are.
func TestFollowNormalizesEvents(t *testing.T) {
	url := unleashfixture.Restore(t)
	store := saltingFollowStore{memstore.New()}
	r := startFollower(t, url, store, unleashimport.FollowOptions{})
	caughtUp(t, r, fixtureEvents)
	u := connect(t, url)
	ids := make([]int64, len(unleashNonIJSON))
	for i, c := range unleashNonIJSON {
		ids[i] = u.event(nil, "feature-updated", ptr("default"), nil, c.data)
	}
	caughtUp(t, r, ids[len(ids)-1])
	for i, c := range unleashNonIJSON {
		page, err := store.SearchEvents(context.Background(), flagadmin.EventQuery{Limit: 1, IDs: []int64{ids[i]}})
		if err != nil || len(page.Events) != 1 {
			t.Fatalf("followed event %d: %+v, %v", ids[i], page, err)
		}
		if e := page.Events[0]; string(e.Data) != c.want {
			t.Errorf("%s: followed data %s, want %s", c.data, e.Data, c.want)
		}
		checkStrictContent(t, page.Events[0])
	}
}

// saltingFollowStore gives every event it is given a salt, as
// saltingLoader does.
type saltingFollowStore struct{ *memstore.Store }

func (s saltingFollowStore) LoadFollow(ctx context.Context, holder string, now time.Time, st follow.State, b *flagadmin.Batch, events func(emit func([]flagadmin.Event) error) error) error {
	return s.Store.LoadFollow(ctx, holder, now, st, b, func(emit func([]flagadmin.Event) error) error {
		return events(func(batch []flagadmin.Event) error { return emit(salted(batch)) })
	})
}

func (s saltingFollowStore) ApplyFollow(ctx context.Context, holder string, now time.Time, b *follow.Batch) error {
	c := *b
	c.Events = salted(b.Events)
	return s.Store.ApplyFollow(ctx, holder, now, &c)
}

// salted returns events, each with a salt.
func salted(events []flagadmin.Event) []flagadmin.Event {
	out := slices.Clone(events)
	for i := range out {
		if out[i].Salt == nil {
			out[i].Salt = leaf.NewSalt()
		}
	}
	return out
}
