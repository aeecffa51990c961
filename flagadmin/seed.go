package flagadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Seed is a whole world to load into a store (the seed file format, see
// README). Every key is optional.
type Seed struct {
	Users           []User      `json:"users"`
	ServiceAccounts []User      `json:"serviceAccounts"`
	Groups          []Group     `json:"groups"`
	Projects        []Project   `json:"projects"`
	Features        []Feature   `json:"features"`
	APITokens       []SeedToken `json:"apiTokens"`
	Events          []Event     `json:"events"`
}

// SeedToken is a token of a seed file, with its secret in clear.
type SeedToken struct {
	// Secret is the full value a client sends in Authorization.
	Secret string `json:"secret"`
	// Type is admin, client or frontend; omitted with UserID for a personal token.
	Type      TokenType  `json:"type,omitempty"`
	Name      string     `json:"name,omitempty"`
	UserID    *int64     `json:"userId,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// ParseSeed reads a seed file (JSON). Unknown keys and malformed entries are
// validation errors that name the entry, such as "projects[2].createdAt".
func ParseSeed(r io.Reader) (*Seed, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read seed: %w", err)
	}
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(data, &sections); err != nil {
		return nil, invalid("", "the seed file is not a JSON object: %v", err)
	}
	seed := &Seed{}
	targets := map[string]func(i int, raw json.RawMessage) error{
		"users":           entryDecoder(&seed.Users),
		"serviceAccounts": entryDecoder(&seed.ServiceAccounts),
		"groups":          entryDecoder(&seed.Groups),
		"projects":        entryDecoder(&seed.Projects),
		"features":        entryDecoder(&seed.Features),
		"apiTokens":       entryDecoder(&seed.APITokens),
		"events":          entryDecoder(&seed.Events),
	}
	var f fieldErrors
	for _, key := range slices.Sorted(maps.Keys(sections)) {
		raw := sections[key]
		decode, ok := targets[key]
		if !ok {
			f.add(key, "unknown key; the seed file has users, serviceAccounts, groups, projects, features, apiTokens, events")
			continue
		}
		var entries []json.RawMessage
		if err := json.Unmarshal(raw, &entries); err != nil {
			f.add(key, "must be an array")
			continue
		}
		for i, e := range entries {
			if err := decode(i, e); err != nil {
				field, msg := decodeFailure(err)
				f.add(fmt.Sprintf("%s[%d]%s", key, i, field), "%s", msg)
			}
		}
	}
	if v := f.err(); v != nil {
		return nil, v
	}
	return seed, nil
}

// entryDecoder appends each decoded entry to *dst, rejecting unknown fields.
// A failure is an *entryFieldError when the offending field can be told.
func entryDecoder[T any](dst *[]T) func(int, json.RawMessage) error {
	return func(_ int, raw json.RawMessage) error {
		v, err := decodeStrict[T](raw)
		if err != nil {
			return locateField[T](raw, err)
		}
		*dst = append(*dst, v)
		return nil
	}
}

func decodeStrict[T any](raw []byte) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&v)
	return v, err
}

// entryFieldError is the decoding error of one field of an entry.
type entryFieldError struct {
	field string
	err   error
}

func (e *entryFieldError) Error() string { return e.field + ": " + e.err.Error() }
func (e *entryFieldError) Unwrap() error { return e.err }

// locateField names the field of the object raw that err, its decoding
// error, is about: from a type error, else by decoding the fields one at a
// time (an unknown field or a malformed date says nothing of where it is).
func locateField[T any](raw json.RawMessage, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &entryFieldError{field: te.Field, err: err}
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		if _, ferr := decodeStrict[T](one); ferr != nil {
			return &entryFieldError{field: k, err: ferr}
		}
	}
	return err
}

// decodeFailure turns a JSON decoding error into the path suffix of the
// offending field (".mode", or empty) and a message without Go type names.
func decodeFailure(err error) (field, msg string) {
	var fe *entryFieldError
	if errors.As(err, &fe) {
		field = "." + fe.field
	}
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch {
	case errors.As(err, &te):
		return field, fmt.Sprintf("wrong type (got JSON %s)", te.Value)
	case errors.As(err, &pe):
		return field, fmt.Sprintf("%q is not an RFC 3339 date", pe.Value)
	case fe != nil && strings.HasPrefix(fe.err.Error(), "json: unknown field "):
		return field, "unknown field"
	case fe != nil:
		return field, strings.TrimPrefix(fe.err.Error(), "json: ")
	}
	return field, strings.TrimPrefix(err.Error(), "json: ")
}

// LoadSeed parses a seed file and applies it (see ApplySeed).
func (s *Service) LoadSeed(ctx context.Context, r io.Reader) error {
	seed, err := ParseSeed(r)
	if err != nil {
		return err
	}
	return s.ApplySeed(ctx, seed)
}

// Loader is a store that loads a whole world into itself while it is
// empty, in bulk: the rows of a batch, then the events that events passes
// to emit, batch by batch, each keeping its id; all or nothing, with no
// storage deadline (it takes as long as the data does), and building what
// the store derives from the events (the log's leaves, the indexes) as a
// load builds it. It refuses a store that is not empty with ErrConflict.
// Imports and seeds into an empty store use it; the stores of
// adapters/bunstore and adapters/memstore implement it.
type Loader interface {
	// Contents counts what the store holds, by kind ("users", "groups",
	// "projects", "features", "tokens", "events"); all 0 when empty.
	Contents(ctx context.Context) (map[string]int64, error)
	// Load writes b (without Then) and the events events emits.
	Load(ctx context.Context, b *Batch, events func(emit func([]Event) error) error) error
}

// WithLoader sets the bulk path ApplySeed takes into an empty store, for a
// Service whose store is a wrapper (a cache) of l: by default the store
// itself when it is a Loader. l must write the store the Service reads.
func WithLoader(l Loader) Option { return func(s *Service) { s.loader = l } }

// SeedOption tunes ApplySeed.
type SeedOption func(*seedOptions)

type seedOptions struct {
	progress func(loaded, total int)
}

// WithSeedProgress has ApplySeed call progress(loaded, total) as it loads
// the events of a seed into an empty store in bulk: after each batch of
// events it passes to the store, the last with loaded == total (before the
// store builds its indexes and commits).
func WithSeedProgress(progress func(loaded, total int)) SeedOption {
	return func(o *seedOptions) { o.progress = progress }
}

// seedLoadBatch is how many events a seed's load passes to the store at a
// time.
const seedLoadBatch = 5000

// ApplySeed validates a seed and writes it to the store in one transaction:
// everything or, when any entry is wrong, nothing. Errors name the entry
// ("projects[2].mode: must be one of ..."). References must resolve within
// the seed or to rows already in the store; ids and names must be new.
// Loading records no events of its own: the store gets exactly the seed's
// events, in file order. Into an empty store that is a Loader (or with
// WithLoader), the seed is a bulk load, with no storage deadline, its
// events getting the ids 1, 2, ... in file order; otherwise it is one
// write.
func (s *Service) ApplySeed(ctx context.Context, seed *Seed, opts ...SeedOption) error {
	var o seedOptions
	for _, opt := range opts {
		opt(&o)
	}
	var f fieldErrors
	c := &seedChecker{s: s, ctx: ctx, f: &f, now: s.now(), users: map[int64]bool{}, groups: map[int64]bool{}, projects: map[string]bool{}, features: map[string]bool{}}
	b, err := c.batch(seed)
	if err != nil {
		return err
	}
	if v := f.err(); v != nil {
		return v
	}
	return s.writeSeed(ctx, b, o.progress)
}

// writeSeed writes the checked batch b of a seed: as a bulk load into an
// empty store that is a Loader, else as one write.
func (s *Service) writeSeed(ctx context.Context, b *Batch, progress func(loaded, total int)) error {
	if s.loader != nil {
		if err := s.CheckWritable(ctx); err != nil {
			return err
		}
		have, err := s.loader.Contents(ctx)
		if err != nil {
			return err
		}
		if isEmpty(have) {
			return loadSeed(ctx, s.loader, b, progress)
		}
	}
	return s.store.Write(ctx, b)
}

// isEmpty reports whether the counts of Loader.Contents are all 0.
func isEmpty(have map[string]int64) bool {
	for _, n := range have {
		if n != 0 {
			return false
		}
	}
	return true
}

// loadSeed loads the checked batch b of a seed into the empty store of l,
// its events numbered 1, 2, ... in order, telling progress (when not nil)
// after each batch of them.
func loadSeed(ctx context.Context, l Loader, b *Batch, progress func(loaded, total int)) error {
	events := b.Events
	rows := *b
	rows.Events = nil
	return l.Load(ctx, &rows, func(emit func([]Event) error) error {
		for start := 0; start < len(events); start += seedLoadBatch {
			batch := slices.Clone(events[start:min(start+seedLoadBatch, len(events))])
			for i := range batch {
				batch[i].ID = int64(start + i + 1)
			}
			if err := emit(batch); err != nil {
				return err
			}
			if progress != nil {
				progress(start+len(batch), len(events))
			}
		}
		return nil
	})
}

// seedChecker checks a seed's ids and references against the seed itself
// and the store.
type seedChecker struct {
	s        *Service
	ctx      context.Context
	f        *fieldErrors
	now      time.Time
	users    map[int64]bool
	groups   map[int64]bool
	projects map[string]bool
	features map[string]bool
}

// batch checks the sections of seed and returns the batch that writes
// them, the problems it finds recorded in c.f. A section is checked after
// the ones its references may name: users and service accounts, groups,
// projects, features, API tokens, events. The error is the store's, when
// a lookup fails.
func (c *seedChecker) batch(seed *Seed) (*Batch, error) {
	b := &Batch{}
	for _, section := range []func(*Seed, *Batch) error{
		c.addUsers, c.addGroups, c.addProjects, c.addFeatures, c.addTokens,
	} {
		if err := section(seed, b); err != nil {
			return nil, err
		}
	}
	for i, e := range seed.Events {
		c.f.merge(fmt.Sprintf("events[%d]", i), normalizeEvent(&e, c.now))
		b.Events = append(b.Events, e)
	}
	return b, nil
}

// addUsers checks the users, then the service accounts, in file order: a
// map would make the entry named by a duplicate id, and the write order,
// random.
func (c *seedChecker) addUsers(seed *Seed, b *Batch) error {
	for _, sec := range []struct {
		key  string
		list []User
	}{{"users", seed.Users}, {"serviceAccounts", seed.ServiceAccounts}} {
		for i, u := range sec.list {
			path := fmt.Sprintf("%s[%d]", sec.key, i)
			u.IsService = sec.key == "serviceAccounts"
			c.f.merge(path, normalizeUser(&u))
			if err := c.freshUserID(path+".id", u.ID); err != nil {
				return err
			}
			b.Users = append(b.Users, u)
		}
	}
	return nil
}

// freshUserID checks a user's id: given, and new to the seed and the store.
// A negative id is reported by normalizeUser.
func (c *seedChecker) freshUserID(path string, id int64) error {
	if id == 0 {
		c.f.add(path, "is required and must be a positive integer")
		return nil
	}
	return fresh(c, path, "user", id, c.users, func() error { _, err := c.s.store.User(c.ctx, id); return err })
}

// addGroups checks the groups: each id given and new, each member a user.
func (c *seedChecker) addGroups(seed *Seed, b *Batch) error {
	for i, g := range seed.Groups {
		path := fmt.Sprintf("groups[%d]", i)
		c.f.merge(path, normalizeGroup(&g))
		if err := c.freshGroupID(path+".id", g.ID); err != nil {
			return err
		}
		for j, uid := range g.Users {
			if err := c.userRef(fmt.Sprintf("%s.users[%d]", path, j), uid); err != nil {
				return err
			}
		}
		b.Groups = append(b.Groups, g)
	}
	return nil
}

// freshGroupID checks a group's id: given, and new to the seed and the
// store. A negative id is reported by normalizeGroup.
func (c *seedChecker) freshGroupID(path string, id int64) error {
	if id == 0 {
		c.f.add(path, "is required and must be a positive integer")
		return nil
	}
	return fresh(c, path, "group", id, c.groups, func() error { _, err := c.s.store.Group(c.ctx, id); return err })
}

// addProjects checks the projects: each id new, each member a user or a
// group, each user who favorited it a user.
func (c *seedChecker) addProjects(seed *Seed, b *Batch) error {
	for i, p := range seed.Projects {
		path := fmt.Sprintf("projects[%d]", i)
		c.f.merge(path, normalizeProject(&p, c.now))
		if err := fresh(c, path+".id", "project", p.ID, c.projects, func() error { _, err := c.s.store.Project(c.ctx, p.ID); return err }); err != nil {
			return err
		}
		for j, m := range p.Members {
			if err := c.memberRef(fmt.Sprintf("%s.members[%d]", path, j), m); err != nil {
				return err
			}
		}
		for j, uid := range p.FavoritedBy {
			if err := c.userRef(fmt.Sprintf("%s.favoritedBy[%d]", path, j), uid); err != nil {
				return err
			}
		}
		b.Projects = append(b.Projects, p)
	}
	return nil
}

// memberRef checks that a project member names a user or a group that
// exists. A member naming both or neither is reported by normalizeProject.
func (c *seedChecker) memberRef(path string, m ProjectMembership) error {
	switch {
	case m.UserID != nil && m.GroupID == nil:
		return c.userRef(path+".userId", *m.UserID)
	case m.GroupID != nil && m.UserID == nil:
		return c.groupRef(path+".groupId", *m.GroupID)
	}
	return nil
}

// addFeatures checks the features: each name new, each project one that
// exists.
func (c *seedChecker) addFeatures(seed *Seed, b *Batch) error {
	for i, ft := range seed.Features {
		path := fmt.Sprintf("features[%d]", i)
		c.f.merge(path, normalizeFeature(&ft, c.now))
		if err := fresh(c, path+".name", "feature", ft.Name, c.features, func() error { _, err := c.s.store.Feature(c.ctx, ft.Name); return err }); err != nil {
			return err
		}
		if ft.Project != "" {
			if err := c.projectRef(path+".project", ft.Project); err != nil {
				return err
			}
		}
		b.Features = append(b.Features, ft)
	}
	return nil
}

// addTokens checks the API tokens: each secret new to the file and the
// store, each user one that exists.
func (c *seedChecker) addTokens(seed *Seed, b *Batch) error {
	secrets := map[string]bool{}
	for i, st := range seed.APITokens {
		path := fmt.Sprintf("apiTokens[%d]", i)
		tok := APIToken{Name: st.Name, Type: st.Type, UserID: st.UserID, ExpiresAt: st.ExpiresAt}
		c.f.merge(path, normalizeToken(&tok, st.Secret, c.now))
		if secrets[st.Secret] {
			c.f.add(path+".secret", "is used by another token of the file")
		}
		secrets[st.Secret] = true
		if err := c.freshSecret(path+".secret", tok.SecretHash); err != nil {
			return err
		}
		if tok.UserID != nil {
			if err := c.userRef(path+".userId", *tok.UserID); err != nil {
				return err
			}
		}
		b.Tokens = append(b.Tokens, tok)
	}
	return nil
}

// freshSecret reports a field error when the store has a token with the
// secret whose hash is hash.
func (c *seedChecker) freshSecret(path, hash string) error {
	_, _, err := c.s.store.LookupToken(c.ctx, hash)
	switch {
	case err == nil:
		c.f.add(path, "a token with this secret already exists")
	case !isKind(err, ErrNotFound):
		return err
	}
	return nil
}

// fresh records id in seen and reports a field error when the seed or the
// store already has it.
func fresh[K comparable](c *seedChecker, path, what string, id K, seen map[K]bool, lookup func() error) error {
	if seen[id] {
		c.f.add(path, "%s %v appears twice in the file", what, id)
		return nil
	}
	seen[id] = true
	err := lookup()
	switch {
	case err == nil:
		c.f.add(path, "%s %v already exists in the store", what, id)
	case !isKind(err, ErrNotFound):
		return err
	}
	return nil
}

// ref reports a field error when id is neither in the seed nor the store.
func ref[K comparable](c *seedChecker, path, what string, id K, seen map[K]bool, lookup func() error) error {
	if seen[id] {
		return nil
	}
	err := lookup()
	if isKind(err, ErrNotFound) {
		c.f.add(path, "%s %v does not exist", what, id)
		return nil
	}
	return err
}

func (c *seedChecker) userRef(path string, id int64) error {
	return ref(c, path, "user", id, c.users, func() error { _, err := c.s.store.User(c.ctx, id); return err })
}

func (c *seedChecker) groupRef(path string, id int64) error {
	return ref(c, path, "group", id, c.groups, func() error { _, err := c.s.store.Group(c.ctx, id); return err })
}

func (c *seedChecker) projectRef(path, id string) error {
	return ref(c, path, "project", id, c.projects, func() error { _, err := c.s.store.Project(c.ctx, id); return err })
}
