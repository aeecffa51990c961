package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// eventsOf returns the events of type typ in the database, newest first.
func eventsOf(t *testing.T, svc *flagadmin.Service, typ string) []flagadmin.Event {
	t.Helper()
	page, err := svc.SearchEvents(context.Background(), flagadmin.System, flagadmin.EventSearchParams{Type: "IS:" + typ})
	if err != nil {
		t.Fatal(err)
	}
	return page.Events
}

// wantOneLine checks a failed command: exit 1, nothing on stdout, one line on stderr holding want.
func wantOneLine(t *testing.T, env map[string]string, want string, args ...string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, env, args...)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", args, code, stdout, stderr, want)
	}
}

func TestServiceAccountAndTokenCommands(t *testing.T) {
	ctx := context.Background()
	db := "sqlite:" + filepath.Join(t.TempDir(), "accounts.db")
	env := map[string]string{envDB: db}

	code, stdout, stderr := runCLI(t, env, "service-account", "create", "--name", "CI bot", "--username", "ci-bot", "--root-role", "editor", "--token", "--expires", "90d")
	if code != 0 {
		t.Fatalf("service-account create --token: exit %d: %s", code, stderr)
	}
	secret := strings.TrimSuffix(stdout, "\n")
	if !strings.HasPrefix(secret, "user:") || strings.ContainsAny(secret, " \n") {
		t.Fatalf("service-account create --token: stdout %q, want only the secret", stdout)
	}
	if !strings.Contains(stderr, `created service account 1 "CI bot" (root role Editor)`) || strings.Contains(stderr, secret) {
		t.Errorf("service-account create --token: stderr %q", stderr)
	}
	svc := openTestService(t, db)
	p, err := svc.Authenticate(ctx, secret)
	if err != nil || p.User == nil || p.User.ID != 1 || !p.User.IsService || p.User.RootRole != flagadmin.RoleEditor {
		t.Fatalf("the printed secret authenticates as %+v, %v; want service account 1 (Editor)", p, err)
	}
	created := eventsOf(t, svc, flagadmin.EventServiceAccountCreated)
	pats := eventsOf(t, svc, flagadmin.EventPATCreated)
	if len(created) != 1 || len(pats) != 1 || created[0].CreatedBy != "system" {
		t.Fatalf("events: %d service-account-created, %d pat-created; want 1 and 1 by system", len(created), len(pats))
	}
	var data map[string]any
	if err := json.Unmarshal(created[0].Data, &data); err != nil || data["name"] != "CI bot" || data["username"] != "ci-bot" || data["rootRole"] != "Editor" {
		t.Errorf("service-account-created data: %s (%v)", created[0].Data, err)
	}

	if code, stdout, stderr := runCLI(t, env, "service-account", "create", "--name", "Exporter"); code != 0 || !strings.Contains(stdout, `created service account 2 "Exporter" (root role Viewer)`) {
		t.Errorf("service-account create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, env, "user", "create", "--name", "Ada", "--email", "ada@example.com", "--root-role", "Admin"); code != 0 || !strings.Contains(stdout, `created user 3 "Ada" (root role Admin)`) {
		t.Errorf("user create: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if users := eventsOf(t, svc, flagadmin.EventUserCreated); len(users) != 1 || !strings.Contains(string(users[0].Data), "ada@example.com") {
		t.Errorf("user-created events: %+v", users)
	}

	_, stdout, _ = runCLI(t, env, "service-account", "list")
	wantLines(t, "service-account list", stdout, `^ID +NAME +USERNAME +ROOT ROLE +TOKENS$`, `^1 +CI bot +ci-bot +Editor +1$`, `^2 +Exporter +- +Viewer +0$`)
	_, stdout, _ = runCLI(t, env, "user", "list")
	wantLines(t, "user list", stdout, `^ID +NAME +USERNAME +EMAIL +ROOT ROLE$`, `^3 +Ada +- +ada@example.com +Admin$`)

	// An admin token, then the list: ids and owners, never a secret or a whole hash.
	code, adminSecret, _ := runCLI(t, env, "token", "create", "--name", "ops")
	if code != 0 {
		t.Fatal("token create failed")
	}
	adminSecret = strings.TrimSpace(adminSecret)
	_, stdout, _ = runCLI(t, env, "token", "list")
	ciID := flagadmin.HashSecret(secret)[:flagadmin.TokenIDLength]
	wantLines(t, "token list", stdout, `^ID +TYPE +NAME +OWNER +PROJECT +ENVIRONMENT +EXPIRES +CREATED$`,
		`^`+ciID+` +user +ci-bot +service account 1 \(CI bot\) +- +- +20\d\d-.*Z +20\d\d-.*Z$`,
		`^[0-9a-f]{12} +admin +ops +- +- +- +never +20\d\d-.*Z$`)
	for _, s := range []string{secret, adminSecret, strings.TrimPrefix(secret, "user:"), flagadmin.HashSecret(secret)} {
		if strings.Contains(stdout, s) {
			t.Errorf("token list shows a secret or a whole hash (%q):\n%s", s, stdout)
		}
	}

	// Revoke by id: pat-deleted, and the token stops working.
	code, stdout, stderr = runCLI(t, env, "token", "revoke", ciID)
	if code != 0 || !strings.Contains(stdout, `revoked user token "ci-bot" (id `+ciID+`)`) {
		t.Fatalf("token revoke: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := svc.Authenticate(ctx, secret); !errors.Is(err, flagadmin.ErrAuthenticationRequired) {
		t.Errorf("the revoked token: Authenticate = %v, want 401", err)
	}
	if deleted := eventsOf(t, svc, flagadmin.EventPATDeleted); len(deleted) != 1 || !strings.Contains(string(deleted[0].PreData), `"description":"ci-bot"`) {
		t.Errorf("pat-deleted events: %+v", deleted)
	}
	// Revoke by secret: api-token-deleted.
	if code, _, stderr := runCLI(t, env, "token", "revoke", adminSecret); code != 0 {
		t.Errorf("token revoke SECRET: exit %d: %s", code, stderr)
	}
	if deleted := eventsOf(t, svc, flagadmin.EventAPITokenDeleted); len(deleted) != 1 || !strings.Contains(string(deleted[0].PreData), `"tokenName":"ops"`) {
		t.Errorf("api-token-deleted events: %+v", deleted)
	}

	wantOneLine(t, env, "token "+`"`+ciID+`"`+" does not exist", "token", "revoke", ciID)
	wantOneLine(t, env, "does not exist", "token", "revoke", "user:never-issued")
	wantOneLine(t, env, "must be a token id", "token", "revoke", "xyz")
	wantOneLine(t, env, "takes one token", "token", "revoke")
	wantOneLine(t, env, "unknown flag --secret", "token", "list", "--secret")
	wantOneLine(t, env, "unknown flag --bogus", "service-account", "create", "--name", "x", "--bogus")
	wantOneLine(t, env, `--root-role: "Owner" is not a root role`, "user", "create", "--name", "x", "--root-role", "Owner")
	wantOneLine(t, env, "needs --name or --username", "service-account", "create")
	wantOneLine(t, env, "add --token", "service-account", "create", "--name", "x", "--expires", "3d")
	wantOneLine(t, env, "--expires:", "service-account", "create", "--name", "x", "--token", "--expires", "soon")
	wantOneLine(t, env, `unknown subcommand "delete" of flagadmin user`, "user", "delete")
	wantOneLine(t, env, "needs a subcommand", "service-account")
	wantOneLine(t, env, "takes no arguments", "user", "list", "extra")
	wantOneLine(t, map[string]string{envDB: "memory:"}, "keeps nothing", "service-account", "create", "--name", "x")

	// The failures wrote nothing: still three accounts, and no other events.
	users, err := svc.ListUsers(ctx, flagadmin.System)
	if err != nil || len(users) != 3 {
		t.Errorf("after the failures: %d accounts (%v), want 3", len(users), err)
	}
	if n := len(eventsOf(t, svc, flagadmin.EventServiceAccountCreated)); n != 2 {
		t.Errorf("service-account-created events: %d, want 2", n)
	}
}

// TestAccountCreateRefusals: each refusal of create is one line, and
// nothing is written.
func TestAccountCreateRefusals(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "accounts.db")
	env := map[string]string{envDB: db}
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"flagadmin user create needs --name, --username or --email", []string{"user", "create", "--root-role", "admin"}},
		{"flagadmin service-account create needs --name or --username", []string{"service-account", "create", "--name", "  "}},
		{`--root-role: "root" is not a root role`, []string{"service-account", "create", "--root-role", "root"}},
		{"--token-name and --expires describe the token of --token; add --token", []string{"service-account", "create", "--name", "x", "--token-name", "t"}},
		{"--expires: 2020-01-01T00:00:00Z is in the past", []string{"service-account", "create", "--name", "x", "--token", "--expires", "2020-01-01"}},
		{"unknown flag --email", []string{"service-account", "create", "--email", "a@example.com"}},
		{"unknown flag --token", []string{"user", "create", "--name", "x", "--token"}},
	} {
		wantOneLine(t, env, tc.want, tc.args...)
	}
	if users, err := openTestService(t, db).ListUsers(context.Background(), flagadmin.System); err != nil || len(users) != 0 {
		t.Errorf("after the refusals: %d accounts (%v), want none", len(users), err)
	}
}

