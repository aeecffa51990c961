package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build information.
var version string

// versionString returns the version of this build.
func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v // a module version, or a pseudo-version stamped from git
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel+" + s.Value[:12]
		}
	}
	return "devel"
}

var versionCommand = command{
	usage:   "flagadmin version (or flagadmin --version, flagadmin -v)",
	summary: "Prints the version of flagadmin, of the Go toolchain that built it and its SQLite driver.",
}

func (c *cli) version(args []string) error {
	fs := newFlagSet("flagadmin version")
	rest, err := c.parse(fs, versionCommand, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "flagadmin %s (%s, %s)\n", versionString(), runtime.Version(), sqlitedsn.Driver())
	return nil
}

var migrateCommand = command{
	usage:   "flagadmin migrate [flags]",
	summary: "Creates or updates the database schema, then exits.",
	about: `"flagadmin serve" does this too at start; run it alone to migrate before a
deployment. memory: needs no migration.

--rebuild-summaries then rebuilds the summaries (the event counts and the
project figures) from the base tables: a database needs it before flagadmin
serves it after a program embedding the store without them
(bunstore.WithoutTuning) wrote to it.`,
	env: []string{envDB, envLogLevel, envLogFormat},
}

func (c *cli) migrate(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin migrate")
	s := newSettings(fs, c.getenv, withDB)
	rebuild := fs.Bool("rebuild-summaries", false, "then rebuild the summaries from the base tables")
	cfg, err := c.parseConfig(fs, s, migrateCommand, args)
	if err != nil {
		return err
	}
	if cfg.DB == memoryURL {
		fmt.Fprintln(c.stdout, "memory: has no schema; nothing to migrate")
		return nil
	}
	// Opening is bounded; the migrations are not: one that carries the
	// data of a large database may take long, each step shown as it
	// starts and ends.
	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, err := openBunstore(openCtx, cfg.DB, buildLogger(cfg, c.stderr), false)
	if err != nil {
		return err
	}
	defer store.Close()
	progress := bunstore.WithProgress(func(m bunstore.MigrationStep) {
		if m.Done {
			fmt.Fprintf(c.stdout, "  done in %s\n", m.Took.Round(time.Millisecond))
		} else {
			fmt.Fprintf(c.stdout, "%s: %s\n", m.Name, m.Comment)
		}
	})
	opts := []bunstore.MigrateOption{progress}
	if *rebuild {
		opts = append(opts, bunstore.WithRebuild())
	}
	if err := store.Migrate(ctx, opts...); err != nil {
		return cliErrorf("migrate %s: %s", bunstore.RedactURL(cfg.DB), flat(err))
	}
	fmt.Fprintf(c.stdout, "migrated %s: the schema is up to date\n", bunstore.RedactURL(cfg.DB))
	return nil
}

var seedCommand = command{
	usage:   "flagadmin seed [flags] FILE",
	summary: "Loads a seed file into the database, all or nothing, and prints what it loaded.",
	about: `A seed file is JSON: users, serviceAccounts, groups, projects, features,
apiTokens, events. Ids and names must be new to the database; an error names
the entry, such as "projects[2].mode". The format is described in the README.`,
	env: []string{envDB, envLogLevel, envLogFormat},
}

