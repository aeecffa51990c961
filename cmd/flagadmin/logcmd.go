package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// logGroup is the help of flagadmin log.
var logGroup = commandGroup{
	name: "log",
	summary: "The event log as a Merkle tree (RFC 9162): its signing keys, its audit, and the legal " +
		"holds that keep events from retention.",
	subs: []subcommandHelp{
		{"keygen", &logKeygenCommand}, {"verify", &logVerifyCommand}, {"hold", &logHoldCommand}, {"holds", &logHoldsCommand},
	},
}

func (c *cli) logCmd(ctx context.Context, args []string) error {
	sub, rest, err := c.subcommand(logGroup, args)
	if err != nil {
		return err
	}
	switch sub {
	case "keygen":
		return c.logKeygen(rest)
	case "verify":
		return c.logVerify(ctx, rest)
	case "hold":
		return c.logHold(ctx, rest)
	}
	return c.logHolds(ctx, rest)
}

var logKeygenCommand = command{
	usage:   "flagadmin log keygen --out FILE [--origin NAME]",
	summary: "Writes a new key pair for the event log's checkpoints: the signing key to FILE, the verifier key to FILE.pub.",
	about: `The keys are Ed25519, written as signed-note keys. The signing key goes to
FILE (mode 0600; give it to the server as --log-key FILE, never to anyone else;
it never goes into the database), the verifier key to FILE.pub (publish it;
flagadmin log verify --key FILE.pub checks checkpoints with it). Existing files
are never overwritten.

The origin names the log: it is the first line of every checkpoint and the name
of the keys (no spaces or +), such as flagadmin.example.com/log.`,
}

func (c *cli) logKeygen(args []string) error {
	fs := newFlagSet("flagadmin log keygen")
	out := fs.String("out", "", "the `FILE` to write the signing key to; the verifier key goes to FILE.pub")
	origin := fs.String("origin", defaultOrigin(), "the log's `NAME`: the first line of its checkpoints")
	rest, err := c.parse(fs, logKeygenCommand, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	if *out == "" {
		return cliErrorf("flagadmin log keygen needs --out FILE (see flagadmin log keygen --help)")
	}
	skey, vkey, err := tlog.GenerateKey(*origin)
	if err != nil {
		return cliErrorf("--origin: %s", flat(err))
	}
	for _, f := range []struct {
		path, key string
		mode      os.FileMode
	}{{*out, skey, 0o600}, {*out + ".pub", vkey, 0o644}} {
		if _, err := os.Stat(f.path); err == nil {
			return cliErrorf("flagadmin log keygen: %s exists; it is not overwritten (a lost signing key cannot be replaced without a new verifier key)", f.path)
		}
	}
	if err := writeNew(*out, skey+"\n", 0o600); err != nil {
		return err
	}
	if err := writeNew(*out+".pub", vkey+"\n", 0o644); err != nil {
		os.Remove(*out)
		return err
	}
	fmt.Fprintf(c.stdout, "wrote the signing key of %s to %s (keep it secret: flagadmin serve --log-key %s)\n", *origin, *out, *out)
	fmt.Fprintf(c.stdout, "wrote the verifier key to %s.pub (publish it: flagadmin log verify --key %s.pub)\n", *out, *out)
	return nil
}

// writeNew writes text to a file that must not exist yet.
func writeNew(path, text string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return cliErrorf("flagadmin log keygen: %s", flat(err))
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return cliErrorf("flagadmin log keygen: %s", flat(err))
	}
	return nil
}

// defaultOrigin is flagadmin/<host name>.
func defaultOrigin() string {
	host, err := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == '+' || r <= ' ' {
			return '-'
		}
		return r
	}, host)
	if err != nil || host == "" {
		return "flagadmin"
	}
	return "flagadmin/" + host
}

