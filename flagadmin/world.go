package flagadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The operations in this file put a world in place for a program that embeds
// flagadmin: accounts, groups, projects, features, tokens and events. Each
// needs the ADMIN permission (use System from the embedding program) and
// records its event in the same transaction as the change.

// actorEvent returns an event of type t caused by p at now.
func actorEvent(p Principal, t string, now time.Time, data any) (Event, error) {
	by, byID := p.Actor()
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{CreatedAt: now, Type: t, CreatedBy: by, CreatedByUserID: byID, Data: raw}, nil
}

// CreateUser creates a user account, or a service account when u.IsService is
// set, and records user-created or service-account-created. An ID of 0 gets
// an id from the store (see Store.Write). The created account is returned.
func (s *Service) CreateUser(ctx context.Context, p Principal, u User) (User, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return User{}, err
	}
	if v := normalizeUser(&u); v != nil {
		return User{}, v
	}
	if u.ID != 0 {
		if err := s.mustNotExist(ctx, "id", "user", u.ID, func() error { _, err := s.store.User(ctx, u.ID); return err }); err != nil {
			return User{}, err
		}
	}
	now := s.now()
	b := &Batch{Users: []User{u}, Then: func(b *Batch) ([]Event, error) {
		e, err := userCreatedEvent(p, b.Users[0], now)
		return []Event{e}, err
	}}
	if err := s.store.Write(ctx, b); err != nil {
		return User{}, err
	}
	return b.Users[0], nil
}

// userCreatedEvent is the event recording the creation of account c by p:
// user-created, or service-account-created.
func userCreatedEvent(p Principal, c User, now time.Time) (Event, error) {
	t, data := EventUserCreated, map[string]any{"id": c.ID, "name": c.Name, "username": c.Username, "email": c.Email, "rootRole": c.RootRole}
	if c.IsService {
		t, data = EventServiceAccountCreated, map[string]any{"id": c.ID, "name": c.Name, "username": c.Username, "rootRole": c.RootRole}
	}
	return actorEvent(p, t, now, data)
}

// CreateGroup creates a group with its users and records group-created. An
// ID of 0 gets an id from the store (see Store.Write).
func (s *Service) CreateGroup(ctx context.Context, p Principal, g Group) (Group, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return Group{}, err
	}
	if v := normalizeGroup(&g); v != nil {
		return Group{}, v
	}
	var f fieldErrors
	for i, uid := range g.Users {
		if _, err := s.store.User(ctx, uid); err != nil {
			if !isKind(err, ErrNotFound) {
				return Group{}, err
			}
			f.add(fmt.Sprintf("users[%d]", i), "user %d does not exist", uid)
		}
	}
	if v := f.err(); v != nil {
		return Group{}, v
	}
	now := s.now()
	b := &Batch{Groups: []Group{g}, Then: func(b *Batch) ([]Event, error) {
		c := b.Groups[0]
		e, err := actorEvent(p, EventGroupCreated, now, map[string]any{"id": c.ID, "name": c.Name, "users": c.Users})
		return []Event{e}, err
	}}
	if err := s.store.Write(ctx, b); err != nil {
		return Group{}, err
	}
	return b.Groups[0], nil
}

// AddGroupMember adds a user to a group and records group-user-added.
func (s *Service) AddGroupMember(ctx context.Context, p Principal, groupID, userID int64) error {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return err
	}
	g, err := s.store.Group(ctx, groupID)
	if err != nil {
		return refError(err, "groupId", "group %d does not exist", groupID)
	}
	if _, err := s.store.User(ctx, userID); err != nil {
		return refError(err, "userId", "user %d does not exist", userID)
	}
	if slices.Contains(g.Users, userID) {
		return nil // already a member: no change, so no event
	}
	e, err := actorEvent(p, EventGroupUserAdded, s.now(), map[string]any{"groupId": groupID, "userId": userID})
	if err != nil {
		return err
	}
	return s.store.Write(ctx, &Batch{GroupMembers: []GroupMember{{GroupID: groupID, UserID: userID}}, Events: []Event{e}})
}

