package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/unleashimport"
	"github.com/flagadmin/flagadmin/flagadmin"
)

var importUnleashCommand = command{
	usage:   "flagadmin import unleash --from postgres://... [flags]",
	summary: "Imports an Unleash database (PostgreSQL, Unleash 5.x to 8.x) into an empty database, or into a seed file.",
	about: `What is imported into the configured database (--db), which must be empty
(a database "flagadmin serve" never started on): users and service accounts with
their root roles, groups and their members, projects with their mode and archive
state, project roles of users and groups, favorite projects, flags with type,
stale, dates, tags and lifecycle stage, API tokens and personal access tokens
(hashed on the way in: the same secrets keep working), and every event with its
id. All or nothing: the import is one transaction, so an interruption (Ctrl-C,
a lost connection) leaves the database empty.

With --to-seed FILE it writes a seed file instead (it holds the secrets in
clear); with --dry-run it reads and maps everything and writes nothing.
Progress goes to stderr; the summary (imported, skipped, mapped down, with the
reasons) to stdout.`,
	env: []string{envDB, envLogLevel, envLogFormat},
}

// importCmd runs flagadmin import unleash.
func (c *cli) importCmd(ctx context.Context, args []string) error {
	args, err := soleSubcommand(args, "flagadmin import", "source", "unleash", "--help")
	if err != nil {
		return err
	}
	fs := newFlagSet("flagadmin import unleash")
	s := newSettings(fs, c.getenv, withDB)
	var f importFlags
	f.register(fs)
	rest, err := c.parse(fs, importUnleashCommand, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	cfg, err := s.config(fs)
	if err != nil {
		return err
	}
	if err := f.checkTarget(cfg); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := unleashimport.Open(ctx, f.from)
	if err != nil {
		if ctx.Err() != nil {
			return importError(ctx, err)
		}
		return cliErrorf("%s", flat(err))
	}
	defer src.Close()
	sum, into, err := c.importInto(ctx, src, cfg, f)
	if err != nil {
		return importError(ctx, err)
	}
	fmt.Fprintf(c.stdout, "imported %s into %s in %s\n", sum.Schema, into, sum.Elapsed.Round(1e6))
	return sum.Write(c.stdout)
}

// soleSubcommand checks the first of args, the one subcommand a command
// has (sole, such as unleash of flagadmin import; kind says what it is),
// and returns the arguments after it. A help flag in its place asks for
// the subcommand's help (help, its flag).
func soleSubcommand(args []string, command, kind, sole, help string) ([]string, error) {
	if len(args) == 0 {
		return nil, cliErrorf("%s needs a %s: %s (see %s %s)", command, kind, sole, command, help)
	}
	if isHelpFlag(args[0]) {
		args = []string{sole, help}
	}
	if args[0] != sole {
		return nil, cliErrorf("unknown %s %q of %s; the only one is %s", kind, args[0], command, sole)
	}
	return args[1:], nil
}

// importFlags are the flags of import unleash: where from, and where to
// instead of the database (--db).
type importFlags struct {
	from, toSeed string
	dryRun       bool
}

func (f *importFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.from, "from", "", "`URL` of the Unleash PostgreSQL database, postgres://user:pass@host:5432/unleash (required)")
	fs.StringVar(&f.toSeed, "to-seed", "", "write a seed `FILE` instead of importing into --db")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read and map everything, print the summary, write nothing")
}

// check refuses an import without a source, or with both other targets.
func (f *importFlags) check() error {
	if f.from == "" {
		return cliErrorf("--from is required: the URL of the Unleash database (postgres://user:pass@host:5432/unleash)")
	}
	if f.toSeed != "" && f.dryRun {
		return cliErrorf("--to-seed and --dry-run exclude each other")
	}
	return nil
}

// intoDB reports whether the import goes into the configured database.
func (f *importFlags) intoDB() bool { return f.toSeed == "" && !f.dryRun }

// checkTarget refuses an import into a database that would not keep it,
// or that is the source itself.
func (f *importFlags) checkTarget(cfg Config) error {
	if f.intoDB() && cfg.DB == memoryURL {
		return cliErrorf("memory: keeps nothing after this command ends; import into a database (sqlite:, postgres://, mysql://), or use --to-seed or --dry-run")
	}
	if f.intoDB() && sameDatabase(cfg.DB, f.from) {
		return cliErrorf("--db is the Unleash database itself (%s); import into another, empty database", bunstore.RedactURL(cfg.DB))
	}
	return nil
}