func TestAccountCommandsHelp(t *testing.T) {
	for _, args := range [][]string{
		{"service-account", "-h"}, {"service-account", "create", "-h"}, {"service-account", "list", "--help"},
		{"user", "-h"}, {"user", "create", "-h"}, {"token", "-h"}, {"token", "list", "-h"}, {"token", "revoke", "-h"},
		{"help", "service-account"},
	} {
		code, stdout, stderr := runCLI(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "\n\nUsage:") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %.60q, stderr %q", args, code, stdout, stderr)
		}
	}
	_, stdout, _ := runCLI(t, nil, "service-account", "create", "-h")
	for _, flag := range []string{"--name NAME", "--username NAME", "--root-role ROLE", "--token\n", "--token-name NAME", "--expires EXPIRY"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("service-account create -h does not list %s", flag)
		}
	}
	_, stdout, _ = runCLI(t, nil, "-h")
	for _, cmd := range []string{"service-account create|list", "user create|list", "token create|list|revoke"} {
		if !strings.Contains(stdout, cmd) {
			t.Errorf("flagadmin -h does not list %s", cmd)
		}
	}
}

// wantLines checks that out has a line matching each pattern, in order.
func wantLines(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	i := 0
	for _, line := range lines {
		if i < len(patterns) && regexp.MustCompile(patterns[i]).MatchString(strings.TrimRight(line, " ")) {
			i++
		}
	}
	if i < len(patterns) {
		t.Errorf("%s: no line matches %s in\n%s", what, patterns[i], out)
	}
}