var logVerifyCommand = command{
	usage:   "flagadmin log verify --key FILE.pub [--witness KEY]... [flags]",
	summary: "Checks the event log against its signed checkpoints; names the first event changed, removed, inserted or reordered.",
	about: `It checks the newest checkpoint's signature (with the verifier key), its root, and with --trusted a
checkpoint saved earlier (the log must still have its root at its size: this
catches an older copy of the database put back). Each event is checked against
its leaf (recorded when it was written), so the first event changed, removed,
inserted or reordered is named. Events pruned by retention are reported as pruned
ranges, not as problems (their leaf hashes still count), where the log's own
retention events account for each: a pruning pass recorded after it removed it
while it was older than the retention then in force and its project was not
held. Any other missing event is reported as removed, whatever its leaf says.

It reads a running server (--url, --token: an admin token or a root Admin's
personal token, as it reads every event and leaf) or a database directly (--db).
Progress goes to stderr. The exit code is 0 when everything holds, 1 otherwise.
--save FILE writes the newest checkpoint to FILE once it verified: pass it as
--trusted next time (a server's state file, FILE.checkpoint beside its key,
serves too). Without --trusted, a rollback to an older copy of the database
cannot be detected, and a NOTE says so. With --db, every stored hash of the
tree is recomputed from the leaves too.

--witness KEY (repeatable) requires a valid cosignature of that witness on the
checkpoint (a C2SP tlog-witness, to which the server submits its checkpoints:
serve --log-witness). A witness cosigns only a tree that extends every tree of
the log it saw before, so a log put back to an older copy gets no cosignature.`,
	env: []string{envURL, envToken},
}

func (c *cli) logVerify(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin log verify")
	baseURL, token := serverFlags(fs)
	db := fs.String("db", "", "read the database at `URL` directly instead of a server (sqlite:PATH, postgres://..., mysql://...)")
	keyFile := fs.String("key", "", "the verifier key `FILE` (FILE.pub of flagadmin log keygen)")
	trustedFile := fs.String("trusted", "", "a checkpoint `FILE` saved earlier (by --save, from GET /api/admin/log/checkpoint, or a server's state file)")
	save := fs.String("save", "", "write the newest checkpoint to `FILE` once it verified")
	var witnessKeys listValue
	witnessKeys.value = new(string)
	fs.Var(&witnessKeys, "witness", "require a valid cosignature of the witness of verifier `KEY` (the key, or a FILE holding it) on the\n"+
		"checkpoint; repeat the flag for several witnesses")
	rest, err := c.parse(fs, logVerifyCommand, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, rest); err != nil {
		return err
	}
	verifier, err := readVerifierKey(*keyFile)
	if err != nil {
		return err
	}
	witnesses, err := parseWitnessKeys(*witnessKeys.value)
	if err != nil {
		return err
	}
	opts := tlog.VerifyOptions{Verifier: verifier}
	if *trustedFile != "" {
		if opts.Trusted, err = os.ReadFile(*trustedFile); err != nil {
			return cliErrorf("--trusted: %s", flat(err))
		}
	}
	if err := checkVerifySource(fs, *db, witnesses); err != nil {
		return err
	}
	src, closeSource, err := c.verifySource(ctx, *db, *baseURL, *token, &opts)
	if err != nil {
		return err
	}
	defer closeSource()
	return c.verifyLog(ctx, src, opts, *save, witnesses)
}

// readVerifierKey reads the log's verifier key of log verify --key.
func readVerifierKey(keyFile string) (note.Verifier, error) {
	if keyFile == "" {
		return nil, cliErrorf("flagadmin log verify needs --key FILE.pub, the log's verifier key")
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, cliErrorf("--key: %s", flat(err))
	}
	verifier, err := tlog.ParseVerifierKey(string(b))
	if err != nil {
		return nil, cliErrorf("--key: %s: %s", keyFile, flat(err))
	}
	return verifier, nil
}

// checkVerifySource checks that log verify reads a server or a database,
// not both, and requires witnesses only of a server.
func checkVerifySource(fs *flag.FlagSet, db string, witnesses []note.Verifier) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if db != "" && (set["url"] || set["token"]) {
		return cliErrorf("flagadmin log verify reads a server (--url, --token) or a database (--db), not both")
	}
	if db != "" && len(witnesses) > 0 {
		return cliErrorf("--witness reads the checkpoint a server serves (--url): the server holds the witnesses' cosignatures, the database does not")
	}
	return nil
}

// verifySource opens what log verify reads: the database at db, whose
// stored hashes opts then has recomputed too, or else the server at
// baseURL. closeSource releases it.
func (c *cli) verifySource(ctx context.Context, db, baseURL, token string, opts *tlog.VerifyOptions) (src tlog.Source, closeSource func() error, err error) {
	if db == "" {
		api, err := c.apiClient("flagadmin log verify", baseURL, token)
		if err != nil {
			return nil, nil, err
		}
		return apiSource{api}, func() error { return nil }, nil
	}
	if strings.TrimSpace(db) == memoryURL {
		return nil, nil, cliErrorf("--db: memory: starts empty in every process; give the server's database, or read the server with --url")
	}
	quiet := buildLogger(Config{LogLevel: slog.LevelWarn, LogFormat: defaultLogFormat}, c.stderr)
	store, closeStore, err := c.openLogStore(ctx, db, false, quiet)
	if err != nil {
		return nil, nil, err
	}
	opts.StoredHashes = store.(vlog.Store)
	return tlog.StoreSource(store, store.(vlog.Store)), closeStore, nil
}

