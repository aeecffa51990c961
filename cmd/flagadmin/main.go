// Command flagadmin serves flagadmin's admin API over HTTP (five operations
// of Unleash's admin API, and its own event export and live event stream),
// and manages its database.
//
//	flagadmin [serve] [flags]   run the server (the default command)
//	flagadmin migrate           create or update the database schema
//	flagadmin seed FILE         load a seed file into the database
//	flagadmin token create      create an API token and print its secret
//	flagadmin token list|revoke list the tokens, revoke one
//	flagadmin service-account create|list
//	flagadmin user create|list  manage accounts
//	flagadmin events export     export events from a running server
//	flagadmin events tail       follow the events of a running server live
//	flagadmin webhooks status   show the delivery state of the webhook sinks
//	flagadmin import unleash    import an Unleash database
//	flagadmin follow status     show how a server follows Unleash (serve --follow)
//	flagadmin log ...           keys, audit and legal holds of the verifiable log
//	flagadmin version           print the version (or flagadmin --version, -v)
//
// Configuration comes from flags and environment variables (a flag wins):
// FLAGADMIN_ADDR, FLAGADMIN_DB, FLAGADMIN_SEED, FLAGADMIN_ADMIN_TOKENS,
// FLAGADMIN_LOG_LEVEL, FLAGADMIN_LOG_FORMAT, FLAGADMIN_DB_TIMEOUT and the
// cache settings of serve, then Unleash's variables where they mean the
// same (DATABASE_URL, DATABASE_HOST, ..., INIT_ADMIN_API_TOKENS, HTTP_HOST,
// HTTP_PORT, LOG_LEVEL). Run "flagadmin COMMAND --help" for the flags of a
// command.
//
// This is the only package of the module that uses go.uber.org/fx: it wires
// the store, the flagadmin.Service, the httpapi handler and the net/http
// server, and runs them with start and stop hooks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flagadmin/flagadmin/adapters/gateway"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// cliError is a failure the user can act on: bad configuration, a busy
// port, an unreachable database, a bad seed file. Its message is printed as
// it is, without a stack trace.
type cliError struct{ msg string }

func (e *cliError) Error() string { return e.msg }

func cliErrorf(format string, args ...any) error {
	return &cliError{msg: fmt.Sprintf(format, args...)}
}

// errHelpShown ends a command after its help was printed on request.
var errHelpShown = errors.New("help shown")

// cli runs one command with its environment and output streams.
type cli struct {
	getenv         func(string) string
	stdout, stderr io.Writer
}

// run runs the command of args and returns the process exit code: 0 on
// success, 1 on any failure, reported on stderr as one line starting with
// "flagadmin: " or with the command, "flagadmin seed: " (or, for a bad seed
// file, a line per wrong entry).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr}
	err := c.dispatch(ctx, args)
	if err == nil || errors.Is(err, errHelpShown) {
		return 0
	}
	msg := oneLine(err)
	if !strings.HasPrefix(msg, "flagadmin ") { // "flagadmin seed: ..." names the command itself
		msg = "flagadmin: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return 1
}

// oneLine returns the message of err; a *cliError's message is kept as it
// is (it may list the entries of a seed file), anything else is folded into
// one line.
func oneLine(err error) string {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.msg
	}
	return flat(err)
}

// flat returns the message of err on one line.
func flat(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// withCause returns the message of err on one line, followed by the
// diagnostic detail a store keeps out of its errors' messages (a
// slog.LogValuer in the chain, such as the driver's explanation): for the
// operator, who has no other log of it.
func withCause(err error) string {
	var detail slog.LogValuer
	if errors.As(err, &detail) {
		return flat(err) + " (" + strings.Join(strings.Fields(detail.LogValue().Resolve().String()), " ") + ")"
	}
	return flat(err)
}

func (c *cli) dispatch(ctx context.Context, args []string) error {
	args = commandFirst(args)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && isHelpFlag(args[0]) {
			fmt.Fprint(c.stdout, mainHelp)
			return errHelpShown
		}
		if len(args) > 0 && isVersionFlag(args[0]) {
			return c.version(args[1:])
		}
		return c.serve(ctx, args)
	}
	cmd, rest := args[0], args[1:]
	if cmd == "help" {
		if len(rest) > 0 {
			return c.dispatch(ctx, append(slices.Clone(rest), "--help"))
		}
		fmt.Fprint(c.stdout, mainHelp)
		return errHelpShown
	}
	cm, ok := commandNamed(cmd)
	if !ok {
		return cliErrorf("unknown command %q; the commands are serve, migrate, seed, token, service-account, user, events export, events tail, webhooks status, import unleash, follow status, log and version (flagadmin --help)", cmd)
	}
	return cm.run(c, ctx, rest)
}