// CreateProject creates a project with its members and favorites and
// records project-created.
func (s *Service) CreateProject(ctx context.Context, p Principal, pr Project) (Project, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return Project{}, err
	}
	now := s.now()
	if v := normalizeProject(&pr, now); v != nil {
		return Project{}, v
	}
	if err := s.mustNotExist(ctx, "id", "project", pr.ID, func() error { _, err := s.store.Project(ctx, pr.ID); return err }); err != nil {
		return Project{}, err
	}
	var f fieldErrors
	for i, m := range pr.Members {
		if err := s.checkMemberRefs(ctx, &f, fmt.Sprintf("members[%d]", i), m); err != nil {
			return Project{}, err
		}
	}
	for i, uid := range pr.FavoritedBy {
		if err := s.checkRef(ctx, &f, fmt.Sprintf("favoritedBy[%d]", i), "user", uid, func() error { _, err := s.store.User(ctx, uid); return err }); err != nil {
			return Project{}, err
		}
	}
	if v := f.err(); v != nil {
		return Project{}, v
	}
	e, err := actorEvent(p, EventProjectCreated, now, map[string]any{"id": pr.ID, "name": pr.Name, "description": pr.Description, "mode": pr.Mode})
	if err != nil {
		return Project{}, err
	}
	e.Project = &pr.ID
	if err := s.store.Write(ctx, &Batch{Projects: []Project{pr}, Events: []Event{e}}); err != nil {
		return Project{}, err
	}
	return pr, nil
}

// AddProjectMember grants a user or group a role in a project and records
// project-user-added or project-group-added.
func (s *Service) AddProjectMember(ctx context.Context, p Principal, projectID string, m ProjectMembership) error {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return err
	}
	if v := validateMembership(m); v != nil {
		return v
	}
	if _, err := s.store.Project(ctx, projectID); err != nil {
		return refError(err, "projectId", "project %s does not exist", QuoteInput(projectID))
	}
	var f fieldErrors
	if err := s.checkMemberRefs(ctx, &f, "", m); err != nil {
		return err
	}
	if v := f.err(); v != nil {
		return v
	}
	t, data := EventProjectUserAdded, map[string]any{"role": m.Role, "userId": m.UserID}
	if m.GroupID != nil {
		t, data = EventProjectGroupAdded, map[string]any{"role": m.Role, "groupId": m.GroupID}
	}
	e, err := actorEvent(p, t, s.now(), data)
	if err != nil {
		return err
	}
	e.Project = &projectID
	return s.store.Write(ctx, &Batch{ProjectMembers: []ProjectMember{{ProjectID: projectID, ProjectMembership: m}}, Events: []Event{e}})
}

// CreateFeature creates a feature in an existing project and records
// feature-created with the feature's tags.
func (s *Service) CreateFeature(ctx context.Context, p Principal, ft Feature) (Feature, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return Feature{}, err
	}
	now := s.now()
	if v := normalizeFeature(&ft, now); v != nil {
		return Feature{}, v
	}
	if _, err := s.store.Project(ctx, ft.Project); err != nil {
		return Feature{}, refError(err, "project", "project %s does not exist", QuoteInput(ft.Project))
	}
	if err := s.mustNotExist(ctx, "name", "feature", ft.Name, func() error { _, err := s.store.Feature(ctx, ft.Name); return err }); err != nil {
		return Feature{}, err
	}
	e, err := actorEvent(p, EventFeatureCreated, now, map[string]any{"name": ft.Name, "project": ft.Project, "type": ft.Type, "stale": ft.Stale})
	if err != nil {
		return Feature{}, err
	}
	e.Project, e.FeatureName, e.Tags = &ft.Project, &ft.Name, flagEventTags(ft.Tags)
	if err := s.store.Write(ctx, &Batch{Features: []Feature{ft}, Events: []Event{e}}); err != nil {
		return Feature{}, err
	}
	return ft, nil
}

// NewAPIToken describes a token to create; the secret is generated.
type NewAPIToken struct {
	Name string
	// Type is admin, client, frontend or user; user needs UserID.
	Type   TokenType
	UserID *int64
	// Project and Environment scope client and frontend tokens; "*" (or
	// empty) for all, but not both: "*:*" is the scope of admin tokens. A
	// project other than "*" must exist.
	Project, Environment string
	ExpiresAt            *time.Time
}

