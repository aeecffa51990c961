package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/sqlitedsn"
)

// runCLI runs the command line args with the environment env.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, func(k string) string { return env[k] }, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"Usage:", "flagadmin migrate", "flagadmin seed", "token create", "--demo", "eleven operations"}},
		{[]string{"help"}, []string{"flagadmin version"}},
		{[]string{"serve", "-h"}, []string{"Usage: flagadmin [serve]", "SIGTERM", "\n  --addr HOST:PORT\n", "\n  --db URL\n", "\n  --demo\n", "\n  --seed FILE\n",
			"\n  --admin-tokens TOKENS\n", "\n  --log-level LEVEL\n", "\n  --log-format FORMAT\n",
			envAddr, envDB, envSeed, envAdminTokens, envLogLevel, envLogFormat, "admin token (shown once)",
			"\n  --token-cache-ttl DURATION\n", envTokenCache, "\n  --result-cache-size SIZE\n", envResultCache, "(default 64MiB)",
			"\n  --db-timeout DURATION\n", envDBTimeout, "(default 5s)", "503 ServiceUnavailable", "\n  --max-streams NUMBER\n", envMaxStreams, "(default 1000)",
			"\n  --db-max-conns NUMBER\n", envDBMaxConns, "(default 8)",
			// Unleash's variables, in the flags' lines and in the environment list
			"(env FLAGADMIN_DB; Unleash's DATABASE_URL, DATABASE_HOST,", "DATABASE_PASSWORD,\n      DATABASE_SSL)",
			"(env FLAGADMIN_ADDR; Unleash's HTTP_HOST,", "(env FLAGADMIN_ADMIN_TOKENS; Unleash's INIT_ADMIN_API_TOKENS)",
			"(env FLAGADMIN_LOG_LEVEL; Unleash's", "\n    DATABASE_URL ", "\n    DATABASE_HOST ", "\n    DATABASE_PORT ",
			"\n    DATABASE_NAME ", "\n    DATABASE_USERNAME ", "\n    DATABASE_PASSWORD ", "\n    DATABASE_SSL ", "\n    INIT_ADMIN_API_TOKENS ",
			"\n    HTTP_HOST ", "\n    HTTP_PORT ", "\n    LOG_LEVEL ", "or fatal"}},
		{[]string{"--help"}, []string{"Usage:"}},
		{[]string{"help", "seed"}, []string{"Usage: flagadmin seed [flags] FILE", "--db URL", envDB}},
		{[]string{"help", "token", "revoke"}, []string{"Usage: flagadmin token revoke [flags] ID|SECRET"}},
		{[]string{"migrate", "--help"}, []string{"Usage: flagadmin migrate", "schema", "--db URL", envDB, envLogLevel, "\n    DATABASE_URL ", "\n    LOG_LEVEL "}},
		{[]string{"seed", "-h"}, []string{"Usage: flagadmin seed", "projects[2].mode", "--db URL", envDB}},
		{[]string{"token", "create", "-h"}, []string{"Usage: flagadmin token create", "--name NAME", "--type TYPE", "--user-id ID", "--project PROJECT", "--environment ENVIRONMENT", "--expires EXPIRY", envDB}},
		{[]string{"token", "-h"}, []string{"Usage:\n  flagadmin token create [flags]\n", "\n  flagadmin token list [flags]\n", "\n  flagadmin token revoke [flags] ID|SECRET\n"}},
		{[]string{"events", "-h"}, []string{"\n  flagadmin events export [flags]\n", "\n  flagadmin events tail [flags]\n"}},
		{[]string{"version", "-h"}, []string{"Usage: flagadmin version"}},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, nil, tt.args...)
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", tt.args, code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: the help does not mention %q:\n%s", tt.args, w, stdout)
			}
		}
	}
}

// helpCommands are the command lines of every command's and subcommand's
// help (and of the main help: none).
var helpCommands = [][]string{
	{}, {"serve"}, {"migrate"}, {"seed"}, {"token"}, {"token", "create"}, {"token", "list"}, {"token", "revoke"},
	{"service-account"}, {"service-account", "create"}, {"service-account", "list"},
	{"user"}, {"user", "create"}, {"user", "list"}, {"events"}, {"events", "export"}, {"events", "tail"},
	{"webhooks"}, {"webhooks", "status"}, {"import"}, {"import", "unleash"}, {"version"},
	{"follow"}, {"follow", "status"}, {"log"}, {"log", "keygen"}, {"log", "verify"}, {"log", "hold"}, {"log", "holds"},
}