// commandEntry is a command of dispatch: its name, whether a subcommand
// follows it (token create, follow status), and what runs it.
type commandEntry struct {
	name string
	sub  bool
	run  func(c *cli, ctx context.Context, args []string) error
}

// commands are the commands dispatch runs, but help.
var commands = []commandEntry{
	{"serve", false, (*cli).serve},
	{"migrate", false, (*cli).migrate},
	{"seed", false, (*cli).seed},
	{"token", true, (*cli).token},
	{"service-account", true, func(c *cli, ctx context.Context, args []string) error { return c.accountCommand(ctx, args, true) }},
	{"user", true, func(c *cli, ctx context.Context, args []string) error { return c.accountCommand(ctx, args, false) }},
	{"version", false, func(c *cli, _ context.Context, args []string) error { return c.version(args) }},
	{"events", true, (*cli).events},
	{"webhooks", true, (*cli).webhooks},
	{"import", true, (*cli).importCmd},
	{"follow", true, (*cli).followCmd},
	{"log", true, (*cli).logCmd},
}

// commandNamed returns the entry of commands named name, or help's (which
// takes no subcommand of its own).
func commandNamed(name string) (commandEntry, bool) {
	if name == "help" {
		return commandEntry{name: name}, true
	}
	i := slices.IndexFunc(commands, func(cm commandEntry) bool { return cm.name == name })
	if i < 0 {
		return commandEntry{}, false
	}
	return commands[i], true
}

// commandFirst moves flags given before the command after it and its
// subcommand: "flagadmin --db sqlite:x.db seed world.json" runs as
// "flagadmin seed --db sqlite:x.db world.json", so each command parses
// (and refuses, by name) the flags meant for it. args that do not start
// with flags followed by a command are returned as they are (flags alone
// are serve's).
func commandFirst(args []string) []string {
	for i, a := range args {
		cm, ok := commandNamed(a)
		if i == 0 || !ok || !onlyFlags(args[:i], a) {
			continue
		}
		end := i + 1
		if cm.sub && end < len(args) && !strings.HasPrefix(args[end], "-") {
			end++ // the subcommand
		}
		out := slices.Concat(args[i:end], args[:i], args[end:])
		if end == i+1 && cm.sub {
			// No subcommand (or a flag such as --help in its place): the
			// flags go last, where the subcommand is looked for first.
			out = slices.Concat(args[i:end], args[end:], args[:i])
		}
		return out
	}
	return args
}

// onlyFlags reports whether args consist of flags, each with its value, as
// given before the command cmd: every flag takes a value (--db URL or
// --db=URL) except the boolean ones.
func onlyFlags(args []string, cmd string) bool {
	for j := 0; j < len(args); j++ {
		a := args[j]
		if a == "-" || a == "--" || !strings.HasPrefix(a, "-") {
			return false
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") || isBoolFlag(name, cmd) {
			continue
		}
		j++ // its value
		if j == len(args) {
			return false
		}
	}
	return true
}

// isBoolFlag reports whether the flag name of the command cmd takes no
// value.
func isBoolFlag(name, cmd string) bool {
	switch name {
	case "demo", "dry-run", "h", "help", "version", "release":
		return true
	case "token": // --token of service-account create; events' --token takes one
		return cmd == "service-account"
	}
	return false
}

func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// isVersionFlag reports whether arg asks for the version instead of a
// command: --version, or -v.
func isVersionFlag(arg string) bool {
	switch arg {
	case "-v", "--v", "-version", "--version":
		return true
	}
	return false
}

