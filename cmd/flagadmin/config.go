package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Environment variables read by the commands. A flag given on the command
// line overrides its variable.
const (
	envAddr        = "FLAGADMIN_ADDR"
	envDB          = "FLAGADMIN_DB"
	envSeed        = "FLAGADMIN_SEED"
	envAdminTokens = "FLAGADMIN_ADMIN_TOKENS"
	envLogLevel    = "FLAGADMIN_LOG_LEVEL"
	envLogFormat   = "FLAGADMIN_LOG_FORMAT"
	envTokenCache  = "FLAGADMIN_TOKEN_CACHE_TTL"
	envResultCache = "FLAGADMIN_RESULT_CACHE_SIZE"
	envDBTimeout   = "FLAGADMIN_DB_TIMEOUT"
)

// Defaults of the configuration.
const (
	defaultAddr      = "127.0.0.1:4242"
	defaultDB        = "sqlite:flagadmin.db"
	defaultLogLevel  = "info"
	defaultLogFormat = "text"
	// defaultTokenCacheTTL is storecache's recommendation, which
	// cmd/flagadmin-bench's server uses too.
	defaultTokenCacheTTL = storecache.DefaultTokenTTL
	// defaultResultCacheSize is storecache's recommendation, which
	// cmd/flagadmin-bench's server uses too.
	defaultResultCacheSize = storecache.DefaultResultCacheSize
	// defaultDBTimeout is the storage deadline of a request (decisions §16).
	defaultDBTimeout = 5 * time.Second
)

// Config is the configuration of the server and the commands, from flags
// and environment variables.
type Config struct {
	// Addr is the host:port the server listens on.
	Addr string
	// DB is the database URL: sqlite:PATH, postgres://..., mysql://... or memory:.
	DB string
	// Seed is a seed file to load at start into an empty store; empty for none.
	Seed string
	// AdminTokens are admin secrets to create at start if missing.
	AdminTokens []string
	// Demo loads the built-in demo world into an empty store at start.
	Demo bool
	// LogLevel is the minimum level of the log.
	LogLevel slog.Level
	// LogFormat is text or json.
	LogFormat string
	// TokenCacheTTL is how long a successful authentication is trusted
	// without asking the database again; 0 disables the cache.
	TokenCacheTTL time.Duration
	// ResultCacheSize bounds the memory, in bytes, of the cache of search
	// results and project lists; 0 disables the cache.
	ResultCacheSize int64
	// DBTimeout is the storage deadline: how long a request's storage
	// work, and each store operation, may take before the request is
	// answered 503; 0 means none.
	DBTimeout time.Duration
}

// setting is one configuration value. It comes from its flag if given,
// else from its FLAGADMIN_ variable if not empty, else it is the flag's
// default.
type setting struct {
	flag, env string
	// value holds the flag's value, its default when not given.
	value string
}

// settings binds configuration flags to a flag set and turns the parsed
// values, or those of the environment, into a Config.
type settings struct {
	getenv                                                                               func(string) string
	addr, db, seed, adminTokens, logLevel, logFormat, tokenCache, resultCache, dbTimeout *setting
	demo                                                                                 *bool
}

// Flag sets of the commands that need them.
const (
	withDB = 1 << iota
	withServe
)