// CreateAPIToken creates a token and returns its secret, the only time it is
// available: the store keeps only its hash. It records api-token-created, or
// pat-created for a user token; the secret is never part of an event.
func (s *Service) CreateAPIToken(ctx context.Context, p Principal, n NewAPIToken) (string, APIToken, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return "", APIToken{}, err
	}
	secret, tok, e, err := s.newToken(p, n, s.now())
	if err != nil {
		return "", APIToken{}, err
	}
	if tok.UserID != nil {
		if _, err := s.store.User(ctx, *tok.UserID); err != nil {
			return "", APIToken{}, refError(err, "userId", "user %d does not exist", *tok.UserID)
		}
	}
	if (tok.Type == TokenClient || tok.Type == TokenFrontend) && tok.Project != "*" {
		if _, err := s.store.Project(ctx, tok.Project); err != nil {
			return "", APIToken{}, refError(err, "project", "project %s does not exist", QuoteInput(tok.Project))
		}
	}
	if err := s.store.Write(ctx, &Batch{Tokens: []APIToken{tok}, Events: []Event{e}}); err != nil {
		return "", APIToken{}, err
	}
	return secret, tok, nil
}

// CreateUserWithToken creates an account as CreateUser does and, in the
// same write, a personal token for it as CreateAPIToken does (n.Type and
// n.UserID are set here): both or neither. It records user-created or
// service-account-created, then pat-created, and returns the account, the
// token's secret (the only time it is available) and the token.
func (s *Service) CreateUserWithToken(ctx context.Context, p Principal, u User, n NewAPIToken) (User, string, APIToken, error) {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return User{}, "", APIToken{}, err
	}
	if v := normalizeUser(&u); v != nil {
		return User{}, "", APIToken{}, v
	}
	if u.ID != 0 {
		if err := s.mustNotExist(ctx, "id", "user", u.ID, func() error { _, err := s.store.User(ctx, u.ID); return err }); err != nil {
			return User{}, "", APIToken{}, err
		}
	}
	now := s.now()
	n.Type, n.UserID = TokenUser, new(int64) // the account's id, once the store has assigned it
	secret, tok, _, err := s.newToken(p, n, now)
	if err != nil {
		return User{}, "", APIToken{}, err
	}
	b := &Batch{Users: []User{u}, Tokens: []APIToken{tok}, Then: func(b *Batch) ([]Event, error) {
		e, err := userCreatedEvent(p, b.Users[0], now)
		if err != nil {
			return nil, err
		}
		id := b.Users[0].ID
		b.Tokens[0].UserID = &id
		pat, err := tokenCreatedEvent(p, b.Tokens[0], now)
		return []Event{e, pat}, err
	}}
	if err := s.store.Write(ctx, b); err != nil {
		return User{}, "", APIToken{}, err
	}
	return b.Users[0], secret, b.Tokens[0], nil
}

// newToken validates n and returns a new secret, the token to store (its
// hash, not the secret) and the event that records its creation, as
// principal p at now. It does not check that n.UserID exists.
func (s *Service) newToken(p Principal, n NewAPIToken, now time.Time) (string, APIToken, Event, error) {
	project, env := n.Project, n.Environment
	if project == "" {
		project = "*"
	}
	if env == "" {
		env = "*"
	}
	if n.Type == TokenClient || n.Type == TokenFrontend {
		var f fieldErrors
		for _, scope := range []struct{ param, v string }{{"project", project}, {"environment", env}} {
			if scope.v != "*" && !urlFriendly.MatchString(scope.v) {
				f.add(scope.param, "must be * or 1 to 100 letters, digits, or _ . ~ -")
			}
		}
		// The secret's shape must not read as another kind of token.
		switch {
		case project == "*" && env == "*":
			f.add("environment", "a %s token for every project needs one environment: *:* is the scope of admin tokens", n.Type)
		case project == "user":
			f.add("project", "a %s token cannot be scoped to a project named user: user: starts personal tokens", n.Type)
		}
		if v := f.err(); v != nil {
			return "", APIToken{}, Event{}, v
		}
	}
	secret, err := newSecret(s.random, n.Type, project, env)
	if err != nil {
		return "", APIToken{}, Event{}, err
	}
	tok := APIToken{Name: n.Name, Type: n.Type, UserID: n.UserID, ExpiresAt: n.ExpiresAt}
	if v := normalizeToken(&tok, secret, now); v != nil {
		return "", APIToken{}, Event{}, v
	}
	e, err := tokenCreatedEvent(p, tok, now)
	if err != nil {
		return "", APIToken{}, Event{}, err
	}
	return secret, tok, e, nil
}

