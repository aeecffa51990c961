// Command flagadmin serves flagadmin's admin API (five operations of
// Unleash's admin API) over HTTP, and manages its database.
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
//	flagadmin version           print the version
//
// Configuration comes from flags and environment variables (a flag wins):
// FLAGADMIN_ADDR, FLAGADMIN_DB, FLAGADMIN_SEED, FLAGADMIN_ADMIN_TOKENS,
// FLAGADMIN_LOG_LEVEL, FLAGADMIN_LOG_FORMAT, FLAGADMIN_DB_TIMEOUT and the
// cache settings of serve, then Unleash's variables where they mean the
// same (DATABASE_URL, DATABASE_HOST, ..., INIT_ADMIN_API_TOKENS, HTTP_HOST,
// HTTP_PORT, LOG_LEVEL). Run "flagadmin COMMAND -h" for the flags of a
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
// success, 1 on any failure, reported on stderr as one line (or, for a bad
// seed file, a line per wrong entry).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr}
	err := c.dispatch(ctx, args)
	if err == nil || errors.Is(err, errHelpShown) {
		return 0
	}
	fmt.Fprintln(stderr, "flagadmin: "+oneLine(err))
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
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && isHelpFlag(args[0]) {
			fmt.Fprint(c.stdout, mainHelp)
			return errHelpShown
		}
		return c.serve(ctx, args)
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return c.serve(ctx, rest)
	case "migrate":
		return c.migrate(ctx, rest)
	case "seed":
		return c.seed(ctx, rest)
	case "token":
		return c.token(ctx, rest)
	case "service-account":
		return c.accountCommand(ctx, rest, true)
	case "user":
		return c.accountCommand(ctx, rest, false)
	case "version":
		return c.version(rest)
	case "events":
		return c.events(ctx, rest)
	case "webhooks":
		return c.webhooks(ctx, rest)
	case "import":
		return c.importCmd(ctx, rest)
	case "help":
		if len(rest) > 0 {
			return c.dispatch(ctx, []string{rest[0], "-h"})
		}
		fmt.Fprint(c.stdout, mainHelp)
		return errHelpShown
	default:
		return cliErrorf("unknown command %q; the commands are serve, migrate, seed, token, service-account, user, events export, events tail, webhooks status, import unleash and version (flagadmin -h)", cmd)
	}
}

func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

const mainHelp = `flagadmin serves five operations of Unleash's admin API (lifecycle completion,
event search, deprecated event search, project list, service account deletion)
over HTTP, on SQLite, PostgreSQL, MySQL/MariaDB or in memory.

Usage:
  flagadmin [serve] [flags]        run the server (the default command)
  flagadmin migrate [flags]        create or update the database schema
  flagadmin seed [flags] FILE      load a seed file into the database
  flagadmin token create [flags]   create an API token and print its secret
  flagadmin token list|revoke      list the tokens (never their secrets), revoke one
  flagadmin service-account create|list   create (with --token, and a token) or list service accounts
  flagadmin user create|list       create or list user accounts
  flagadmin events export [flags]  export events from a running server (NDJSON or CSV)
  flagadmin events tail [flags]    print the events of a running server as they are recorded
  flagadmin webhooks status        show each webhook sink's position, lag and errors
  flagadmin import unleash [flags] import an Unleash database (or write it as a seed file)
  flagadmin version                print the version

Try it:
  flagadmin serve --demo           start on 127.0.0.1:4242 with a demo world

Run "flagadmin COMMAND -h" for the flags and environment variables of a command.
`

// command describes a command for its help text.
type command struct {
	usage, about string
	env          []string
}

// envHelp describes each environment variable for help texts.
var envHelp = map[string]string{
	envAddr:            "address to listen on (default " + defaultAddr + ")",
	envDB:              "database URL (default " + defaultDB + "): sqlite:PATH, postgres://user:pass@host:5432/db, mysql://user:pass@host:3306/db, memory:",
	envSeed:            "seed file to load at start into an empty store",
	envAdminTokens:     "comma-separated admin tokens (*:*.<secret>) to create at start if missing",
	envLogLevel:        "debug, info, warn or error (default " + defaultLogLevel + ")",
	envLogFormat:       "text or json (default " + defaultLogFormat + ")",
	envTokenCache:      "how long a successful authentication is trusted without asking the database (default " + defaultTokenCacheTTL.String() + "; 0 disables); other servers on the same database may accept a deleted token for that long",
	envURL:             "base URL of the server the client commands talk to (default http://" + defaultAddr + ")",
	envToken:           "API token of the client commands (an admin token or a personal access token)",
	envResultCache:     "memory for cached search results and project lists, such as 64MiB (default " + formatByteSize(defaultResultCacheSize) + "; 0 disables)",
	envMetricsAddr:     "host:port of a separate listener serving only /metrics (default: /metrics on the main listener)",
	envDBTimeout:       "storage deadline of a request, such as 5s (default " + defaultDBTimeout.String() + "; 0 disables): a database that does not answer in time gives 503",
	envWebhooks:        "webhook configuration file: a JSON or YAML list of sinks {name, url, secret, filter}",
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
// arguments; the positional arguments are returned. -h prints the help of
// cmd on stdout.
func (c *cli) parse(fs *flag.FlagSet, cmd command, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printHelp(fs, cmd)
				return nil, errHelpShown
			}
			return nil, cliErrorf("%s: %v (see %s -h)", fs.Name(), err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func (c *cli) printHelp(fs *flag.FlagSet, cmd command) {
	w := c.stdout
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", cmd.usage, cmd.about)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if len(cmd.env) > 0 {
		fmt.Fprint(w, "\nEnvironment (a flag overrides its variable, which overrides Unleash's indented under it):\n")
		for _, name := range cmd.env {
			fmt.Fprintf(w, "  %-27s %s\n", name, envHelp[name])
			for _, v := range unleashEnv {
				if v.of == name {
					fmt.Fprintf(w, "    %-25s %s\n", v.name, v.help)
				}
			}
		}
	}
}

// noArgs reports positional arguments a command does not take.
func noArgs(fs *flag.FlagSet, args []string) error {
	if len(args) > 0 {
		return cliErrorf("%s takes no arguments, got %q (see %s -h)", fs.Name(), args[0], fs.Name())
	}
	return nil
}