// newSettings registers the configuration flags of a command on fs: the
// database and log flags, and with withServe the server's own flags.
func newSettings(fs *flag.FlagSet, getenv func(string) string, which int) *settings {
	s := &settings{getenv: getenv}
	bind := func(name, env, def, usage string) *setting {
		// The help shows the real default, never a value of the
		// environment (which may hold a password or a token).
		st := &setting{flag: name, env: env}
		fs.StringVar(&st.value, name, def, usage+" (env "+env+")")
		return st
	}
	s.db = bind("db", envDB, defaultDB, "database URL: sqlite:PATH, postgres://..., mysql://user:pass@host:port/db or memory:")
	s.logLevel = bind("log-level", envLogLevel, defaultLogLevel, "log level: debug, info, warn or error")
	s.logFormat = bind("log-format", envLogFormat, defaultLogFormat, "log format: text or json")
	if which&withServe == 0 {
		return s
	}
	s.addr = bind("addr", envAddr, defaultAddr, "address to listen on, host:port")
	s.seed = bind("seed", envSeed, "", "seed file to load at start when the store is empty")
	s.adminTokens = bind("admin-tokens", envAdminTokens, "", "comma-separated admin tokens (*:*.<secret>) to create at start if missing")
	s.demo = fs.Bool("demo", false, "load the built-in demo world at start when the store is empty")
	s.tokenCache = bind("token-cache-ttl", envTokenCache, defaultTokenCacheTTL.String(),
		"how long a successful authentication is trusted without asking the database again,\n"+
			"such as 1s or 500ms; 0 disables the cache. With several servers on one database, a\n"+
			"deleted token or service account is refused at once by the server that deleted it,\n"+
			"but the others may accept it for up to this long")
	s.resultCache = bind("result-cache-size", envResultCache, formatByteSize(defaultResultCacheSize),
		"memory for the cache of event search results and project lists, in bytes or with\n"+
			"a unit, such as 64MiB, 512KiB or 1GiB; 0 disables the cache. Every request still\n"+
			"reads the database's change counter, so no answer is older than the last write\n"+
			"made through flagadmin (by any server on the database)")
	s.dbTimeout = bind("db-timeout", envDBTimeout, defaultDBTimeout.String(),
		"storage deadline: how long a request may wait for the database (for a connection,\n"+
			"its statements, a lock) before it is answered 503 ServiceUnavailable with\n"+
			"Retry-After, such as 5s or 500ms; 0 disables it. The database is told too\n"+
			"(statement_timeout and lock_timeout on PostgreSQL, their equivalents on MySQL,\n"+
			"busy_timeout on SQLite)")
	return s
}

// lookup returns the value of st in effect and the name of its source for
// error messages: --flag or a variable.
func (s *settings) lookup(st *setting, set map[string]bool) (raw, source string, err error) {
	if set[st.flag] {
		return st.value, "--" + st.flag, nil
	}
	if v := s.getenv(st.env); v != "" {
		return v, st.env, nil
	}
	return st.value, st.env, nil
}

// config validates the values in effect. Errors name the flag or
// environment variable of the bad value.
func (s *settings) config(fs *flag.FlagSet) (Config, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var cfg Config
	steps := []struct {
		st    *setting
		parse func(raw string) error
	}{
		{s.db, into(&cfg.DB, parseDBURL)},
		{s.logLevel, into(&cfg.LogLevel, parseLogLevel)},
		{s.logFormat, into(&cfg.LogFormat, parseLogFormat)},
		{s.addr, into(&cfg.Addr, parseAddr)},
		{s.seed, into(&cfg.Seed, func(raw string) (string, error) { return strings.TrimSpace(raw), nil })},
		{s.adminTokens, into(&cfg.AdminTokens, parseAdminTokens)},
		{s.tokenCache, into(&cfg.TokenCacheTTL, func(raw string) (time.Duration, error) { return parseDuration(raw, "to disable the cache") })},
		{s.resultCache, into(&cfg.ResultCacheSize, parseByteSize)},
		{s.dbTimeout, into(&cfg.DBTimeout, func(raw string) (time.Duration, error) { return parseDuration(raw, "for no deadline") })},
	}
	for _, step := range steps {
		if step.st == nil { // a server setting of a database command
			continue
		}
		raw, source, err := s.lookup(step.st, set)
		if err == nil {
			err = step.parse(raw)
		}
		if err != nil {
			return Config{}, cliErrorf("%s: %v", source, err)
		}
	}
	if s.demo != nil && *s.demo {
		cfg.Demo = true
		if _, source, _ := s.lookup(s.seed, set); cfg.Seed != "" {
			return Config{}, cliErrorf("--demo and %s both ask for a world to load; give only one", source)
		}
	}
	return cfg, nil
}

// into returns a function that parses a raw value into *dst.
func into[T any](dst *T, parse func(raw string) (T, error)) func(string) error {
	return func(raw string) (err error) {
		*dst, err = parse(raw)
		return err
	}
}