// TestHelpOfEveryCommand checks what every command's help has in common:
// it starts with what the command does (one or two lines, then a blank
// line), its usage line is its own (a subcommand's help is not its
// siblings'), every flag is written --name with a placeholder for its
// value (booleans excepted) and a description, no default is given twice,
// every environment variable listed has a description, and no line is
// wider than 80 columns but those of long words.
func TestHelpOfEveryCommand(t *testing.T) {
	bools := map[string]bool{"--demo": true, "--dry-run": true, "--token": true, "--release": true, "--rebuild-summaries": true}
	for _, args := range helpCommands {
		code, stdout, stderr := runCLI(t, nil, append(slices.Clone(args), "--help")...)
		name := strings.Join(args, " ")
		if code != 0 || stderr != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, stderr)
			continue
		}
		summary, rest, _ := strings.Cut(stdout, "\n\n")
		if n := strings.Count(summary, "\n"); summary == "" || n > 1 || strings.HasPrefix(summary, "Usage") {
			t.Errorf("%s --help does not start with one or two lines saying what it does:\n%s", name, stdout)
		}
		if !strings.HasPrefix(rest, "Usage:") && (len(args) > 0 || !strings.Contains(rest, "\n\nUsage:\n")) {
			t.Errorf("%s --help: no usage after the summary:\n%s", name, stdout)
		}
		if len(args) == 2 && !strings.Contains(rest, "Usage: flagadmin "+name+" ") && !strings.Contains(rest, "Usage: flagadmin "+name+"\n") {
			t.Errorf("%s --help: the usage line is not its own:\n%s", name, stdout)
		}
		for _, block := range regexp.MustCompile(`(?m)^  --[^\n]*\n(?: {6}[^\n]*\n)*`).FindAllString(stdout, -1) {
			if strings.Count(block, "(default") > 1 {
				t.Errorf("%s --help gives a default twice:\n%s", name, block)
			}
		}
		if m := regexp.MustCompile(`(?m)^\s+-[a-z]`).FindString(stdout); m != "" {
			t.Errorf("%s --help writes a flag with one dash (%q):\n%s", name, m, stdout)
		}
		for _, m := range regexp.MustCompile(`(?m)^  (--[a-z-]+)( \S+)?\n( {6}\S)?`).FindAllStringSubmatch(stdout, -1) {
			if m[2] == "" && !bools[m[1]] {
				t.Errorf("%s --help: %s has no placeholder for its value", name, m[1])
			}
			if m[2] != "" && !regexp.MustCompile(`^ [A-Z][A-Z:|]*$`).MatchString(m[2]) {
				t.Errorf("%s --help: %s has the placeholder %q, not a word in capitals", name, m[1], m[2])
			}
			if m[3] == "" {
				t.Errorf("%s --help: %s has no description", name, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`(?m)^  (FLAGADMIN_[A-Z_]+) *(.*)$`).FindAllStringSubmatch(stdout, -1) {
			if strings.TrimSpace(m[2]) == "" {
				t.Errorf("%s --help: %s has no description", name, m[1])
			}
		}
		for _, line := range strings.Split(stdout, "\n") {
			if len(line) > helpWidth && strings.Contains(strings.TrimSpace(line), " ") && !strings.HasPrefix(line, "Environment") &&
				!strings.HasPrefix(line, "  flagadmin ") && !strings.HasPrefix(line, "Usage") {
				t.Errorf("%s --help: line wider than %d: %q", name, helpWidth, line)
			}
		}
	}
}

