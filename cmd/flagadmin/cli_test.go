package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
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
		{[]string{"-h"}, []string{"Usage:", "flagadmin migrate", "flagadmin seed", "token create", "--demo"}},
		{[]string{"help"}, []string{"flagadmin version"}},
		{[]string{"serve", "-h"}, []string{"Usage: flagadmin [serve]", "SIGTERM", "-addr", "-db", "-demo", "-seed", "-admin-tokens", "-log-level", "-log-format",
			envAddr, envDB, envSeed, envAdminTokens, envLogLevel, envLogFormat, "admin token (shown once)",
			"-token-cache-ttl", envTokenCache, "the others may accept it", "-result-cache-size", envResultCache, "(default \"64MiB\")",
			"-db-timeout", envDBTimeout, "(default \"5s\")", "503 ServiceUnavailable", "-max-streams", envMaxStreams, "(default \"1000\")",
			// Unleash's variables, in the flags' lines and in the environment list
			"(env FLAGADMIN_DB; Unleash's DATABASE_URL, DATABASE_HOST, DATABASE_PORT, DATABASE_NAME, DATABASE_USERNAME, DATABASE_PASSWORD, DATABASE_SSL)",
			"(env FLAGADMIN_ADDR; Unleash's HTTP_HOST, HTTP_PORT)", "(env FLAGADMIN_ADMIN_TOKENS; Unleash's INIT_ADMIN_API_TOKENS)",
			"(env FLAGADMIN_LOG_LEVEL; Unleash's LOG_LEVEL)", "\n    DATABASE_URL ", "\n    DATABASE_HOST ", "\n    DATABASE_PORT ",
			"\n    DATABASE_NAME ", "\n    DATABASE_USERNAME ", "\n    DATABASE_PASSWORD ", "\n    DATABASE_SSL ", "\n    INIT_ADMIN_API_TOKENS ",
			"\n    HTTP_HOST ", "\n    HTTP_PORT ", "\n    LOG_LEVEL ", "fatal (read as error"}},
		{[]string{"--help"}, []string{"Usage:"}},
		{[]string{"help", "seed"}, []string{"Usage: flagadmin seed [flags] FILE", "-db", envDB}},
		{[]string{"migrate", "--help"}, []string{"Usage: flagadmin migrate", "schema", "-db", envDB, envLogLevel, "\n    DATABASE_URL ", "\n    LOG_LEVEL "}},
		{[]string{"seed", "-h"}, []string{"Usage: flagadmin seed", "projects[2].mode", "-db", envDB}},
		{[]string{"token", "create", "-h"}, []string{"Usage: flagadmin token create", "-name", "-type", "-user-id", "-project", "-environment", "-expires", envDB}},
		{[]string{"token", "-h"}, []string{"Usage: flagadmin token create", "-user-id"}},
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
	code, stdout, _ := runCLI(t, nil, "version")
	if code != 0 || !strings.HasPrefix(stdout, "flagadmin ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("got exit %d, %q; want 0 and one line flagadmin <version>", code, stdout)
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
		{"unknown flag", nil, []string{"serve", "--port", "1"}, "flagadmin: flagadmin serve: flag provided but not defined: -port"},
		{"unknown command", nil, []string{"start"}, `flagadmin: unknown command "start"`},
		{"serve argument", nil, []string{"serve", "extra"}, `flagadmin: flagadmin serve takes no arguments, got "extra"`},
		{"token without subcommand", nil, []string{"token"}, "flagadmin: flagadmin token needs a subcommand: create"},
		{"seed without file", nil, []string{"seed"}, "flagadmin: flagadmin seed takes one seed file"},
		{"seed in memory", nil, []string{"seed", "--db", "memory:", "x.json"}, "flagadmin: memory: keeps nothing"},
		{"missing seed file", nil, []string{"serve", "--db", "memory:", "--seed", "/nonexistent/seed.json", "--addr", "127.0.0.1:0"}, "flagadmin: seed file: open /nonexistent/seed.json"},
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

	svc := openTestService(t, db)
	if _, err := svc.Store().Feature(context.Background(), "f"); err == nil {
		t.Error("the bad seed was partly loaded")
	}
	if _, err := svc.Authenticate(context.Background(), "*:*.e2e-admin"); err != nil {
		t.Errorf("the seed's admin token does not authenticate: %v", err)
	}
}

func openTestService(t *testing.T, db string) *flagadmin.Service {
	t.Helper()
	store, err := bunstore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return flagadmin.NewService(store)
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
}

func TestMigrateCommand(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "migrate.db")
	// The first run prints each migration as it runs, with its duration;
	// the second has none to run (migrating twice is fine).
	first := regexp.MustCompile(`^20261126000000: baseline: [^\n]+\n  done in [0-9.]+(ms|s|µs)\nmigrated ` + regexp.QuoteMeta(db) + `: the schema is up to date\n$`)
	for i := range 2 {
		code, stdout, stderr := runCLI(t, map[string]string{envDB: db}, "migrate")
		if code != 0 || (i == 0 && !first.MatchString(stdout)) || (i == 1 && stdout != "migrated "+db+": the schema is up to date\n") {
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