// importInto imports src where the flags say: nowhere (dry run), a seed
// file, or the configured database. into names it for the summary.
func (c *cli) importInto(ctx context.Context, src *unleashimport.Source, cfg Config, f importFlags) (sum *unleashimport.Summary, into string, err error) {
	opts := unleashimport.Options{Progress: c.stderr}
	switch {
	case f.dryRun:
		sum, err = unleashimport.DryRun(ctx, src, opts)
		return sum, "nowhere (dry run)", err
	case f.toSeed != "":
		sum, err = writeSeedFile(ctx, src, f.toSeed, opts)
		return sum, f.toSeed, err
	}
	sum, err = c.importIntoDB(ctx, src, cfg, opts)
	return sum, bunstore.RedactURL(cfg.DB), err
}

// sameDatabase reports whether two PostgreSQL URLs name the same database
// (host, port and database name): Unleash's DATABASE_URL, which flagadmin
// also reads, could otherwise make the source the target.
func sameDatabase(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || !strings.HasPrefix(ua.Scheme, "postgres") || !strings.HasPrefix(ub.Scheme, "postgres") {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return "5432"
	}
	return ua.Hostname() == ub.Hostname() && port(ua) == port(ub) && strings.Trim(ua.Path, "/") == strings.Trim(ub.Path, "/")
}

// importIntoDB imports into the configured database, migrated first.
func (c *cli) importIntoDB(ctx context.Context, src *unleashimport.Source, cfg Config, opts unleashimport.Options) (*unleashimport.Summary, error) {
	openCtx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	progress := bunstore.WithLoadProgress(func(st bunstore.LoadStep) {
		switch {
		case st.Done:
			fmt.Fprintf(c.stderr, "%s: %s\n", st.What, st.Took.Round(time.Millisecond))
		case st.Count > 0:
			fmt.Fprintf(c.stderr, "%s: %d of %d\n", st.What, st.Count, st.Of)
		default:
			fmt.Fprintf(c.stderr, "%s ...\n", st.What)
		}
	})
	store, err := openBunstore(openCtx, cfg.DB, buildLogger(cfg, c.stderr), true, progress)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if err := flagadmin.NewService(store).CheckWritable(ctx); err != nil {
		return nil, cliErrorf("import refused: %s", flat(err))
	}
	sum, err := unleashimport.Import(ctx, src, store, opts)
	if errors.Is(err, unleashimport.ErrNotEmpty) {
		return nil, notEmptyError(ctx, store, cfg.DB)
	}
	return sum, err
}

// notEmptyError is the refusal of an import into a database that is not
// empty, saying what it holds and how to proceed.
func notEmptyError(ctx context.Context, store *bunstore.Store, dbURL string) error {
	have, err := store.Contents(ctx)
	if err != nil {
		return cliErrorf("import refused: %s is not empty; import into a new, empty database (a new --db)", bunstore.RedactURL(dbURL))
	}
	var held []string
	for _, k := range []string{"users", "groups", "projects", "features", "tokens", "events"} {
		switch n := have[k]; {
		case n == 1:
			held = append(held, "1 "+strings.TrimSuffix(k, "s"))
		case n > 1:
			held = append(held, fmt.Sprintf("%d %s", n, k))
		}
	}
	what := ""
	if have["users"]+have["groups"]+have["projects"]+have["features"] == 0 {
		// Tokens and their events alone: what serve's first start
		// leaves, the admin token it generates.
		what = ` (such as "flagadmin serve" leaves at its first start: the admin token it generates)`
	}
	return cliErrorf("import refused: %s is not empty: it holds %s%s; an import goes into an empty database: "+
		"give a new --db (for SQLite, a file that does not exist yet), import, then start flagadmin serve on it "+
		"(Unleash's tokens work there)", bunstore.RedactURL(dbURL), strings.Join(held, ", "), what)
}

// writeSeedFile writes the seed to a temporary file beside path and renames
// it into place once complete: an interrupted run leaves no partial file.
func writeSeedFile(ctx context.Context, src *unleashimport.Source, path string, opts unleashimport.Options) (*unleashimport.Summary, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.partial")
	if err != nil {
		return nil, cliErrorf("--to-seed: %v", err)
	}
	defer os.Remove(f.Name())
	sum, err := unleashimport.WriteSeed(ctx, src, f, opts)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600) // it holds secrets
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return sum, err
}

// importError is the one line an import failure prints. Any failure once
// ctx is cancelled (Ctrl-C) is the interruption, wherever it came: while
// connecting, migrating, reading or loading.
func importError(ctx context.Context, err error) error {
	var ce *cliError
	switch {
	case ctx.Err() != nil:
		return cliErrorf("import interrupted: nothing was written")
	case errors.As(err, &ce):
		return err
	case errors.Is(err, flagadmin.ErrConflict):
		return cliErrorf("import refused: %s", flat(err))
	}
	return cliErrorf("import failed, nothing was written: %s", withCause(err))
}