// TestFlagsBeforeTheCommand: flags given before a command are the
// command's, for every command that takes them.
func TestFlagsBeforeTheCommand(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "x.db")
	seedFile := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seedFile, []byte(testSeed), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string // on stdout
	}{
		{[]string{"--db", db, "migrate"}, "migrated " + db},
		{[]string{"--db", db, "seed", seedFile}, "loaded " + seedFile},
		{[]string{"--db=" + db, "--log-level", "warn", "token", "create", "--name", "ci"}, "*:*."},
		{[]string{"--db", db, "token", "list"}, "ci"},
		{[]string{"--db", db, "user", "create", "--name", "Bob"}, `created user`},
		{[]string{"--token", "--db", db, "service-account", "create", "--name", "bot"}, "user:"},
		{[]string{"--db", db, "service-account", "list"}, "bot"},
		{[]string{"--db", db, "webhooks", "status"}, "no webhook sinks"},
		{[]string{"--db", db, "token", "--help"}, "flagadmin token revoke"},
		{[]string{"--db", db, "help", "migrate"}, "Usage: flagadmin migrate"},
	} {
		code, stdout, stderr := runCLI(t, nil, tt.args...)
		if code != 0 || !strings.Contains(stdout, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
	for _, tt := range []struct {
		args []string
		want string // the line on stderr
	}{
		{[]string{"--addr", "127.0.0.1:0", "migrate", "--db", db}, "flagadmin migrate: unknown flag --addr (see flagadmin migrate --help)\n"},
		{[]string{"--db", db, "token"}, "flagadmin token needs a subcommand: create, list or revoke (see flagadmin token --help)\n"},
		{[]string{"--db", db, "version"}, "flagadmin version: unknown flag --db (see flagadmin version --help)\n"},
	} {
		code, _, stderr := runCLI(t, nil, tt.args...)
		if code != 1 || stderr != tt.want {
			t.Errorf("%q: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestFlagsBeforeEveryCommand: for every command, flags given before it
// reach it (its own outcome, never serve's "unknown flag"), and its errors
// suggest only flags it has (those of its help).
func TestFlagsBeforeEveryCommand(t *testing.T) {
	dir := t.TempDir()
	missing := "sqlite:" + filepath.Join(dir, "missing.db")
	_, verifier := keyFiles(t)
	notExist := "database " + missing + " does not exist"
	tests := []struct {
		pre, cmd, post []string
		want           string // on stdout with exit 0, else on stderr with exit 1
		ok             bool
	}{
		{[]string{"--db", "memory:", "--addr", "nowhere"}, []string{"serve"}, nil, "--addr: \"nowhere\" is not a host:port address", false},
		{[]string{"--db", "memory:"}, []string{"migrate"}, nil, "memory: has no schema", true},
		{[]string{"--db", "memory:"}, []string{"seed"}, []string{"x.json"}, "memory: keeps nothing", false},
		{[]string{"--db", "memory:", "--type", "bogus"}, []string{"token", "create"}, nil, "--type: unknown token type", false},
		{[]string{"--db", missing}, []string{"token", "list"}, nil, notExist, false},
		{[]string{"--db", missing}, []string{"token", "revoke"}, []string{"abc"}, notExist, false},
		{[]string{"--db", missing}, []string{"service-account", "list"}, nil, notExist, false},
		{[]string{"--db", "memory:", "--name", "x"}, []string{"service-account", "create"}, nil, "memory: keeps nothing", false},
		{[]string{"--db", missing}, []string{"user", "list"}, nil, notExist, false},
		{[]string{"--root-role", "Boss", "--name", "x"}, []string{"user", "create"}, nil, "--root-role: \"Boss\" is not a root role", false},
		{nil, []string{"version"}, nil, "flagadmin ", true},
		{[]string{"--url", "http://127.0.0.1:1", "--token", "*:*.x", "--after-id", "-1"}, []string{"events", "export"}, nil, "--after-id must be 0 or more", false},
		{[]string{"--url", "http://127.0.0.1:1", "--format", "xml"}, []string{"events", "tail"}, nil, "--format must be text or ndjson", false},
		{[]string{"--db", missing}, []string{"webhooks", "status"}, nil, notExist, false},
		{[]string{"--to-seed", filepath.Join(dir, "s.json"), "--dry-run"}, []string{"import", "unleash"}, []string{"--from", "postgres://127.0.0.1:1/u"}, "--to-seed and --dry-run exclude each other", false},
		{[]string{"--url", "http://127.0.0.1:1"}, []string{"follow", "status"}, nil, "cannot reach the server at http://127.0.0.1:1", false},
		{[]string{"--db", missing}, []string{"follow", "status"}, nil, notExist, false},
		{[]string{"--out", filepath.Join(dir, "k"), "--origin", "a.test/log"}, []string{"log", "keygen"}, nil, "wrote the signing key of a.test/log", true},
		{[]string{"--key", verifier, "--db", missing}, []string{"log", "verify"}, nil, notExist, false},
		{[]string{"--key", verifier, "--db", "memory:"}, []string{"log", "verify"}, nil, "memory: starts empty", false},
		{[]string{"--db", missing, "--project", "web"}, []string{"log", "hold"}, nil, notExist, false},
		{[]string{"--db", missing}, []string{"log", "holds"}, nil, notExist, false},
		{[]string{"--db", "memory:"}, []string{"log", "holds"}, nil, "memory: starts empty", false},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.cmd[0]] = true
		args := slices.Concat(tt.pre, tt.cmd, tt.post)
		code, stdout, stderr := runCLI(t, nil, args...)
		got := stderr
		if tt.ok {
			got = stdout
		}
		if code != map[bool]int{true: 0, false: 1}[tt.ok] || !strings.Contains(got, tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, tt.want)
			continue
		}
		_, help, _ := runCLI(t, nil, append(slices.Clone(tt.cmd), "--help")...)
		for _, m := range regexp.MustCompile(`--[a-z][a-z-]*`).FindAllString(stderr, -1) {
			if !strings.Contains(help, "\n  "+m+" ") && !strings.Contains(help, "\n  "+m+"\n") {
				t.Errorf("%q: the error %q names %s, which flagadmin %s does not have", args, stderr, m, strings.Join(tt.cmd, " "))
			}
		}
	}
	for _, cm := range commands {
		if !covered[cm.name] {
			t.Errorf("no case for flagadmin %s", cm.name)
		}
	}
}

// TestHelpListsOnlyTheVariablesACommandReads checks that a database
// command's help leaves out the server's variables, Unleash's too.
func TestHelpListsOnlyTheVariablesACommandReads(t *testing.T) {
	_, stdout, _ := runCLI(t, nil, "migrate", "-h")
	for _, name := range []string{envAddr, envAdminTokens, "HTTP_HOST", "HTTP_PORT", "INIT_ADMIN_API_TOKENS"} {
		if strings.Contains(stdout, name) {
			t.Errorf("the help of migrate lists %s, which it does not read:\n%s", name, stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	code, want, _ := runCLI(t, nil, "version")
	driver := "modernc.org/sqlite"
	if sqlitedsn.Native() {
		driver = "mattn/go-sqlite3"
	}
	if code != 0 || !strings.HasPrefix(want, "flagadmin ") || strings.Count(want, "\n") != 1 || !strings.Contains(want, driver) {
		t.Errorf("got exit %d, %q; want 0 and one line flagadmin <version> that names %s", code, want, driver)
	}
	for _, flag := range []string{"--version", "-version", "-v"} {
		if code, stdout, stderr := runCLI(t, nil, flag); code != 0 || stdout != want || stderr != "" {
			t.Errorf("flagadmin %s: exit %d, stdout %q, stderr %q; want 0 and %q", flag, code, stdout, stderr, want)
		}
	}
}

// TestBadConfigurationIsOneLine checks that every configuration mistake
// ends with exit code 1 and one line on stderr.
func TestBadConfigurationIsOneLine(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bad scheme", map[string]string{envDB: "redis://x"}, nil, "flagadmin: FLAGADMIN_DB: unsupported database URL"},
		{"bad log level", nil, []string{"serve", "--log-level", "loud"}, "flagadmin: --log-level: unknown log level"},
		{"bad Unleash variable", map[string]string{"DATABASE_HOST": "db", "DATABASE_SSL": "maybe"}, nil, "flagadmin: DATABASE_SSL: flagadmin reads only true"},
		{"bad Unleash variable of migrate", map[string]string{"DATABASE_URL": "mysql://db/x"}, []string{"migrate"}, "flagadmin: DATABASE_URL: "},
		{"unknown flag", nil, []string{"serve", "--port", "1"}, "flagadmin serve: unknown flag --port (see flagadmin serve --help)"},
		{"flag without value", nil, []string{"serve", "--addr"}, "flagadmin serve: flag needs an argument: --addr (see flagadmin serve --help)"},
		{"bad flag value", nil, []string{"token", "create", "--user-id", "x"}, `flagadmin token create: invalid value "x" for flag --user-id: `},
		{"unknown command", nil, []string{"start"}, `flagadmin: unknown command "start"`},
		{"serve argument", nil, []string{"serve", "extra"}, `flagadmin serve takes no arguments, got "extra"`},
		{"token without subcommand", nil, []string{"token"}, "flagadmin token needs a subcommand: create"},
		{"seed without file", nil, []string{"seed"}, "flagadmin seed takes one seed file"},
		{"seed in memory", nil, []string{"seed", "--db", "memory:", "x.json"}, "flagadmin: memory: keeps nothing"},
		{"missing seed file", nil, []string{"serve", "--db", "memory:", "--seed", "/nonexistent/seed.json", "--addr", "127.0.0.1:0"}, "flagadmin: seed file: open /nonexistent/seed.json"},
		{"sqlite in a missing directory", nil, []string{"migrate", "--db", "sqlite:/nonexistent/x.db"}, "flagadmin: cannot open database sqlite:/nonexistent/x.db: directory /nonexistent does not exist\n"},
		{"serve on sqlite in a missing directory", nil, []string{"--db", "sqlite:/nonexistent/x.db", "--addr", "127.0.0.1:0"}, "flagadmin: cannot open database sqlite:/nonexistent/x.db: directory /nonexistent does not exist\n"},
		{"unreachable database", nil, []string{"serve", "--db", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", "--addr", "127.0.0.1:0"}, "flagadmin: cannot "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.env, tt.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if !strings.HasPrefix(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting with %q", stderr, tt.want)
			}
		})
	}
}

const testSeed = `{
  "users": [{"id": 1, "name": "Ada", "email": "ada@example.com", "rootRole": "Admin"}],
  "serviceAccounts": [{"id": 10, "name": "CI bot", "username": "ci-bot", "rootRole": "Editor"}],
  "projects": [{"id": "default", "name": "Default", "mode": "open", "createdAt": "2025-01-01T00:00:00Z",
                "members": [{"userId": 1, "role": "Owner"}]}],
  "features": [{"name": "new-checkout", "project": "default", "type": "release", "createdAt": "2025-01-02T00:00:00Z",
                "tags": [{"type": "simple", "value": "checkout"}]}],
  "apiTokens": [{"secret": "*:*.e2e-admin", "type": "admin", "name": "e2e"},
                {"secret": "user:ci-secret", "userId": 10, "name": "ci"}],
  "events": [
    {"type": "feature-created", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-02T00:00:00Z",
     "project": "default", "featureName": "new-checkout", "data": {"name": "new-checkout"},
     "tags": [{"type": "simple", "value": "checkout"}]},
    {"type": "service-account-created", "createdBy": "ada@example.com", "createdByUserId": 1, "createdAt": "2025-01-03T00:00:00Z",
     "data": {"id": 10, "name": "CI bot"}}
  ]
}`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSeedCommand(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "seed.db")
	env := map[string]string{envDB: db, envLogLevel: "warn"}
	file := writeFile(t, "seed.json", testSeed)

	code, stdout, stderr := runCLI(t, env, "seed", file)
	if code != 0 {
		t.Fatalf("seed: exit %d, stderr %s", code, stderr)
	}
	want := "loaded " + file + " into " + db + ": 1 user, 1 service account, 0 groups, 1 project, 1 feature, 2 API tokens, 2 events\n"
	if stdout != want {
		t.Errorf("got stdout %q, want %q", stdout, want)
	}

	// The same file again: every id is taken, nothing is loaded, the error names the entries.
	code, stdout, stderr = runCLI(t, env, "seed", file)
	if code != 1 || stdout != "" {
		t.Errorf("second seed: exit %d, stdout %q; want 1 and nothing", code, stdout)
	}
	for _, w := range []string{"nothing was loaded", "users[0].id: user 1 already exists", "projects[0].id", "apiTokens[0].secret"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("second seed: stderr does not name %q:\n%s", w, stderr)
		}
	}

	bad := writeFile(t, "bad.json", `{"projects": [{"id": "p", "mode": "secret"}], "features": [{"name": "f", "project": "nope"}]}`)
	code, _, stderr = runCLI(t, env, "seed", "--db", db, bad)
	if code != 1 || !strings.Contains(stderr, "projects[0].mode: must be one of open, protected, private") || !strings.Contains(stderr, `features[0].project: project nope does not exist`) {
		t.Errorf("bad seed: exit %d, stderr:\n%s\nwant 1 and the two wrong entries named", code, stderr)
	}

	store := openTestStore(t, db)
	svc := flagadmin.NewService(store)
	if _, err := store.Feature(context.Background(), "f"); err == nil {
		t.Error("the bad seed was partly loaded")
	}
	if _, err := svc.Authenticate(context.Background(), "*:*.e2e-admin"); err != nil {
		t.Errorf("the seed's admin token does not authenticate: %v", err)
	}
}

func openTestService(t *testing.T, db string) *flagadmin.Service {
	t.Helper()
	return flagadmin.NewService(openTestStore(t, db))
}

// openTestStore opens the store of db, closed when t ends.
func openTestStore(t *testing.T, db string) *bunstore.Store {
	t.Helper()
	store, err := bunstore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func TestTokenCreateCommand(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "token.db")
	env := map[string]string{envDB: db}
	if code, _, stderr := runCLI(t, env, "seed", writeFile(t, "seed.json", testSeed)); code != 0 {
		t.Fatalf("seed: %s", stderr)
	}

	tests := []struct {
		args   []string
		prefix string
		kind   flagadmin.PrincipalKind
	}{
		{[]string{"--name", "ops"}, "*:*.", flagadmin.PrincipalAdminToken},
		{[]string{"--type", "user", "--user-id", "10", "--expires", "30d"}, "user:", flagadmin.PrincipalUser},
		{[]string{"--type", "client", "--project", "default", "--environment", "production"}, "default:production.", flagadmin.PrincipalClientToken},
	}
	svc := openTestService(t, db)
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, env, append([]string{"token", "create"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, stderr)
		}
		secret := strings.TrimSuffix(stdout, "\n")
		if !strings.HasPrefix(secret, tt.prefix) || strings.ContainsAny(secret, " \n") {
			t.Errorf("%q: stdout %q, want only the secret, starting with %s", tt.args, stdout, tt.prefix)
		}
		if !strings.Contains(stderr, "shown once") || strings.Contains(stderr, secret) {
			t.Errorf("%q: stderr %q, want a note without the secret", tt.args, stderr)
		}
		p, err := svc.Authenticate(context.Background(), secret)
		if err != nil || p.Kind != tt.kind {
			t.Errorf("%q: the new secret authenticates as %+v, %v; want kind %v", tt.args, p, err, tt.kind)
		}
	}

	code, stdout, stderr := runCLI(t, env, "token", "create", "--type", "user", "--user-id", "99")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "--user-id: user 99 does not exist") {
		t.Errorf("token for a missing user: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, typ := range []string{"client", "frontend"} {
		code, stdout, stderr = runCLI(t, env, "token", "create", "--type", typ, "--project", "nosuch", "--environment", "production")
		want := "flagadmin: cannot create the token: --project: project \"nosuch\" does not exist\n"
		if code != 1 || stdout != "" || stderr != want {
			t.Errorf("%s token of a missing project: exit %d, stdout %q, stderr %q; want 1 and %q", typ, code, stdout, stderr, want)
		}
	}
}