// parseWitnessKeys reads the keys of log verify --witness (comma-separated
// by listValue): each a witness's verifier key, or a file holding one.
func parseWitnessKeys(raw string) ([]note.Verifier, error) {
	var list []note.Verifier
	for item := range strings.SplitSeq(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		text := item
		if b, err := os.ReadFile(item); err == nil {
			text = string(b)
		} else if !strings.Contains(item, "+") {
			return nil, cliErrorf("--witness: %s is neither a witness's verifier key (name+hash+key) nor a file holding one", flagadmin.QuoteInput(item))
		}
		v, err := tlog.ParseWitnessKey(text)
		if err != nil {
			return nil, cliErrorf("--witness: %s: %s", flagadmin.QuoteInput(item), flat(err))
		}
		list = append(list, v)
	}
	return list, nil
}

// verifyLog runs the verification and reports it: progress on stderr, the
// result on stdout.
func (c *cli) verifyLog(ctx context.Context, src tlog.Source, opts tlog.VerifyOptions, save string, witnesses []note.Verifier) error {
	start := time.Now()
	opts.Progress = func(p tlog.VerifyProgress) {
		fmt.Fprintf(c.stderr, "checked %d of %s, %s read, %s (%s)\n",
			p.Leaves, pluralOf(p.Size, "leaf", "leaves"), plural(p.Events, "event"), plural(int64(p.Problems), "problem"), time.Since(start).Round(time.Millisecond))
	}
	r, err := tlog.Verify(ctx, src, opts)
	if err != nil {
		return verifyError(err)
	}
	fmt.Fprintf(c.stdout, "checkpoint: %s, %s, root %s, signature valid\n", r.Origin, plural(r.CheckpointSize, "event"), base64.StdEncoding.EncodeToString(r.CheckpointRoot[:]))
	uncosigned := c.reportCosignatures(r, witnesses)
	c.reportFindings(r, uncosigned)
	if !r.OK() {
		return cliErrorf("%s", failedLine(r))
	}
	if len(uncosigned) > 0 {
		return uncosignedError(r, uncosigned)
	}
	fmt.Fprintln(c.stdout, verifiedLine(r, time.Since(start), opts.StoredHashes != nil))
	c.noteRollback(opts.Trusted != nil, len(witnesses) > 0)
	if save != "" {
		if err := os.WriteFile(save, r.Note, 0o644); err != nil {
			return cliErrorf("--save: %s", flat(err))
		}
		fmt.Fprintf(c.stdout, "saved the checkpoint to %s: pass it as --trusted next time\n", save)
	}
	return nil
}

// verifyError is the error of log verify when the verification could not
// run to its end.
func verifyError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusConflict {
		// The server refuses to sign: the log does not extend the
		// last checkpoint it signed.
		return cliErrorf("the log does not verify: %s", ce.Message)
	}
	if errors.As(err, &ce) && errors.Is(err, flagadmin.ErrNoAccess) {
		return cliErrorf("flagadmin log verify: the token may not read the log's leaves: it needs an admin token or a root Admin's personal token (%s)", flat(err))
	}
	return cliErrorf("flagadmin log verify: %s", flat(err))
}

// reportCosignatures writes a line for each witness that cosigned the
// checkpoint, and returns why each of the others did not.
func (c *cli) reportCosignatures(r *tlog.Report, witnesses []note.Verifier) (uncosigned []string) {
	for _, v := range witnesses {
		at, err := tlog.Cosigned(r.Note, v)
		if err != nil {
			uncosigned = append(uncosigned, err.Error())
			continue
		}
		fmt.Fprintf(c.stdout, "witness: %s cosigned the checkpoint at %s\n", v.Name(), at.UTC().Format(time.RFC3339))
	}
	return uncosigned
}

// reportFindings writes the pruned ranges of the log, then its problems
// and the witnesses' missing cosignatures (uncosigned).
func (c *cli) reportFindings(r *tlog.Report, uncosigned []string) {
	for _, p := range r.Pruned {
		fmt.Fprintln(c.stdout, prunedLine(p))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(c.stdout, "PROBLEM: %s\n", p)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(c.stdout, "PROBLEM: and %d more\n", r.Omitted)
	}
	for _, p := range uncosigned {
		fmt.Fprintf(c.stdout, "PROBLEM: the checkpoint has %s\n", p)
	}
}