const mainHelp = `flagadmin serves eleven operations of an admin API over HTTP, on SQLite,
PostgreSQL, MySQL/MariaDB or in memory, and manages their database.

The operations: five of Unleash's admin API, wire-compatible (lifecycle
completion, event search, deprecated event search, project list, service
account deletion), its own event export and live event stream, and the four
of its verifiable event log (signed checkpoint, proofs, leaves).

Usage:
  flagadmin [serve] [flags]              run the server (the default command)
  flagadmin migrate [flags]              create or update the database schema
  flagadmin seed [flags] FILE            load a seed file into the database
  flagadmin token create|list|revoke     create, list or revoke API tokens
  flagadmin service-account create|list  create or list service accounts
  flagadmin user create|list             create or list user accounts
  flagadmin events export|tail           export or follow a server's events
  flagadmin webhooks status              show the delivery state of webhooks
  flagadmin import unleash [flags]       import an Unleash database
  flagadmin follow status [flags]        show how a server follows Unleash (serve --follow)
  flagadmin log keygen|verify|hold|holds keys, audit and legal holds of the event log
  flagadmin version                      print the version (or --version, -v)

Flags go after the command (flagadmin seed --db sqlite:x.db FILE); flags given
before it are passed to it.

Try it:
  flagadmin serve --demo                 serve a demo world on 127.0.0.1:4242

Run "flagadmin COMMAND --help" for what a command does, its flags and its
environment variables.
`

// command describes a command for its help text: its usage line, what it
// does in one or two lines (summary, printed first), the details (about)
// and the environment variables it reads.
type command struct {
	usage, summary, about string
	env                   []string
}

// envHelp describes each environment variable for help texts.
var envHelp = map[string]string{
	envAddr:            "address to listen on (default " + defaultAddr + ")",
	envDB:              "database URL (default " + defaultDB + "): sqlite:PATH, postgres://user:pass@host:5432/db, mysql://user:pass@host:3306/db, memory:",
	envSeed:            "seed file to load at start into an empty store",
	envAdminTokens:     "comma-separated admin tokens (*:*.<secret>) to create at start if missing",
	envLogLevel:        "debug, info, warn or error (default " + defaultLogLevel + ")",
	envLogFormat:       "text or json (default " + defaultLogFormat + ")",
	envTokenCache:      "how long a successful authentication is remembered while nothing is written to the database (default " + defaultTokenCacheTTL.String() + "; 0 disables)",
	envURL:             "base URL of the server the client commands talk to (default http://" + defaultAddr + ")",
	envToken:           "API token of the client commands (an admin token or a personal access token)",
	envResultCache:     "memory for cached search results and project lists, such as 64MiB (default " + formatByteSize(defaultResultCacheSize) + "; 0 disables)",
	envMetricsAddr:     "host:port of a separate listener serving only /metrics (default: /metrics on the main listener)",
	envDBMaxConns:      "most connections to a PostgreSQL or MySQL server (default " + strconv.Itoa(defaultDBMaxConns) + ")",
	envMaxStreams:      "most live event streams held at once (default " + strconv.Itoa(defaultMaxStreams) + "); beyond it a new one gets 503",
	envDBTimeout:       "storage deadline of a request, such as 5s (default " + defaultDBTimeout.String() + "; 0 disables): a database that does not answer in time gives 503",
	envWebhooks:        "webhook configuration file: a JSON or YAML list of sinks {name, url, secret, filter}",
	envFollow:          "URL of an Unleash PostgreSQL database to follow: the store becomes its read-only copy, kept current",
	envLogKey:          "file of the key that signs the event log's checkpoints (flagadmin log keygen); none: no checkpoints",
	envLogState:        "file the server keeps its last signed checkpoint in (default: the --log-key file + .checkpoint)",
	envRetention:       "how long events are kept, such as 90d (default: for ever); older ones are pruned unless their project is held",
	envUpstream:        "base URL of the Unleash server to stand in front of, such as http://unleash:4242 (default: none)",
	envUpstreamTimeout: "with an upstream: the longest wait for Unleash's answer before 504 (default " + gateway.DefaultTimeout.String() + ")",
	envFollowWait:      "with an upstream: the longest a forwarded write waits for its event in flagadmin's copy (default " + gateway.DefaultFollowWait.String() + ")",
}