func TestMigrateCommand(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "migrate.db")
	// The first run prints each migration as it runs, with its duration,
	// the baseline first; the second has none to run (migrating twice is
	// fine); the third rebuilds the summaries.
	done := `\n  done in [0-9.]+(ms|s|µs)\n`
	first := regexp.MustCompile(`^20261202120000: baseline: [^\n]+` + done + `(2026[0-9]+: [^\n]+` + done + `)*migrated ` + regexp.QuoteMeta(db) + `: the schema is up to date\n$`)
	rebuilt := regexp.MustCompile(`^summaries: rebuild [^\n]+` + done + `migrated ` + regexp.QuoteMeta(db) + `: the schema is up to date\n$`)
	for i, args := range [][]string{{"migrate"}, {"migrate"}, {"migrate", "--rebuild-summaries"}} {
		code, stdout, stderr := runCLI(t, map[string]string{envDB: db}, args...)
		if code != 0 || (i == 0 && !first.MatchString(stdout)) || (i == 1 && stdout != "migrated "+db+": the schema is up to date\n") ||
			(i == 2 && !rebuilt.MatchString(stdout)) {
			t.Fatalf("migrate, run %d: exit %d, stdout %q, stderr %q", i+1, code, stdout, stderr)
		}
	}
	code, stdout, _ := runCLI(t, nil, "migrate", "--db", "memory:")
	if code != 0 || !strings.Contains(stdout, "nothing to migrate") {
		t.Errorf("migrate memory: exit %d, stdout %q", code, stdout)
	}
}

