package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// bootstrap prepares the store at start, before the server serves: it
// loads the demo world or the seed file into an empty store, creates the
// configured admin tokens, or one generated admin token when the store
// has none, then records the retention rule in the log when it changed.
// All of it is done before the first request is served, so a database
// that stalls during start-up holds no request that a stop would cut.
type bootstrap struct {
	cfg   Config
	svc   *flagadmin.Service
	store flagadmin.Store // the service's
	log   *slog.Logger
	out   io.Writer
	parts *logParts // nil when the store keeps no log
}

// newBootstrap returns the start-up work on the service's store.
func newBootstrap(cfg Config, svc *flagadmin.Service, store servedStore, parts *logParts, log *slog.Logger, out console) *bootstrap {
	return &bootstrap{cfg: cfg, svc: svc, store: store.Store, log: log, out: out.Writer, parts: parts}
}

// run loads the demo world or the seed file, then the admin tokens, then
// records the retention rule. A server that follows Unleash does none of
// it: its store is Unleash's copy, tokens included, and writes no event of
// its own.
func (b *bootstrap) run(ctx context.Context) error {
	if b.cfg.Follow != "" {
		if len(b.cfg.AdminTokens) > 0 {
			b.log.Info("following: the configured admin tokens are not created here; the copy has Unleash's tokens (create them in Unleash)")
		}
		return nil
	}
	switch {
	case b.cfg.Demo:
		if err := b.loadDemo(ctx); err != nil {
			return err
		}
	case b.cfg.Seed != "":
		data, err := os.ReadFile(b.cfg.Seed)
		if err != nil {
			return cliErrorf("seed file: %v", err)
		}
		if err := b.loadWorld(ctx, "seed file "+b.cfg.Seed, data); err != nil {
			return err
		}
	}
	if err := b.adminTokens(ctx); err != nil {
		return err
	}
	if b.parts == nil {
		return nil
	}
	return recordRetention(b.parts, b.cfg.Retention, b.log.With("component", "log"))
}

// loadWorld applies a seed to the store when the store is empty, and says
// so in the log when it is not.
func (b *bootstrap) loadWorld(ctx context.Context, what string, data []byte) error {
	empty, err := storeIsEmpty(ctx, b.svc, b.store)
	if err != nil {
		return cliErrorf("cannot read the store: %s", withCause(err))
	}
	if !empty {
		b.log.Info("the store already has data; not loading " + what)
		return nil
	}
	seed, err := flagadmin.ParseSeed(bytes.NewReader(data))
	if err == nil {
		b.log.Info("loading "+what, seedSummaryAttrs(seed)...)
		err = b.svc.ApplySeed(ctx, seed, flagadmin.WithSeedProgress(seedProgress(func(loaded, total int) {
			b.log.Info("loading "+what, "events", loaded, "total", total)
		})))
	}
	if err != nil {
		return seedError(what, err)
	}
	b.log.Info("loaded "+what, seedSummaryAttrs(seed)...)
	return nil
}

// seedProgressStep is the fewest events between two progress reports of a
// seed's load: a seed smaller than this loads without any.
const seedProgressStep = 10_000

// seedProgress returns the progress function of a seed's load that passes
// on to report a tenth of the events at a time, seedProgressStep at least,
// and the end: a few lines however large the seed.
func seedProgress(report func(loaded, total int)) func(loaded, total int) {
	next := 0
	return func(loaded, total int) {
		step := max(seedProgressStep, total/10)
		if next == 0 {
			next = step
		}
		if total < seedProgressStep || (loaded < next && loaded < total) {
			return
		}
		report(loaded, total)
		for next <= loaded {
			next += step
		}
	}
}

// loadDemo loads the built-in demo world and prints its tokens, when they
// are in the store (loaded now or at an earlier start).
func (b *bootstrap) loadDemo(ctx context.Context) error {
	if err := b.loadWorld(ctx, "the demo world", demoSeed); err != nil {
		return err
	}
	seed, err := flagadmin.ParseSeed(bytes.NewReader(demoSeed))
	if err != nil {
		return err
	}
	var lines []string
	for _, t := range seed.APITokens {
		if _, _, err := b.store.LookupToken(ctx, flagadmin.HashSecret(t.Secret)); err != nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-44s %s", t.Secret, demoTokenRole(seed, t)))
	}
	if len(lines) == 0 {
		b.log.Warn("the demo tokens are not in this store; use a new database for the demo (for example --db memory:)")
		return nil
	}
	b.notice("demo tokens (send one as the Authorization header)", "tokens", "\n"+strings.Join(lines, "\n"))
	return nil
}