// tokenCreatedEvent is the event recording the creation of tok by p:
// api-token-created, or pat-created for a user token.
func tokenCreatedEvent(p Principal, tok APIToken, now time.Time) (Event, error) {
	t, data := EventAPITokenCreated, map[string]any{"tokenName": tok.Name, "type": tok.Type, "project": tok.Project, "environment": tok.Environment}
	if tok.Type == TokenAdmin {
		data = map[string]any{"tokenName": tok.Name, "type": tok.Type}
	}
	if tok.Type == TokenUser {
		t, data = EventPATCreated, map[string]any{"description": tok.Name, "userId": *tok.UserID}
	}
	return actorEvent(p, t, now, data)
}

// AppendEvent records an event the embedding program describes. createdAt
// defaults to now; the stored event, with its id, is returned.
func (s *Service) AppendEvent(ctx context.Context, e Event) (Event, error) {
	if v := normalizeEvent(&e, s.now()); v != nil {
		return Event{}, v
	}
	b := &Batch{Events: []Event{e}}
	if err := s.store.Write(ctx, b); err != nil {
		return Event{}, err
	}
	return b.Events[0], nil
}

// mustNotExist gives a validation error when lookup finds the entity.
func (s *Service) mustNotExist(ctx context.Context, path, what string, id any, lookup func() error) error {
	err := lookup()
	switch {
	case err == nil:
		return invalid(path, "%s %v already exists", what, id)
	case isKind(err, ErrNotFound):
		return nil
	}
	return err
}

// checkRef records a field error when lookup finds nothing; other errors are returned.
func (s *Service) checkRef(ctx context.Context, f *fieldErrors, path, what string, id any, lookup func() error) error {
	err := lookup()
	if isKind(err, ErrNotFound) {
		f.add(path, "%s %v does not exist", what, id)
		return nil
	}
	return err
}

func (s *Service) checkMemberRefs(ctx context.Context, f *fieldErrors, path string, m ProjectMembership) error {
	join := func(field string) string {
		if path == "" {
			return field
		}
		return path + "." + field
	}
	if m.UserID != nil {
		return s.checkRef(ctx, f, join("userId"), "user", *m.UserID, func() error { _, err := s.store.User(ctx, *m.UserID); return err })
	}
	return s.checkRef(ctx, f, join("groupId"), "group", *m.GroupID, func() error { _, err := s.store.Group(ctx, *m.GroupID); return err })
}

// refError turns a store's ErrNotFound for a referenced entity into a validation error.
func refError(err error, path, format string, args ...any) error {
	if errors.Is(err, ErrNotFound) {
		return invalid(path, format, args...)
	}
	return err
}

// EnsureAdminToken creates an admin token named "admin" when the store has
// none and returns its secret (shown once) with created true; when an admin
// token exists it returns created false. A server calls it at first start.
func (s *Service) EnsureAdminToken(ctx context.Context) (secret string, created bool, err error) {
	n, err := s.store.CountTokens(ctx, TokenAdmin)
	if err != nil || n > 0 {
		return "", false, err
	}
	secret, _, err = s.CreateAPIToken(ctx, System, NewAPIToken{Name: "admin", Type: TokenAdmin})
	return secret, err == nil, err
}

// ImportAdminToken stores an admin token with a secret chosen by the
// operator (like Unleash's INIT_ADMIN_API_TOKENS), unless a token with that
// secret exists already. It records api-token-created when it creates one.
func (s *Service) ImportAdminToken(ctx context.Context, secret, name string) (created bool, err error) {
	now := s.now()
	tok := APIToken{Name: name, Type: TokenAdmin}
	if v := normalizeToken(&tok, secret, now); v != nil {
		return false, v
	}
	if _, _, err := s.store.LookupToken(ctx, tok.SecretHash); err == nil {
		return false, nil
	} else if !isKind(err, ErrNotFound) {
		return false, err
	}
	e, err := actorEvent(System, EventAPITokenCreated, now, map[string]any{"tokenName": tok.Name, "type": tok.Type})
	if err != nil {
		return false, err
	}
	if err := s.store.Write(ctx, &Batch{Tokens: []APIToken{tok}, Events: []Event{e}}); err != nil {
		return false, err
	}
	return true, nil
}