func TestHelpHidesEnvironmentValues(t *testing.T) {
	env := map[string]string{envAdminTokens: "*:*.very-secret", envDB: "postgres://u:hunter2@db/flags",
		"INIT_ADMIN_API_TOKENS": "*:*.very-secret", "DATABASE_URL": "postgres://u:hunter2@db/flags", "DATABASE_PASSWORD": "hunter2"}
	_, stdout, _ := runCLI(t, env, "serve", "-h")
	if strings.Contains(stdout, "very-secret") || strings.Contains(stdout, "hunter2") {
		t.Errorf("the help shows values of the environment:\n%s", stdout)
	}
}

// existingDBCommands are the commands that read or change what a database
// holds but never create one, with the arguments each needs besides --db.
func existingDBCommands(t *testing.T) [][]string {
	_, verifier := keyFiles(t)
	return [][]string{
		{"token", "list"}, {"token", "revoke", "abc"}, {"user", "list"}, {"service-account", "list"}, {"webhooks", "status"},
		{"log", "verify", "--key", verifier}, {"log", "holds"}, {"log", "hold", "--project", "web"}, {"follow", "status"},
	}
}

// TestReadCommandsNeedAnExistingDatabase: the commands that read or change
// what a database holds refuse a SQLite file that does not exist (a typo
// of --db) rather than create an empty database and list nothing; without
// --db, the default database is not created either.
func TestReadCommandsNeedAnExistingDatabase(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "typo.db")
	t.Chdir(dir)
	for _, args := range existingDBCommands(t) {
		for _, tt := range []struct {
			db   string
			args []string
		}{{db, append(slices.Clone(args), "--db", db)}, {defaultDB, args}} {
			if tt.db == defaultDB && args[1] == "verify" {
				continue // without --db, log verify reads a server
			}
			code, stdout, stderr := runCLI(t, nil, tt.args...)
			want := "flagadmin: database " + tt.db + " does not exist: give the --db of the server (flagadmin migrate or serve creates a new one)\n"
			if code != 1 || stdout != "" || stderr != want {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and %q", tt.args, code, stdout, stderr, want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Fatalf("%q created %s", tt.args, entries[0].Name())
			}
		}
	}
}