// demoTokenRole describes what a demo token acts as.
func demoTokenRole(seed *flagadmin.Seed, t flagadmin.SeedToken) string {
	if t.UserID == nil {
		return fmt.Sprintf("%s token %q", t.Type, t.Name)
	}
	for _, group := range []struct {
		kind  string
		users []flagadmin.User
	}{{"user", seed.Users}, {"service account", seed.ServiceAccounts}} {
		for _, u := range group.users {
			if u.ID == *t.UserID {
				return fmt.Sprintf("%s %d, %s (root role %s)", group.kind, u.ID, u.Name, u.RootRole)
			}
		}
	}
	return fmt.Sprintf("user %d", *t.UserID)
}

// adminTokens creates the configured admin tokens, or, when none are
// configured and the store has no admin token, generates one and shows its
// secret once.
func (b *bootstrap) adminTokens(ctx context.Context) error {
	for i, secret := range b.cfg.AdminTokens {
		created, err := b.svc.ImportAdminToken(ctx, secret, "admin")
		if err != nil {
			return cliErrorf("configured admin token %d: %v", i+1, err)
		}
		if created {
			b.log.Info("created a configured admin token", "item", i+1)
		}
	}
	if len(b.cfg.AdminTokens) > 0 {
		return nil
	}
	secret, created, err := b.svc.EnsureAdminToken(ctx)
	if err != nil {
		return cliErrorf("cannot create the first admin token: %s", withCause(err))
	}
	if created {
		b.notice("admin token (shown once)", "token", secret)
	}
	return nil
}

// notice shows a message with a secret once on stderr: as a plain line
// "msg: value" with the text log format, as a JSON log record with the json
// one. It does not depend on the log level.
func (b *bootstrap) notice(msg, key, value string) {
	if b.cfg.LogFormat == "json" {
		slog.New(slog.NewJSONHandler(b.out, nil)).Warn(msg, key, strings.TrimSpace(value))
		return
	}
	if strings.HasPrefix(value, "\n") {
		fmt.Fprintf(b.out, "%s:%s\n", msg, value)
		return
	}
	fmt.Fprintf(b.out, "%s: %s\n", msg, value)
}

// storeIsEmpty reports whether the store of svc holds no tokens, no events
// and no projects.
func storeIsEmpty(ctx context.Context, svc *flagadmin.Service, store flagadmin.Store) (bool, error) {
	for _, t := range []flagadmin.TokenType{flagadmin.TokenAdmin, flagadmin.TokenUser, flagadmin.TokenClient, flagadmin.TokenFrontend} {
		n, err := store.CountTokens(ctx, t)
		if err != nil || n > 0 {
			return false, err
		}
	}
	page, err := svc.SearchEvents(ctx, flagadmin.System, flagadmin.EventSearchParams{Limit: "1"})
	if err != nil || page.Total > 0 {
		return false, err
	}
	for _, archived := range []bool{false, true} {
		projects, err := svc.ListProjects(ctx, flagadmin.System, flagadmin.ProjectListOptions{Archived: archived})
		if err != nil || len(projects) > 0 {
			return false, err
		}
	}
	return true, nil
}

// seedError reports a bad seed with one line per wrong entry.
func seedError(what string, err error) error {
	var v *flagadmin.ValidationError
	if !errors.As(err, &v) {
		return cliErrorf("cannot load %s: %s", what, withCause(err))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s is invalid; nothing was loaded:", what)
	for _, f := range v.Fields {
		sb.WriteString("\n  ")
		if f.Path != "" {
			sb.WriteString(f.Path + ": ")
		}
		sb.WriteString(f.Message)
	}
	return &cliError{msg: sb.String()}
}

// seedCounts lists the number of entries of each kind in a seed.
func seedCounts(s *flagadmin.Seed) []struct {
	name string
	n    int
} {
	return []struct {
		name string
		n    int
	}{
		{"users", len(s.Users)},
		{"serviceAccounts", len(s.ServiceAccounts)},
		{"groups", len(s.Groups)},
		{"projects", len(s.Projects)},
		{"features", len(s.Features)},
		{"apiTokens", len(s.APITokens)},
		{"events", len(s.Events)},
	}
}

func seedSummaryAttrs(s *flagadmin.Seed) []any {
	var attrs []any
	for _, c := range seedCounts(s) {
		attrs = append(attrs, c.name, c.n)
	}
	return attrs
}

// seedSummary describes a loaded seed for people: "3 users, 1 service account, ...".
func seedSummary(s *flagadmin.Seed) string {
	labels := map[string][2]string{
		"users":           {"user", "users"},
		"serviceAccounts": {"service account", "service accounts"},
		"groups":          {"group", "groups"},
		"projects":        {"project", "projects"},
		"features":        {"feature", "features"},
		"apiTokens":       {"API token", "API tokens"},
		"events":          {"event", "events"},
	}
	var parts []string
	for _, c := range seedCounts(s) {
		l := labels[c.name][1]
		if c.n == 1 {
			l = labels[c.name][0]
		}
		parts = append(parts, fmt.Sprintf("%d %s", c.n, l))
	}
	return strings.Join(parts, ", ")
}
