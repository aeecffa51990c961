package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/url"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/flagadmin/flagadmin/adapters/memstore"
	"github.com/flagadmin/flagadmin/adapters/metrics"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// parseServe parses serve's flags with the environment env.
func parseServe(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := newFlagSet("flagadmin serve")
	s := newSettings(fs, func(k string) string { return env[k] }, withServe)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return s.config(fs)
}

func TestConfigDefaults(t *testing.T) {
	got, err := parseServe(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Addr: "127.0.0.1:4242", DB: "sqlite:flagadmin.db", LogLevel: slog.LevelInfo, LogFormat: "text",
		TokenCacheTTL: storecache.DefaultTokenTTL, ResultCacheSize: storecache.DefaultResultCacheSize, DBTimeout: 5 * time.Second, DBMaxConns: 8, MaxStreams: 1000,
		GatewayConfig: GatewayConfig{UpstreamTimeout: 30 * time.Second, FollowWait: 5 * time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	env := map[string]string{
		envAddr:            ":8080",
		envDB:              "postgres://u:p@db:5432/flags",
		envSeed:            "world.json",
		envAdminTokens:     "*:*.one, *:*.two,",
		envLogLevel:        "DEBUG",
		envLogFormat:       "json",
		envTokenCache:      "250ms",
		envResultCache:     "512KiB",
		envDBTimeout:       "750ms",
		envMaxStreams:      "50",
		envDBMaxConns:      "32",
		envUpstreamTimeout: "2s",
		envFollowWait:      "1500ms",
	}
	got, err := parseServe(t, env)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Addr: ":8080", DB: "postgres://u:p@db:5432/flags", Seed: "world.json",
		AdminTokens: []string{"*:*.one", "*:*.two"}, LogLevel: slog.LevelDebug, LogFormat: "json", TokenCacheTTL: 250 * time.Millisecond,
		ResultCacheSize: 512 << 10, DBTimeout: 750 * time.Millisecond, DBMaxConns: 32, MaxStreams: 50,
		GatewayConfig: GatewayConfig{UpstreamTimeout: 2 * time.Second, FollowWait: 1500 * time.Millisecond}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestConfigUpstream: in front of Unleash, flagadmin answers from the copy
// of Unleash's database it follows, so --upstream needs --follow.
func TestConfigUpstream(t *testing.T) {
	got, err := parseServe(t, map[string]string{envUpstream: "ftp://x", envFollow: "postgres://u@unleash-db:5432/unleash"},
		"--upstream", "https://unleash.example/base/")
	if err != nil {
		t.Fatal(err)
	}
	if want := (&url.URL{Scheme: "https", Host: "unleash.example", Path: "/base"}); !reflect.DeepEqual(got.Upstream, want) || got.Follow == "" {
		t.Errorf("got upstream %v, follow %q; want %v and the follow URL", got.Upstream, got.Follow, want)
	}
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--upstream", "http://unleash:4242"}, "--upstream needs --follow (or FLAGADMIN_FOLLOW)"},
		{map[string]string{envUpstream: "http://unleash:4242"}, nil, "FLAGADMIN_UPSTREAM needs --follow (or FLAGADMIN_FOLLOW)"},
	} {
		if _, err := parseServe(t, c.env, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: got %v, want an error with %q", c.env, c.args, err, c.want)
		}
	}
}

func TestConfigFlagsOverrideEnvironment(t *testing.T) {
	env := map[string]string{
		envAddr:        ":8080",
		envDB:          "nosuch://x",  // bad, but overridden
		envLogLevel:    "chatty",      // bad, but overridden
		envAdminTokens: "not-a-token", // bad, but overridden
		envLogFormat:   "json",
		envTokenCache:  "forever", // bad, but overridden
		envResultCache: "lots",    // bad, but overridden
		envDBTimeout:   "soon",    // bad, but overridden
		envMaxStreams:  "many",    // bad, but overridden
		envDBMaxConns:  "few",     // bad, but overridden
		envFollowWait:  "0",       // bad, but overridden
	}
	got, err := parseServe(t, env, "--addr", "127.0.0.1:9999", "--db", "memory:", "--log-level", "warn",
		"--admin-tokens", "*:*.flag", "--log-format=text", "--demo", "--token-cache-ttl", "0", "--result-cache-size", "0", "--db-timeout", "0", "--max-streams", "7",
		"--db-max-conns", "3", "--upstream-timeout", "10s", "--follow-wait", "1s")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Addr: "127.0.0.1:9999", DB: "memory:", AdminTokens: []string{"*:*.flag"},
		LogLevel: slog.LevelWarn, LogFormat: "text", Demo: true, MaxStreams: 7, DBMaxConns: 3,
		GatewayConfig: GatewayConfig{UpstreamTimeout: 10 * time.Second, FollowWait: time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestConfigBadValues(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // substring of the error, naming its source
	}{
		{"db scheme from env", map[string]string{envDB: "redis://localhost"}, nil, `FLAGADMIN_DB: unsupported database URL "redis://localhost"`},
		{"db scheme from flag", nil, []string{"--db", "oracle://x"}, `--db: unsupported database URL`},
		{"db password redacted", nil, []string{"--db", "mongodb://u:secret@h/db"}, `mongodb://u:xxxxx@h/db`},
		{"sqlite without path", nil, []string{"--db", "sqlite:"}, `--db: "sqlite:" needs a file path`},
		{"log level", map[string]string{envLogLevel: "verbose"}, nil, `FLAGADMIN_LOG_LEVEL: unknown log level "verbose"`},
		{"log level flag", nil, []string{"--log-level", "trace"}, `--log-level: unknown log level "trace"`},
		{"log format", map[string]string{envLogFormat: "xml"}, nil, `FLAGADMIN_LOG_FORMAT: unknown log format "xml"`},
		{"addr without port", map[string]string{envAddr: "localhost"}, nil, `FLAGADMIN_ADDR: "localhost" is not a host:port address`},
		{"addr bad port", nil, []string{"--addr", "127.0.0.1:99999"}, `--addr: "127.0.0.1:99999" has no valid port`},
		{"admin token shape", map[string]string{envAdminTokens: "*:*.ok,user:abc"}, nil, `FLAGADMIN_ADMIN_TOKENS: item 2 is not an admin token`},
		{"demo and seed", map[string]string{envSeed: "world.json"}, []string{"--demo"}, `--demo and FLAGADMIN_SEED both`},
		{"token cache ttl without unit", map[string]string{envTokenCache: "5"}, nil, `FLAGADMIN_TOKEN_CACHE_TTL: "5" is not a duration`},
		{"token cache ttl negative", nil, []string{"--token-cache-ttl", "-1s"}, `--token-cache-ttl: "-1s" is negative`},
		{"result cache size not a size", map[string]string{envResultCache: "64MB"}, nil, `FLAGADMIN_RESULT_CACHE_SIZE: "64MB" is not a size`},
		{"result cache size negative", nil, []string{"--result-cache-size", "-1"}, `--result-cache-size: "-1" is negative`},
		{"db timeout without unit", map[string]string{envDBTimeout: "5"}, nil, `FLAGADMIN_DB_TIMEOUT: "5" is not a duration`},
		{"db timeout not a duration", nil, []string{"--db-timeout", "soon"}, `--db-timeout: "soon" is not a duration`},
		{"db timeout negative", nil, []string{"--db-timeout", "-5s"}, `--db-timeout: "-5s" is negative`},
		{"db timeout flag wins over a good env", map[string]string{envDBTimeout: "1s"}, []string{"--db-timeout", "1x"}, `--db-timeout: "1x" is not a duration`},
		{"max streams zero", nil, []string{"--max-streams", "0"}, `--max-streams: must be an integer of 1 or more, got "0"`},
		{"max streams not a number", map[string]string{envMaxStreams: "lots"}, nil, `FLAGADMIN_MAX_STREAMS: must be an integer of 1 or more`},
		{"db max conns zero", nil, []string{"--db-max-conns", "0"}, `--db-max-conns: must be an integer of 1 or more, got "0"`},
		{"db max conns not a number", map[string]string{envDBMaxConns: "twenty"}, nil, `FLAGADMIN_DB_MAX_CONNS: must be an integer of 1 or more`},
		{"upstream scheme", map[string]string{envUpstream: "unleash:4242"}, nil, `FLAGADMIN_UPSTREAM: "unleash:4242" is not an http:// or https:// URL`},
		{"upstream without host", nil, []string{"--upstream", "http:///base"}, `--upstream: "http:///base" has no host`},
		{"upstream with credentials", nil, []string{"--upstream", "http://admin:secret@unleash:4242"}, `--upstream: must not hold credentials`},
		{"upstream with query", nil, []string{"--upstream", "http://unleash:4242/?a=1"}, `--upstream: "http://unleash:4242/?a=1" has a query`},
		{"upstream timeout zero", nil, []string{"--upstream-timeout", "0"}, `--upstream-timeout: must be more than 0`},
		{"follow wait not a duration", map[string]string{envFollowWait: "5"}, nil, `FLAGADMIN_FOLLOW_WAIT: "5" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseServe(t, tt.env, tt.args...)
			var ce *cliError
			if !errors.As(err, &ce) {
				t.Fatalf("got error %v, want a *cliError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "u:secret@") || strings.Contains(err.Error(), "user:abc") || strings.Contains(err.Error(), "admin:secret") {
				t.Errorf("the error %q repeats a secret", err)
			}
		})
	}
}

func TestConfigDatabaseURLs(t *testing.T) {
	for _, url := range []string{"memory:", "sqlite:flagadmin.db", "sqlite::memory:", "sqlite:/tmp/x.db",
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgresql://h/db", "mysql://root:@127.0.0.1:3306/test"} {
		got, err := parseDBURL(url)
		if err != nil || got != url {
			t.Errorf("parseDBURL(%q) = %q, %v; want it accepted as is", url, got, err)
		}
	}
}

func TestDBCommandsHaveNoServerFlags(t *testing.T) {
	fs := newFlagSet("flagadmin migrate")
	newSettings(fs, func(string) string { return "" }, withDB)
	for _, name := range []string{"addr", "seed", "demo", "admin-tokens", "token-cache-ttl", "result-cache-size", "db-timeout"} {
		if fs.Lookup(name) != nil {
			t.Errorf("migrate has flag --%s, want only database and log flags", name)
		}
	}
	for _, name := range []string{"db", "log-level", "log-format"} {
		if fs.Lookup(name) == nil {
			t.Errorf("migrate has no flag --%s", name)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		raw  string
		want time.Time
	}{
		{"2027-01-02T03:04:05Z", time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"2027-01-02T03:04:05+02:00", time.Date(2027, 1, 2, 1, 4, 5, 0, time.UTC)},
		{"2027-01-02", time.Date(2027, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"90d", now.AddDate(0, 0, 90)},
		{"12h", now.Add(12 * time.Hour)},
	}
	for _, tt := range tests {
		got, err := parseExpiry(tt.raw, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseExpiry(%q) = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "soon", "-5d", "0d", "-1h", "2027-13-01"} {
		if got, err := parseExpiry(bad, now); err == nil {
			t.Errorf("parseExpiry(%q) = %v, want an error", bad, got)
		}
	}
}

func TestNewTokenRequest(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	parse := func(args ...string) (flagadmin.NewAPIToken, error) {
		fs := newFlagSet("flagadmin token create")
		name := fs.String("name", "", "")
		typ := fs.String("type", "admin", "")
		userID := fs.Int64("user-id", 0, "")
		project := fs.String("project", "*", "")
		env := fs.String("environment", "*", "")
		expires := fs.String("expires", "", "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return newTokenRequest(fs, *name, *typ, *userID, *project, *env, *expires, now)
	}
	uid := int64(7)
	exp := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	good := []struct {
		args []string
		want flagadmin.NewAPIToken
	}{
		{nil, flagadmin.NewAPIToken{Type: flagadmin.TokenAdmin}},
		{[]string{"--name", "ops", "--expires", "2027-01-01"}, flagadmin.NewAPIToken{Name: "ops", Type: flagadmin.TokenAdmin, ExpiresAt: &exp}},
		{[]string{"--type", "user", "--user-id", "7"}, flagadmin.NewAPIToken{Type: flagadmin.TokenUser, UserID: &uid}},
		{[]string{"--type", "client", "--project", "default", "--environment", "production"}, flagadmin.NewAPIToken{Type: flagadmin.TokenClient, Project: "default", Environment: "production"}},
		{[]string{"--type", "frontend"}, flagadmin.NewAPIToken{Type: flagadmin.TokenFrontend, Project: "*", Environment: "*"}},
	}
	for _, tt := range good {
		got, err := parse(tt.args...)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--type", "root"}, "--type: unknown token type"},
		{[]string{"--type", "user"}, "--user-id: a user token needs"},
		{[]string{"--user-id", "3"}, "--user-id: only user tokens"},
		{[]string{"--project", "default"}, "--project and --environment scope client and frontend tokens only"},
		{[]string{"--expires", "2020-01-01"}, "--expires: 2020-01-01T00:00:00Z is in the past"},
		{[]string{"--expires", "tomorrow"}, "--expires: \"tomorrow\" is not"},
	}
	for _, tt := range bad {
		_, err := parse(tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got error %v, want one containing %q", tt.args, err, tt.want)
		}
	}
}

// countingStore counts the token lookups that reach the store.
type countingStore struct {
	flagadmin.VersionedStore
	lookups int
}

func (s *countingStore) LookupToken(ctx context.Context, hash string) (flagadmin.APIToken, *flagadmin.User, error) {
	s.lookups++
	return s.VersionedStore.LookupToken(ctx, hash)
}

func TestServiceGetsTheConfiguredTokenCache(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		ttl     time.Duration
		lookups int
	}{{storecache.DefaultTokenTTL, 1}, {time.Minute, 1}, {0, 3}} {
		store := &countingStore{VersionedStore: memstore.New()}
		svc := newService(newServedStore(store, Config{TokenCacheTTL: tc.ttl}, metrics.New()))
		secret, _, err := svc.EnsureAdminToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		store.lookups = 0
		for range 3 {
			if _, err := svc.Authenticate(ctx, secret); err != nil {
				t.Fatal(err)
			}
		}
		if store.lookups != tc.lookups {
			t.Errorf("TokenCacheTTL %v: %d token lookups for 3 requests, want %d", tc.ttl, store.lookups, tc.lookups)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"67108864", 64 << 20}, {" 1024 ", 1024}, {"64MiB", 64 << 20}, {"64 MiB", 64 << 20}, {"64mib", 64 << 20},
		{"512KiB", 512 << 10}, {"2GiB", 2 << 30}, {"100B", 100}, {"0MiB", 0}, {"8589934591GiB", 8589934591 << 30},
	} {
		if got, err := parseByteSize(tt.in); err != nil || got != tt.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "MiB", "64MB", "64M", "1.5GiB", "-1", "-1KiB", "0x10", "8589934592GiB", "99999999999999999999"} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, got)
		}
	}
	for _, n := range []int64{0, 1, 1000, 1024, 64 << 20, 3 << 30, 1<<20 + 1} {
		if got, err := parseByteSize(formatByteSize(n)); err != nil || got != n {
			t.Errorf("parseByteSize(formatByteSize(%d) = %q) = %d, %v", n, formatByteSize(n), got, err)
		}
	}
	if got := formatByteSize(storecache.DefaultResultCacheSize); got != "64MiB" {
		t.Errorf("the default shows as %q, want 64MiB", got)
	}
}

// searchCountingStore counts the event searches that reach a store.
type searchCountingStore struct {
	flagadmin.VersionedStore
	searches int
}

func (s *searchCountingStore) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	s.searches++
	return s.VersionedStore.SearchEvents(ctx, q)
}

func TestServiceGetsTheConfiguredResultCache(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		size     int64
		searches int
	}{{storecache.DefaultResultCacheSize, 1}, {1 << 20, 1}, {0, 3}} {
		store := &searchCountingStore{VersionedStore: memstore.New()}
		svc := newService(newServedStore(store, Config{ResultCacheSize: tc.size}, metrics.New()))
		for range 3 {
			if _, err := svc.SearchEvents(ctx, flagadmin.System, flagadmin.EventSearchParams{}); err != nil {
				t.Fatal(err)
			}
		}
		if store.searches != tc.searches {
			t.Errorf("ResultCacheSize %d: %d searches reached the store for 3 requests, want %d", tc.size, store.searches, tc.searches)
		}
	}
}

// TestAPIGetsTheBodyCache: the API keeps encoded project lists in the
// result cache when it is on, and streams them when it is off.
func TestAPIGetsTheBodyCache(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want bool
	}{
		{Config{ResultCacheSize: storecache.DefaultResultCacheSize, TokenCacheTTL: storecache.DefaultTokenTTL}, true},
		{Config{ResultCacheSize: 1 << 20}, true},
		{Config{TokenCacheTTL: storecache.DefaultTokenTTL}, false},
		{Config{}, false},
	} {
		served := newServedStore(memstore.New(), tc.cfg, metrics.New())
		if got := served.bodies != nil; got != tc.want {
			t.Errorf("ResultCacheSize %d, TokenCacheTTL %v: body cache %v, want %v", tc.cfg.ResultCacheSize, tc.cfg.TokenCacheTTL, got, tc.want)
		}
		if b, ok := served.bodies.(*storecache.Bodies); ok && b == nil {
			t.Errorf("ResultCacheSize %d: a nil *storecache.Bodies in the interface", tc.cfg.ResultCacheSize)
		}
	}
}

// TestConfigUnleashVariables checks each of Unleash's variables that
// flagadmin reads in place of its own, alone in the environment.
func TestConfigUnleashVariables(t *testing.T) {
	defaults, err := parseServe(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want func(*Config) // the changes to the defaults
	}{
		{"DATABASE_URL", map[string]string{"DATABASE_URL": "postgres://u:p@db:5432/unleash"},
			func(c *Config) { c.DB = "postgres://u:p@db:5432/unleash" }},
		{"DATABASE_URL postgresql", map[string]string{"DATABASE_URL": " postgresql://db/unleash?sslmode=require "},
			func(c *Config) { c.DB = "postgresql://db/unleash?sslmode=require" }},
		{"DATABASE_URL with DATABASE_SSL false", map[string]string{"DATABASE_URL": "postgres://u:p@db/unleash", "DATABASE_SSL": "false"},
			func(c *Config) { c.DB = "postgres://u:p@db/unleash?sslmode=disable" }},
		{"DATABASE_URL with DATABASE_SSL true", map[string]string{"DATABASE_URL": "postgres://db/unleash?application_name=x", "DATABASE_SSL": "true"},
			func(c *Config) { c.DB = "postgres://db/unleash?application_name=x&sslmode=verify-full" }},
		{"DATABASE_URL's own sslmode wins over DATABASE_SSL", map[string]string{"DATABASE_URL": "postgres://db/unleash?sslmode=require", "DATABASE_SSL": "false"},
			func(c *Config) { c.DB = "postgres://db/unleash?sslmode=require" }},
		{"DATABASE_URL wins over the parts", map[string]string{"DATABASE_URL": "postgres://url-host/a", "DATABASE_HOST": "part-host", "DATABASE_NAME": "b"},
			func(c *Config) { c.DB = "postgres://url-host/a" }},
		{"DATABASE_HOST alone: Unleash's defaults", map[string]string{"DATABASE_HOST": "db.internal"},
			func(c *Config) { c.DB = "postgres://db.internal:5432/unleash" }},
		{"DATABASE_PORT alone", map[string]string{"DATABASE_PORT": "6543"},
			func(c *Config) { c.DB = "postgres://localhost:6543/unleash" }},
		{"DATABASE_NAME alone", map[string]string{"DATABASE_NAME": "flags"},
			func(c *Config) { c.DB = "postgres://localhost:5432/flags" }},
		{"DATABASE_USERNAME alone", map[string]string{"DATABASE_USERNAME": "unleash_user"},
			func(c *Config) { c.DB = "postgres://unleash_user@localhost:5432/unleash" }},
		{"DATABASE_PASSWORD alone", map[string]string{"DATABASE_PASSWORD": "pw"},
			func(c *Config) { c.DB = "postgres://:pw@localhost:5432/unleash" }},
		{"all parts", map[string]string{"DATABASE_HOST": "db", "DATABASE_PORT": "5433", "DATABASE_NAME": "flags",
			"DATABASE_USERNAME": "ada", "DATABASE_PASSWORD": "pw", "DATABASE_SSL": "false"},
			func(c *Config) { c.DB = "postgres://ada:pw@db:5433/flags?sslmode=disable" }},
		{"parts with DATABASE_SSL true", map[string]string{"DATABASE_HOST": "db", "DATABASE_SSL": " true "},
			func(c *Config) { c.DB = "postgres://db:5432/unleash?sslmode=verify-full" }},
		{"parts escaped", map[string]string{"DATABASE_HOST": "db", "DATABASE_USERNAME": "a da", "DATABASE_PASSWORD": "p@ss:w/rd?#%"},
			func(c *Config) { c.DB = "postgres://a%20da:p%40ss%3Aw%2Frd%3F%23%25@db:5432/unleash" }},
		{"IPv6 DATABASE_HOST", map[string]string{"DATABASE_HOST": "::1"},
			func(c *Config) { c.DB = "postgres://[::1]:5432/unleash" }},
		{"DATABASE_SSL alone chooses no database", map[string]string{"DATABASE_SSL": "true"}, func(c *Config) {}},
		{"INIT_ADMIN_API_TOKENS", map[string]string{"INIT_ADMIN_API_TOKENS": "*:*.one, *:*.two"},
			func(c *Config) { c.AdminTokens = []string{"*:*.one", "*:*.two"} }},
		{"HTTP_HOST alone: Unleash's port", map[string]string{"HTTP_HOST": "0.0.0.0"}, func(c *Config) { c.Addr = "0.0.0.0:4242" }},
		{"HTTP_PORT alone: all interfaces, as in Unleash", map[string]string{"HTTP_PORT": "8080"}, func(c *Config) { c.Addr = ":8080" }},
		{"HTTP_HOST and HTTP_PORT", map[string]string{"HTTP_HOST": "10.0.0.7", "HTTP_PORT": " 3000 "}, func(c *Config) { c.Addr = "10.0.0.7:3000" }},
		{"IPv6 HTTP_HOST", map[string]string{"HTTP_HOST": "::"}, func(c *Config) { c.Addr = "[::]:4242" }},
		{"LOG_LEVEL debug", map[string]string{"LOG_LEVEL": "debug"}, func(c *Config) { c.LogLevel = slog.LevelDebug }},
		{"LOG_LEVEL warn", map[string]string{"LOG_LEVEL": "warn"}, func(c *Config) { c.LogLevel = slog.LevelWarn }},
		{"LOG_LEVEL error", map[string]string{"LOG_LEVEL": "error"}, func(c *Config) { c.LogLevel = slog.LevelError }},
		{"LOG_LEVEL fatal is error", map[string]string{"LOG_LEVEL": "fatal"}, func(c *Config) { c.LogLevel = slog.LevelError }},
		{"LOG_LEVEL FATAL is error", map[string]string{"LOG_LEVEL": "FATAL"}, func(c *Config) { c.LogLevel = slog.LevelError }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseServe(t, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestConfigUnleashDatabaseURLReachesTheDriver checks that pgx reads a URL
// composed of Unleash's variables as Unleash means them.
func TestConfigUnleashDatabaseURLReachesTheDriver(t *testing.T) {
	cfg, err := parseServe(t, map[string]string{"DATABASE_HOST": "db.internal", "DATABASE_PORT": "5433", "DATABASE_NAME": "my flags",
		"DATABASE_USERNAME": "a:da", "DATABASE_PASSWORD": "p@ss:w/rd?#%&=", "DATABASE_SSL": "false"})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgconn.ParseConfig(cfg.DB)
	if err != nil {
		t.Fatalf("pgx cannot read %q: %v", cfg.DB, err)
	}
	got := []any{pc.Host, pc.Port, pc.Database, pc.User, pc.Password, pc.TLSConfig == nil}
	want := []any{"db.internal", uint16(5433), "my flags", "a:da", "p@ss:w/rd?#%&=", true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pgx reads %q as host, port, database, user, password, no TLS = %v, want %v", cfg.DB, got, want)
	}
}

// TestConfigUnleashPrecedence checks flag > FLAGADMIN_ variable > Unleash's
// variables > default for each setting Unleash's variables can give.
func TestConfigUnleashPrecedence(t *testing.T) {
	type sources struct {
		flag, own string            // the flag's and the FLAGADMIN_ variable's value, "" for not given
		unleash   map[string]string // Unleash's variables
	}
	tests := []struct {
		name  string
		flag  string // the flag of the setting
		own   string // its FLAGADMIN_ variable
		src   sources
		field func(Config) any
		want  any
	}{
		{"db default", "db", envDB, sources{}, func(c Config) any { return c.DB }, defaultDB},
		{"db Unleash", "db", envDB, sources{unleash: map[string]string{"DATABASE_URL": "postgres://u/x"}}, func(c Config) any { return c.DB }, "postgres://u/x"},
		{"db Unleash parts", "db", envDB, sources{unleash: map[string]string{"DATABASE_HOST": "u"}}, func(c Config) any { return c.DB }, "postgres://u:5432/unleash"},
		{"db FLAGADMIN over Unleash", "db", envDB, sources{own: "memory:", unleash: map[string]string{"DATABASE_URL": "postgres://u/x", "DATABASE_HOST": "u"}},
			func(c Config) any { return c.DB }, "memory:"},
		{"db flag over both", "db", envDB, sources{flag: "sqlite:f.db", own: "memory:", unleash: map[string]string{"DATABASE_URL": "postgres://u/x"}},
			func(c Config) any { return c.DB }, "sqlite:f.db"},
		{"db FLAGADMIN over bad Unleash values", "db", envDB, sources{own: "memory:", unleash: map[string]string{"DATABASE_URL": "mysql://x", "DATABASE_SSL": "{}", "DATABASE_PORT": "x"}},
			func(c Config) any { return c.DB }, "memory:"},
		{"addr default", "addr", envAddr, sources{}, func(c Config) any { return c.Addr }, defaultAddr},
		{"addr Unleash", "addr", envAddr, sources{unleash: map[string]string{"HTTP_PORT": "1"}}, func(c Config) any { return c.Addr }, ":1"},
		{"addr FLAGADMIN over Unleash", "addr", envAddr, sources{own: ":2", unleash: map[string]string{"HTTP_HOST": "h", "HTTP_PORT": "1"}},
			func(c Config) any { return c.Addr }, ":2"},
		{"addr flag over both", "addr", envAddr, sources{flag: ":3", own: ":2", unleash: map[string]string{"HTTP_PORT": "1"}}, func(c Config) any { return c.Addr }, ":3"},
		{"addr FLAGADMIN over a bad Unleash port", "addr", envAddr, sources{own: ":2", unleash: map[string]string{"HTTP_PORT": "http"}},
			func(c Config) any { return c.Addr }, ":2"},
		{"tokens default", "admin-tokens", envAdminTokens, sources{}, func(c Config) any { return c.AdminTokens }, []string(nil)},
		{"tokens Unleash", "admin-tokens", envAdminTokens, sources{unleash: map[string]string{"INIT_ADMIN_API_TOKENS": "*:*.u"}},
			func(c Config) any { return c.AdminTokens }, []string{"*:*.u"}},
		{"tokens FLAGADMIN over Unleash", "admin-tokens", envAdminTokens, sources{own: "*:*.o", unleash: map[string]string{"INIT_ADMIN_API_TOKENS": "bad"}},
			func(c Config) any { return c.AdminTokens }, []string{"*:*.o"}},
		{"tokens flag over both", "admin-tokens", envAdminTokens, sources{flag: "*:*.f", own: "*:*.o", unleash: map[string]string{"INIT_ADMIN_API_TOKENS": "*:*.u"}},
			func(c Config) any { return c.AdminTokens }, []string{"*:*.f"}},
		{"log level default", "log-level", envLogLevel, sources{}, func(c Config) any { return c.LogLevel }, slog.LevelInfo},
		{"log level Unleash", "log-level", envLogLevel, sources{unleash: map[string]string{"LOG_LEVEL": "warn"}}, func(c Config) any { return c.LogLevel }, slog.LevelWarn},
		{"log level FLAGADMIN over Unleash", "log-level", envLogLevel, sources{own: "debug", unleash: map[string]string{"LOG_LEVEL": "chatty"}},
			func(c Config) any { return c.LogLevel }, slog.LevelDebug},
		{"log level flag over both", "log-level", envLogLevel, sources{flag: "error", own: "debug", unleash: map[string]string{"LOG_LEVEL": "warn"}},
			func(c Config) any { return c.LogLevel }, slog.LevelError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			maps.Copy(env, tt.src.unleash)
			if tt.src.own != "" {
				env[tt.own] = tt.src.own
			}
			var args []string
			if tt.src.flag != "" {
				args = []string{"--" + tt.flag, tt.src.flag}
			}
			got, err := parseServe(t, env, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.field(got), tt.want) {
				t.Errorf("got %v, want %v", tt.field(got), tt.want)
			}
		})
	}
}

// TestConfigBadUnleashValues checks that a bad value of one of Unleash's
// variables is an error naming that variable, without repeating a secret.
func TestConfigBadUnleashValues(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // the start of the error, naming the variable
	}{
		{"DATABASE_URL not PostgreSQL", map[string]string{"DATABASE_URL": "mysql://u:hunter2@db/unleash"},
			`DATABASE_URL: "mysql://u:xxxxx@db/unleash" is not a postgres:// URL; Unleash uses PostgreSQL only (for another database set FLAGADMIN_DB)`},
		{"DATABASE_URL not a URL", map[string]string{"DATABASE_URL": "postgres://db:port/x"}, `DATABASE_URL: "postgres://..." is not a valid URL`},
		{"DATABASE_PORT", map[string]string{"DATABASE_HOST": "db", "DATABASE_PORT": "fivefour"}, `DATABASE_PORT: "fivefour" is not a port number`},
		{"DATABASE_PORT range", map[string]string{"DATABASE_PORT": "70000"}, `DATABASE_PORT: "70000" is not a port number`},
		{"DATABASE_SSL object", map[string]string{"DATABASE_HOST": "db", "DATABASE_SSL": `{"rejectUnauthorized":false,"key":"hunter2"}`},
			"DATABASE_SSL: flagadmin reads only true (sslmode=verify-full) or false (sslmode=disable)"},
		{"DATABASE_SSL with DATABASE_URL", map[string]string{"DATABASE_URL": "postgres://db/x", "DATABASE_SSL": "yes"}, "DATABASE_SSL: flagadmin reads only true"},
		{"INIT_ADMIN_API_TOKENS scoped", map[string]string{"INIT_ADMIN_API_TOKENS": "*:*.ok, default:development.hunter2"},
			"INIT_ADMIN_API_TOKENS: item 2 is scoped to a project and environment"},
		{"INIT_ADMIN_API_TOKENS user token", map[string]string{"INIT_ADMIN_API_TOKENS": "user:hunter2"}, "INIT_ADMIN_API_TOKENS: item 1 is not an admin token"},
		{"INIT_ADMIN_API_TOKENS bare secret", map[string]string{"INIT_ADMIN_API_TOKENS": "hunter2"}, "INIT_ADMIN_API_TOKENS: item 1 is not an admin token"},
		{"HTTP_PORT", map[string]string{"HTTP_HOST": "0.0.0.0", "HTTP_PORT": "http"}, `HTTP_PORT: "http" is not a port number`},
		{"HTTP_PORT range", map[string]string{"HTTP_PORT": "-1"}, `HTTP_PORT: "-1" is not a port number`},
		{"HTTP_HOST", map[string]string{"HTTP_HOST": "[bad"}, `HTTP_HOST: "[bad:4242" is not a host:port address`},
		{"LOG_LEVEL", map[string]string{"LOG_LEVEL": "trace"}, `LOG_LEVEL: unknown log level "trace"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseServe(t, tt.env)
			var ce *cliError
			if !errors.As(err, &ce) {
				t.Fatalf("got error %v, want a *cliError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %q, want it to start with %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error %q repeats a secret", err)
			}
		})
	}
}

// TestDBCommandsReadUnleashDatabaseVariables checks that the database
// commands take the database and log level from Unleash's variables too.
func TestDBCommandsReadUnleashDatabaseVariables(t *testing.T) {
	fs := newFlagSet("flagadmin migrate")
	env := map[string]string{"DATABASE_HOST": "db", "LOG_LEVEL": "fatal", "HTTP_PORT": "not read"}
	s := newSettings(fs, func(k string) string { return env[k] }, withDB)
	got, err := s.config(fs)
	want := Config{DB: "postgres://db:5432/unleash", LogLevel: slog.LevelError, LogFormat: "text"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

// The server sets the collector's pace and the soft memory limit of its
// result cache, restored when it stops, but for those GOGC and GOMEMLIMIT
// set, and neither when the store is in memory.
func TestSetServerPace(t *testing.T) {
	const beforeLimit, beforePercent = 1 << 40, 150
	prevLimit, prevPercent := debug.SetMemoryLimit(beforeLimit), debug.SetGCPercent(beforePercent)
	defer func() { debug.SetMemoryLimit(prevLimit); debug.SetGCPercent(prevPercent) }()
	const pace, base = storecache.ServerGCPercent, storecache.ServerMemoryBase
	for _, tc := range []struct {
		name      string
		env       map[string]string
		size      int64
		db        string
		wantLimit int64
		wantPace  int
	}{
		{"default cache", nil, storecache.DefaultResultCacheSize, "", storecache.DefaultResultCacheSize + base, pace},
		{"large cache", nil, 1 << 30, "", 1<<30 + base, pace},
		{"small cache", nil, 1 << 20, "", 2 * base, pace},
		{"cache off", nil, 0, "", 2 * base, pace},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, storecache.DefaultResultCacheSize, "", beforeLimit, pace},
		{"GOMEMLIMIT off", map[string]string{"GOMEMLIMIT": "off"}, storecache.DefaultResultCacheSize, "", beforeLimit, pace},
		{"GOGC set", map[string]string{"GOGC": "100"}, storecache.DefaultResultCacheSize, "", storecache.DefaultResultCacheSize + base, beforePercent},
		{"GOGC off", map[string]string{"GOGC": "off"}, 0, "", 2 * base, beforePercent},
		{"the store in memory", nil, storecache.DefaultResultCacheSize, memoryURL, beforeLimit, beforePercent},
		{"SQLite in memory (outside the Go heap)", nil, storecache.DefaultResultCacheSize, "sqlite::memory:", storecache.DefaultResultCacheSize + base, pace},
	} {
		c := &cli{getenv: func(k string) string { return tc.env[k] }}
		restore := c.setServerPace(Config{ResultCacheSize: tc.size, DB: tc.db})
		if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
			t.Errorf("%s: got limit %d, want %d", tc.name, got, tc.wantLimit)
		}
		if got := debug.SetGCPercent(-1); got != tc.wantPace {
			t.Errorf("%s: got GOGC %d, want %d", tc.name, got, tc.wantPace)
		}
		debug.SetGCPercent(tc.wantPace) // SetGCPercent(-1) turned it off
		restore()
		if got := debug.SetMemoryLimit(-1); got != beforeLimit {
			t.Errorf("%s: got limit %d after restore, want %d", tc.name, got, beforeLimit)
		}
		if got := debug.SetGCPercent(beforePercent); got != beforePercent {
			t.Errorf("%s: got GOGC %d after restore, want %d", tc.name, got, beforePercent)
		}
	}
}