// TestReadCommandsNeedFlagadminSchema: on a database that exists but holds
// no flagadmin schema (an empty SQLite file, a PostgreSQL schema or MySQL
// database of something else), the same commands say so and leave it as
// it was: they never migrate it.
func TestReadCommandsNeedFlagadminSchema(t *testing.T) {
	commands := existingDBCommands(t)
	for _, engine := range []struct {
		name string
		url  func(testing.TB) string
	}{
		{"sqlite", func(t testing.TB) string {
			db := dbtest.SQLite(t)
			if err := os.WriteFile(strings.TrimPrefix(db, "sqlite:"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return db
		}},
		{"postgres", dbtest.Postgres},
		{"mysql", dbtest.MySQL},
	} {
		t.Run(engine.name, func(t *testing.T) {
			db := engine.url(t)
			want := "flagadmin: database " + bunstore.RedactURL(db) + " has no flagadmin schema: give the --db of the server (flagadmin migrate or serve creates one)\n"
			for _, args := range commands {
				code, stdout, stderr := runCLI(t, nil, append(slices.Clone(args), "--db", db)...)
				if code != 1 || stdout != "" || stderr != want {
					t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and %q", args, code, stdout, stderr, want)
				}
			}
			store, err := bunstore.Open(context.Background(), db, bunstore.WithoutMigrate())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if st, err := store.Schema(context.Background()); err != nil || !st.Empty() {
				t.Errorf("after the commands: schema %+v, %v; want none", st, err)
			}
		})
	}
}