// uncosignedError is the error of a log that verifies but whose
// checkpoint lacks a required cosignature (uncosigned says why, per
// witness).
func uncosignedError(r *tlog.Report, uncosigned []string) error {
	more := ""
	if len(uncosigned) > 1 {
		more = fmt.Sprintf(" (and %d more witnesses, above)", len(uncosigned)-1)
	}
	return cliErrorf("the checkpoint of %s is not cosigned as required: it has %s%s; the witness may not have seen it yet (try again), may be unreachable, or refused it (the server's log says why)",
		plural(r.CheckpointSize, "event"), uncosigned[0], more)
}

// noteRollback writes, for a log verified without a trusted checkpoint,
// what the verification cannot tell: with witnesses, that an old
// cosignature may be an old checkpoint served again; without, that a
// rollback to an older copy of the database goes unseen.
func (c *cli) noteRollback(trusted, witnessed bool) {
	switch {
	case trusted:
	case witnessed:
		fmt.Fprintln(c.stdout, "NOTE: a witness cosigns only a tree that extends every tree of the log it saw before, so no witness above had seen a larger or "+
			"different tree when it cosigned; a cosignature made long ago may be an old checkpoint served again (its time is above)")
	default:
		fmt.Fprintln(c.stdout, "NOTE: without --trusted, a rollback to an older copy of the database cannot be detected (an older copy is a consistent log): "+
			"save this checkpoint with --save FILE and pass --trusted FILE next time, or pass the server's state file (its --log-key FILE"+tlog.StateSuffix+"), or require a witness's cosignature with --witness KEY")
	}
}

// prunedLine reports a range of leaves pruned by retention.
func prunedLine(p tlog.PrunedRange) string {
	if p.FirstLeaf == p.LastLeaf {
		return fmt.Sprintf("pruned: leaf %d (event %d), removed by retention; its leaf hash counts", p.FirstLeaf, p.FirstID)
	}
	return fmt.Sprintf("pruned: leaves %d to %d (events %d to %d), removed by retention; their leaf hashes count", p.FirstLeaf, p.LastLeaf, p.FirstID, p.LastID)
}

// failedLine is the one line of a log that does not verify: its first
// problem and how many more there are.
func failedLine(r *tlog.Report) string {
	more := ""
	switch n := int64(len(r.Problems)-1) + r.Omitted; {
	case n == 1:
		more = " (and 1 more problem, above)"
	case n > 1:
		more = fmt.Sprintf(" (and %d more problems, above)", n)
	}
	return fmt.Sprintf("the log does not verify: %s%s", r.Problems[0], more)
}

// verifiedLine is the line of a log that verifies, checked in took.
func verifiedLine(r *tlog.Report, took time.Duration, storedHashes bool) string {
	msg := fmt.Sprintf("OK: %s and %s checked in %s; the tree has the signed root of the %s of the checkpoint",
		plural(r.Events, "event"), pluralOf(r.Leaves, "leaf", "leaves"), took.Round(time.Millisecond), plural(r.CheckpointSize, "event"))
	if r.TrustedSize > 0 {
		msg += fmt.Sprintf(", and the root of the %s of the trusted checkpoint", plural(r.TrustedSize, "event"))
	}
	switch {
	case r.Beyond == 1:
		msg += "; 1 event written since matches its leaf (the next checkpoint signs it)"
	case r.Beyond > 1:
		msg += fmt.Sprintf("; %d events written since match their leaves (the next checkpoint signs them)", r.Beyond)
	}
	if storedHashes {
		msg += fmt.Sprintf("; stored hashes of the tree recomputed from the leaves: %d, all equal", r.StoredHashes)
	}
	return msg
}

// apiSource is the Source of a running server: its checkpoint, its leaves
// and its export.
type apiSource struct{ api *client.Client }

func (s apiSource) Checkpoint(ctx context.Context) ([]byte, error) { return s.api.LogCheckpoint(ctx) }

func (s apiSource) Leaves(ctx context.Context, start int64, count int) ([]vlog.Leaf, int64, error) {
	page, err := s.api.LogLeaves(ctx, start, count)
	return page.Leaves, page.TreeSize, err
}

func (s apiSource) Events(ctx context.Context) iter.Seq2[flagadmin.Event, error] {
	return s.api.ExportEvents(ctx, flagadmin.EventSearchParams{}, 0)
}