func (c *cli) seed(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin seed")
	s := newSettings(fs, c.getenv, withDB)
	rest, err := c.parse(fs, seedCommand, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return cliErrorf("flagadmin seed takes one seed file, got %d arguments (see flagadmin seed --help)", len(rest))
	}
	file := rest[0]
	cfg, err := s.config(fs)
	if err != nil {
		return err
	}
	if cfg.DB == memoryURL {
		return cliErrorf("memory: keeps nothing after this command ends; seed a database (sqlite:, postgres://, mysql://) or use %s with serve", envSeed)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return cliErrorf("seed file: %v", err)
	}
	seed, err := flagadmin.ParseSeed(bytes.NewReader(data))
	if err != nil {
		return seedError("seed file "+file, err)
	}
	svc, closeStore, err := c.openService(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	err = svc.ApplySeed(ctx, seed, flagadmin.WithSeedProgress(seedProgress(func(loaded, total int) {
		fmt.Fprintf(c.stderr, "loaded %d of %d events\n", loaded, total)
	})))
	if err != nil {
		return seedError("seed file "+file, err)
	}
	fmt.Fprintf(c.stdout, "loaded %s into %s: %s\n", file, bunstore.RedactURL(cfg.DB), seedSummary(seed))
	return nil
}

// openExistingService opens the configured database for a one-off command
// that reads (or with migrate, changes) what it holds, never creating one
// (openExisting). memory: is a new, empty store.
func (c *cli) openExistingService(ctx context.Context, cfg Config, migrate bool) (*flagadmin.Service, func() error, error) {
	if cfg.DB == memoryURL {
		return c.openService(ctx, cfg)
	}
	store, err := openExisting(ctx, cfg.DB, buildLogger(cfg, c.stderr), migrate)
	if err != nil {
		return nil, nil, err
	}
	return flagadmin.NewService(store), store.Close, nil
}

// openService opens the configured database, migrated, for a one-off command.
func (c *cli) openService(ctx context.Context, cfg Config) (*flagadmin.Service, func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, closeStore, err := openStore(ctx, cfg.DB, buildLogger(cfg, c.stderr), true, 0)
	if err != nil {
		return nil, nil, err
	}
	return flagadmin.NewService(store), closeStore, nil
}

var (
	tokenCreateCommand = command{
		usage:   "flagadmin token create [flags]",
		summary: "Creates an API token in the database and prints its secret on stdout, once.",
		about: `The database keeps only a hash of the secret. Nothing else is printed on
stdout, so SECRET=$(flagadmin token create ...) works. It records
api-token-created, or pat-created for a user token.

Types: admin (the default; *:*.<secret>, acts as a root admin), user (user:<secret>,
a personal access or service account token acting as --user-id), client and
frontend (<project>:<environment>.<secret>, valid but not for the admin API).
--expires takes an RFC 3339 time (2027-01-01T00:00:00Z), a date (2027-01-01), or
a duration from now (90d, 12h).`,
		env: []string{envDB, envLogLevel, envLogFormat},
	}
	tokenListCommand = command{
		usage:   "flagadmin token list [flags]",
		summary: "Lists the API tokens of the database, never their secrets.",
		about: `Each token is listed with its id (the first 12 hex digits of the hash of its
secret; never the secret, which is not stored), type, name, owner, project,
environment, expiry and creation time. Last use is not tracked.`,
		env: []string{envDB, envLogLevel, envLogFormat},
	}
	tokenRevokeCommand = command{
		usage:   "flagadmin token revoke [flags] ID|SECRET",
		summary: `Revokes an API token: deletes the token with that id (from "flagadmin token list") or that secret.`,
		about: `It records api-token-deleted, or pat-deleted for a user token, in the same
transaction. The token stops working at once, also on running servers that
share the database. An unknown token is an error.`,
		env: []string{envDB, envLogLevel, envLogFormat},
	}
	tokenGroup = commandGroup{
		name:    "token",
		summary: "Manages the API tokens of the database: creates one, lists them, revokes one.",
		subs: []subcommandHelp{
			{"create", &tokenCreateCommand}, {"list", &tokenListCommand}, {"revoke", &tokenRevokeCommand},
		},
	}
)

func (c *cli) token(ctx context.Context, args []string) error {
	sub, rest, err := c.subcommand(tokenGroup, args)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return c.tokenList(ctx, rest)
	case "revoke":
		return c.tokenRevoke(ctx, rest)
	}
	return c.tokenCreate(ctx, rest)
}