// TestTokenRevokeReachesARunningServer: "flagadmin token revoke" says the
// token no longer authenticates, and a server running on the same
// database refuses it from the next request on, though its token cache
// (here with a TTL of an hour) had just accepted it.
func TestTokenRevokeReachesARunningServer(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "revoke.db")
	env := map[string]string{envDB: db}
	code, secret, stderr := runCLI(t, env, "token", "create", "--name", "ci")
	if code != 0 {
		t.Fatalf("token create: exit %d: %s", code, stderr)
	}
	secret = strings.TrimSpace(secret)
	cfg := Config{Addr: "127.0.0.1:0", DB: db, LogLevel: slog.LevelWarn, LogFormat: "text", TokenCacheTTL: time.Hour, ResultCacheSize: 1 << 20}
	base, _ := startApp(t, cfg)
	for range 2 {
		if status, body := call(t, "GET", base+"/api/admin/projects", secret, ""); status != 200 {
			t.Fatalf("before the revocation: %d %s", status, body)
		}
	}
	code, stdout, stderr := runCLI(t, env, "token", "revoke", secret)
	if code != 0 || !strings.Contains(stdout, "no longer authenticates") {
		t.Fatalf("token revoke: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if status, body := call(t, "GET", base+"/api/admin/projects", secret, ""); status != 401 {
		t.Errorf("the running server after the revocation: %d %s, want 401", status, body)
	}
}