// newFlagSet returns a flag set that reports errors to the caller instead
// of printing them.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseConfig parses args, which must be flags only, into fs and returns
// the configuration the settings s read.
func (c *cli) parseConfig(fs *flag.FlagSet, s *settings, cmd command, args []string) (Config, error) {
	rest, err := c.parse(fs, cmd, args)
	if err != nil {
		return Config{}, err
	}
	if err := noArgs(fs, rest); err != nil {
		return Config{}, err
	}
	return s.config(fs)
}

// parse parses args into fs. Flags may come before and after positional
// arguments; the positional arguments are returned. --help prints the help
// of cmd on stdout.
func (c *cli) parse(fs *flag.FlagSet, cmd command, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printHelp(fs, cmd)
				return nil, errHelpShown
			}
			return nil, cliErrorf("%s: %s (see %s --help)", fs.Name(), flagError(err), fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// flagDash matches a flag name written with one dash in the flag
// package's messages ("-port", "for flag -addr").
var flagDash = regexp.MustCompile(`(^|[ :])-([A-Za-z])`)

// flagError is the message of a flag package parse error with the flags
// written --name, as the help writes them.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return "unknown flag -" + name
	}
	return flagDash.ReplaceAllString(msg, "$1--$2")
}

// helpWidth is the width help texts are wrapped to.
const helpWidth = 80

// printHelp writes the help of cmd: what it does, its usage, the details,
// its flags and its environment variables.
func (c *cli) printHelp(fs *flag.FlagSet, cmd command) {
	w := c.stdout
	writeWrapped(w, "", cmd.summary, 0)
	fmt.Fprintf(w, "\nUsage: %s\n", cmd.usage)
	for _, paragraph := range strings.Split(cmd.about, "\n\n") {
		if strings.TrimSpace(paragraph) != "" {
			fmt.Fprintln(w)
			writeWrapped(w, "", paragraph, 0)
		}
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, fs)
	}
	if len(cmd.env) > 0 {
		fmt.Fprint(w, "\nEnvironment (a flag overrides its variable, which overrides Unleash's indented under it):\n")
		for _, name := range cmd.env {
			writeWrapped(w, fmt.Sprintf("  %-27s ", name), envHelp[name], 30)
			for _, v := range unleashEnv {
				if v.of == name {
					writeWrapped(w, fmt.Sprintf("    %-25s ", v.name), v.help, 30)
				}
			}
		}
	}
}

// printFlags writes the flags of fs as --name PLACEHOLDER, each followed by
// its description and default, indented and wrapped. The placeholder is
// the back-quoted word of the description (flag.UnquoteUsage); the default
// is left out when it is the zero value, or when the description tells it
// itself ("(default: ...)").
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		placeholder, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if placeholder != "" {
			line += " " + placeholder
		}
		fmt.Fprintln(w, line)
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			if !strings.Contains(usage, "(default") {
				usage += " (default " + f.DefValue + ")"
			}
		}
		writeWrapped(w, "      ", usage, 6)
	})
}

// writeWrapped writes text after first, its words wrapped at helpWidth,
// the lines after the first indented by indent spaces.
func writeWrapped(w io.Writer, first, text string, indent int) {
	line := first
	fresh := true // nothing but the lead on line yet
	for _, word := range strings.Fields(text) {
		if !fresh && len(line)+1+len(word) > helpWidth {
			fmt.Fprintln(w, line)
			line, fresh = strings.Repeat(" ", indent), true
		}
		if !fresh {
			line += " "
		}
		line += word
		fresh = false
	}
	fmt.Fprintln(w, strings.TrimRight(line, " "))
}

// noArgs reports positional arguments a command does not take.
func noArgs(fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return cliErrorf("%s takes no arguments, got %q (see %s --help)", fs.Name(), args[0], fs.Name())
	}
	return nil
}

// plural writes n and noun, with an s unless n is 1: "1 event", "2 events".
func plural(n int64, noun string) string { return pluralOf(n, noun, noun+"s") }

// pluralOf writes n and one when n is 1, else n and many: "1 leaf", "2 leaves".
func pluralOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}