// parseDBURL checks that a database URL has a scheme flagadmin supports.
func parseDBURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "memory:":
		return raw, nil
	case strings.HasPrefix(raw, "sqlite:"):
		if strings.TrimPrefix(raw, "sqlite:") == "" {
			return "", errors.New(`"sqlite:" needs a file path, such as sqlite:flagadmin.db (or sqlite::memory:)`)
		}
		return raw, nil
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"), strings.HasPrefix(raw, "mysql://"):
		if _, err := url.Parse(raw); err != nil {
			return "", fmt.Errorf("%q is not a valid URL", bunstore.RedactURL(raw))
		}
		return raw, nil
	case raw == "":
		return "", errors.New("is empty; use sqlite:PATH, postgres://..., mysql://... or memory:")
	}
	return "", fmt.Errorf("unsupported database URL %q; use sqlite:PATH, postgres://..., mysql://user:pass@host:port/db or memory:", bunstore.RedactURL(raw))
}

// parseLogLevel accepts debug, info, warn and error, in any case.
func parseLogLevel(raw string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(raw)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q; use debug, info, warn or error", raw)
}

// parseLogFormat accepts text and json.
func parseLogFormat(raw string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(raw)); f {
	case "text", "json":
		return f, nil
	case "":
		return defaultLogFormat, nil
	}
	return "", fmt.Errorf("unknown log format %q; use text or json", raw)
}

// parseAddr checks a host:port listen address.
func parseAddr(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	_, port, err := net.SplitHostPort(raw)
	if err != nil {
		return "", fmt.Errorf("%q is not a host:port address, such as 127.0.0.1:4242 or :4242", raw)
	}
	if _, err := parsePort(port); err != nil {
		return "", fmt.Errorf("%q has no valid port number (0 to 65535)", raw)
	}
	return raw, nil
}

// parsePort accepts a port number from 0 to 65535.
func parsePort(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if n, err := strconv.Atoi(raw); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q is not a port number (0 to 65535)", raw)
	}
	return raw, nil
}

// parseDuration accepts a non-negative Go duration (1s, 500ms, 0); zero
// says what 0 means, for the messages.
func parseDuration(raw, zero string) (time.Duration, error) {
	raw = strings.TrimSpace(raw)
	d, err := time.ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; use a number with a unit, such as 1s or 500ms, or 0 %s", raw, zero)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative; use 0 %s", raw, zero)
	}
	return d, nil
}

// byteUnits are the units a size may have, largest first.
var byteUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// parseByteSize accepts a non-negative number of bytes, either plain
// (67108864) or with a unit of byteUnits in any case (64MiB, 64 mib).
// Decimal units (MB, M) are refused rather than guessed: 64MB is
// 64,000,000 bytes to some tools and 64MiB to others.
func parseByteSize(raw string) (int64, error) {
	s := strings.TrimSpace(raw)
	unit := int64(1)
	for _, u := range byteUnits {
		if len(s) > len(u.name) && strings.EqualFold(s[len(s)-len(u.name):], u.name) {
			s, unit = strings.TrimSpace(s[:len(s)-len(u.name)]), u.size
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > math.MaxInt64/unit:
		return 0, fmt.Errorf("%q is too large", raw)
	case err != nil:
		return 0, fmt.Errorf("%q is not a size; use a number of bytes, or one with a unit KiB, MiB or GiB, such as 64MiB, or 0 to disable the cache", raw)
	case n < 0:
		return 0, fmt.Errorf("%q is negative; use 0 to disable the cache", raw)
	}
	return n * unit, nil
}

// formatByteSize writes n the way parseByteSize reads it, in the largest
// unit that divides it.
func formatByteSize(n int64) string {
	for _, u := range byteUnits {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// parseAdminTokens splits a comma-separated list of admin secrets. Each must
// look like *:*.<secret>; the message never repeats a secret.
func parseAdminTokens(raw string) ([]string, error) {
	var out []string
	for i, item := range strings.Split(raw, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if t, ok := flagadmin.TokenShape(item); !ok || t != flagadmin.TokenAdmin {
			return nil, fmt.Errorf("item %d is not an admin token; admin tokens look like *:*.<secret>", i+1)
		}
		out = append(out, item)
	}
	return out, nil
}