// tokenCreate creates a token and prints its secret.
func (c *cli) tokenCreate(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin token create")
	s := newSettings(fs, c.getenv, withDB)
	name := fs.String("name", "", "`NAME` of the token (default: its type)")
	typ := fs.String("type", "admin", "token `TYPE`: admin, client, frontend or user")
	userID := fs.Int64("user-id", 0, "`ID` of the user or service account a user token acts as (--type user)")
	project := fs.String("project", "*", "`PROJECT` a client or frontend token is for, or *")
	environment := fs.String("environment", "*", "`ENVIRONMENT` a client or frontend token is for, or *")
	expires := fs.String("expires", "", "`EXPIRY`: RFC 3339 time, yyyy-mm-dd, or a duration such as 90d (default: never)")
	cfg, err := c.parseConfig(fs, s, tokenCreateCommand, args)
	if err != nil {
		return err
	}
	n, err := newTokenRequest(fs, *name, *typ, *userID, *project, *environment, *expires, time.Now())
	if err != nil {
		return err
	}
	if cfg.DB == memoryURL {
		return cliErrorf("memory: keeps nothing after this command ends; create tokens in a database (sqlite:, postgres://, mysql://)")
	}
	svc, closeStore, err := c.openService(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	secret, tok, err := svc.CreateAPIToken(ctx, flagadmin.System, n)
	if err != nil {
		return tokenError(err)
	}
	fmt.Fprintln(c.stdout, secret)
	fmt.Fprintf(c.stderr, "created %s token %q in %s; the secret above is shown once and cannot be shown again\n", tok.Type, tok.Name, bunstore.RedactURL(cfg.DB))
	return nil
}

// newTokenRequest checks the flags of token create.
func newTokenRequest(fs *flag.FlagSet, name, typ string, userID int64, project, env, expires string, now time.Time) (flagadmin.NewAPIToken, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	n := flagadmin.NewAPIToken{Name: strings.TrimSpace(name), Type: flagadmin.TokenType(strings.ToLower(strings.TrimSpace(typ)))}
	switch n.Type {
	case flagadmin.TokenAdmin, flagadmin.TokenClient, flagadmin.TokenFrontend, flagadmin.TokenUser:
	default:
		return n, cliErrorf("--type: unknown token type %q; use admin, client, frontend or user", typ)
	}
	if n.Type == flagadmin.TokenUser {
		if userID <= 0 {
			return n, cliErrorf("--user-id: a user token needs the id of its user or service account")
		}
		n.UserID = &userID
	} else if set["user-id"] {
		return n, cliErrorf("--user-id: only user tokens act as a user; use --type user")
	}
	if n.Type == flagadmin.TokenClient || n.Type == flagadmin.TokenFrontend {
		n.Project, n.Environment = strings.TrimSpace(project), strings.TrimSpace(env)
	} else if set["project"] || set["environment"] {
		return n, cliErrorf("--project and --environment scope client and frontend tokens only")
	}
	at, err := tokenExpiry(expires, now)
	n.ExpiresAt = at
	return n, err
}

// parseExpiry reads an RFC 3339 time, a yyyy-mm-dd date (midnight UTC), or
// a duration from now in days ("90d") or Go units ("12h").
func parseExpiry(raw string, now time.Time) (time.Time, error) {
	raw = strings.TrimSpace(raw)
	if t, err := time.Parse(time.RFC3339, raw); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, raw); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(raw, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.UTC().AddDate(0, 0, n), nil
		}
	}
	if d, err := time.ParseDuration(raw); err == nil && d > 0 {
		return now.UTC().Add(d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time, a yyyy-mm-dd date or a duration such as 90d or 12h", raw)
}

// tokenError names the flag of a validation error of CreateAPIToken.
func tokenError(err error) error {
	var v *flagadmin.ValidationError
	if !errors.As(err, &v) {
		return cliErrorf("cannot create the token: %s", withCause(err))
	}
	flags := map[string]string{"userId": "--user-id", "project": "--project", "environment": "--environment", "name": "--name", "type": "--type", "expiresAt": "--expires"}
	parts := make([]string, len(v.Fields))
	for i, f := range v.Fields {
		path := f.Path
		if fl, ok := flags[path]; ok {
			path = fl
		}
		parts[i] = path + ": " + f.Message
	}
	return cliErrorf("cannot create the token: %s", strings.Join(parts, "; "))
}