// openLogStore opens the existing database that keeps the verifiable log
// (openExisting): migrate for a command that writes.
func (c *cli) openLogStore(ctx context.Context, dbURL string, migrate bool, log *slog.Logger) (flagadmin.Store, func() error, error) {
	dbURL, err := parseDBURL(dbURL)
	if err != nil {
		return nil, nil, cliErrorf("--db: %v", err)
	}
	if dbURL == memoryURL {
		return nil, nil, cliErrorf("--db: memory: starts empty in every process; give the server's database")
	}
	store, err := openExisting(ctx, dbURL, log, migrate)
	if err != nil {
		return nil, nil, err
	}
	return store, store.Close, nil
}

var logHoldCommand = command{
	usage:   "flagadmin log hold --project P [--release] [flags]",
	summary: "Puts the events of project P under legal hold, or with --release ends the hold.",
	about: `Retention (serve --retention) never prunes a held project's events until the hold
is released with --release. P is a project id (1 to 100 letters, digits, or
_ . ~ -); the project need not exist: not any more (events outlive their
projects), nor yet (a hold placed first keeps every event of the project once it
is created). Events without a project follow the retention. The hold is stored
in the database, which must exist, and applies to every server on it at once.
Placing and releasing it are recorded in the log (log-hold-added,
log-hold-released events, by "system"); holding a held project changes nothing.`,
	env: []string{envDB, envLogLevel, envLogFormat},
}

func (c *cli) logHold(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin log hold")
	s := newSettings(fs, c.getenv, withDB)
	project := fs.String("project", "", "the `PROJECT` whose events to hold")
	release := fs.Bool("release", false, "release the project's hold instead")
	cfg, err := c.parseConfig(fs, s, logHoldCommand, args)
	if err != nil {
		return err
	}
	if *project == "" {
		return cliErrorf("flagadmin log hold needs --project P (flagadmin log holds lists the holds)")
	}
	store, closeStore, err := c.openLogStore(ctx, cfg.DB, true, buildLogger(cfg, c.stderr))
	if err != nil {
		return err
	}
	defer closeStore()
	return c.hold(ctx, store, cfg.DB, *project, *release)
}

// hold places or releases a hold on project in store.
func (c *cli) hold(ctx context.Context, store flagadmin.Store, dbURL, project string, release bool) error {
	svc := vlog.NewService(flagadmin.NewService(store), vlog.Config{Store: store.(vlog.Store)})
	if release {
		if err := svc.ReleaseProject(ctx, flagadmin.System, project); err != nil {
			return cliErrorf("cannot release the hold: %s", holdError(err))
		}
		fmt.Fprintf(c.stdout, "released the legal hold on the events of %s in %s: retention applies to them again\n", project, bunstore.RedactURL(dbURL))
		return nil
	}
	if err := svc.HoldProject(ctx, flagadmin.System, project); err != nil {
		return cliErrorf("cannot hold the project: %s", holdError(err))
	}
	fmt.Fprintf(c.stdout, "the events of %s in %s are under legal hold: retention does not prune them\n", project, bunstore.RedactURL(dbURL))
	return nil
}

// holdError names --project in a validation error.
func holdError(err error) string {
	var v *flagadmin.ValidationError
	if errors.As(err, &v) && len(v.Fields) > 0 {
		return "--project: " + v.Fields[0].Message
	}
	return withCause(err)
}

var logHoldsCommand = command{
	usage:   "flagadmin log holds [flags]",
	summary: "Lists the legal holds of the database: each held project and since when.",
	env:     []string{envDB, envLogLevel, envLogFormat},
}

func (c *cli) logHolds(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin log holds")
	s := newSettings(fs, c.getenv, withDB)
	cfg, err := c.parseConfig(fs, s, logHoldsCommand, args)
	if err != nil {
		return err
	}
	store, closeStore, err := c.openLogStore(ctx, cfg.DB, false, buildLogger(cfg, c.stderr))
	if err != nil {
		return err
	}
	defer closeStore()
	return c.listHolds(ctx, store, c.stdout)
}

// listHolds prints the holds of store.
func (c *cli) listHolds(ctx context.Context, store flagadmin.Store, w io.Writer) error {
	holds, err := store.(vlog.Store).LogHolds(ctx)
	if err != nil {
		return cliErrorf("cannot read the holds: %s", withCause(err))
	}
	if len(holds) == 0 {
		fmt.Fprintln(w, "no legal holds")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tHELD SINCE")
	for _, h := range holds {
		fmt.Fprintf(tw, "%s\t%s\n", h.Project, h.Since.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
