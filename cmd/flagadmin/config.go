package main

import (
	"cmp"
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
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/adapters/storecache"
	"github.com/flagadmin/flagadmin/adapters/tlog"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Environment variables read by the commands. A flag given on the command
// line overrides its variable; a variable overrides Unleash's (unleashEnv).
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
	envDBMaxConns  = "FLAGADMIN_DB_MAX_CONNS"
	envMetricsAddr = "FLAGADMIN_METRICS_ADDR"
	envWebhooks    = "FLAGADMIN_WEBHOOKS"
	envMaxStreams  = "FLAGADMIN_MAX_STREAMS"
	envFollow      = "FLAGADMIN_FOLLOW"
	envLogKey      = "FLAGADMIN_LOG_KEY"
	envRetention   = "FLAGADMIN_RETENTION"
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
	// defaultDBTimeout is the storage deadline of a request: past it, 503.
	defaultDBTimeout = 5 * time.Second
	// defaultDBMaxConns bounds the connections to PostgreSQL or MySQL.
	defaultDBMaxConns = bunstore.DefaultMaxConns
	// defaultMaxStreams bounds the live streams of a server; one more is 503.
	defaultMaxStreams = httpapi.DefaultMaxStreams
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
	// DBMaxConns bounds the connections to a PostgreSQL or MySQL server.
	DBMaxConns int
	// MetricsAddr is the host:port of a separate listener serving only
	// /metrics; empty serves /metrics on the main listener (Addr).
	MetricsAddr string
	// Webhooks is the webhook configuration file; empty for none.
	Webhooks string
	// WebhookSinks are the sinks read from it, validated.
	WebhookSinks []flagadmin.WebhookSink
	// MaxStreams bounds the live event streams the server holds at once.
	MaxStreams int
	// Follow is the URL of an Unleash PostgreSQL database the server
	// follows (--follow); empty for none.
	Follow string
	// LogKey is the file of the key that signs the log's checkpoints;
	// empty for none (the server then signs no checkpoint).
	LogKey string
	// LogSignerKey is the signing key read from LogKey. It is secret:
	// never logged nor printed.
	LogSignerKey string
	// LogState is the file the server keeps its last signed checkpoint
	// in, outside the database; empty without LogKey.
	LogState string
	// LogWitnesses are the witnesses the server submits its checkpoints
	// to (with LogKey); none by default.
	LogWitnesses []tlog.Witness
	// LogInterval is how often the log's upkeep stores new subtree
	// hashes and signs a checkpoint of a grown log; 0 means
	// tlog.DefaultMaintainInterval. No flag sets it: tests shorten it.
	LogInterval time.Duration
	// Retention is how long events are kept before they are pruned; 0
	// keeps them for ever.
	Retention time.Duration
	// GatewayConfig puts the server in front of an Unleash server (gateway.go).
	GatewayConfig
}

// setting is one configuration value. It comes from its flag if given,
// else from its FLAGADMIN_ variable if not empty, else from Unleash's
// variables if it has some and one is set, else it is the flag's default.
type setting struct {
	flag, env string
	// unleash reads the value from Unleash's variables; nil when the
	// setting has none.
	unleash unleashReader
	// value holds the flag's value, its default when not given.
	value string
}

// unleashReader reads a setting from Unleash's variables. It returns the
// value and the variables it came from; source is empty when none of them
// is set, and names the bad variable with err.
type unleashReader func(getenv func(string) string) (raw, source string, err error)

// settings binds configuration flags to a flag set and turns the parsed
// values, or those of the environment, into a Config.
type settings struct {
	getenv                                                                                                       func(string) string
	addr, db, seed, adminTokens, logLevel, logFormat, tokenCache, resultCache, dbTimeout, dbMaxConns, maxStreams *setting
	metricsAddr                                                                                                  *setting
	follow                                                                                                       *setting
	demo                                                                                                         *bool
	webhooks                                                                                                     *setting
	logKey, logState, logWitness, retention                                                                      *setting
	gatewaySettings
}

// Flag sets of the commands that need them.
const (
	withDB = 1 << iota
	withServe
	withWebhooks
)

// newSettings registers the configuration flags of a command on fs: the
// database and log flags, and with withServe the server's own flags.
func newSettings(fs *flag.FlagSet, getenv func(string) string, which int) *settings {
	s := &settings{getenv: getenv}
	bind := func(name, env, def, usage string, unleash unleashReader) *setting {
		// The help shows the real default, never a value of the
		// environment (which may hold a password or a token).
		st := &setting{flag: name, env: env, unleash: unleash}
		usage += " (env " + env
		if names := unleashNames(env); len(names) > 0 {
			usage += "; Unleash's " + strings.Join(names, ", ")
		}
		fs.StringVar(&st.value, name, def, usage+")")
		return st
	}
	s.db = bind("db", envDB, defaultDB, "database `URL`: sqlite:PATH, postgres://..., mysql://user:pass@host:port/db or memory:", unleashDB)
	s.logLevel = bind("log-level", envLogLevel, defaultLogLevel, "log `LEVEL`: debug, info, warn or error", unleashLogLevel)
	s.logFormat = bind("log-format", envLogFormat, defaultLogFormat, "log `FORMAT`: text or json", nil)
	if which&(withServe|withWebhooks) != 0 {
		s.webhooks = bind("webhooks", envWebhooks, "", "webhook configuration `FILE`: a JSON or YAML list of sinks\n"+
			"{name, url, secret, filter}; see the README", nil)
	}
	if which&withServe == 0 {
		return s
	}
	s.addr = bind("addr", envAddr, defaultAddr, "`HOST:PORT` to listen on", unleashAddr)
	s.seed = bind("seed", envSeed, "", "seed `FILE` to load at start when the store is empty", nil)
	s.adminTokens = bind("admin-tokens", envAdminTokens, "", "comma-separated admin `TOKENS` (*:*.<secret>) to create at start if missing", unleashAdminTokens)
	s.demo = fs.Bool("demo", false, "load the built-in demo world at start when the store is empty")
	s.tokenCache = bind("token-cache-ttl", envTokenCache, defaultTokenCacheTTL.String(),
		"the `DURATION` a successful authentication is remembered, such as 1s or 500ms; 0\n"+
			"disables the cache. It is used only while nothing was written to the database (each\n"+
			"request reads its change counter), so a revoked token or a deleted account is refused\n"+
			"at once, by every server on the database", nil)
	s.resultCache = bind("result-cache-size", envResultCache, formatByteSize(defaultResultCacheSize),
		"the memory `SIZE` of the cache of event search results and project lists, in bytes or with\n"+
			"a unit, such as 64MiB, 512KiB or 1GiB; 0 disables the cache. Every request still\n"+
			"reads the database's change counter, so no answer is older than the last write\n"+
			"made through flagadmin (by any server on the database). The server sets its soft\n"+
			"memory limit to this size plus "+formatByteSize(storecache.ServerMemoryBase)+", at least "+formatByteSize(storecache.MemoryLimit(0))+" (the garbage collector\n"+
			"works harder near it, so a full cache does not grow several times over in memory),\n"+
			"and below it lets the heap grow to five times what is live between collections\n"+
			"(GOGC="+strconv.Itoa(storecache.ServerGCPercent)+"), unless "+
			"GOMEMLIMIT or GOGC is set (the Go runtime then follows it; \"off\" for\n"+
			"none) or the store is memory: (its copy is the heap, which the limit would keep\n"+
			"collecting)", nil)
	s.dbTimeout = bind("db-timeout", envDBTimeout, defaultDBTimeout.String(),
		"storage deadline: the `DURATION` a request may wait for the database (for a connection,\n"+
			"its statements, a lock) before it is answered 503 ServiceUnavailable with\n"+
			"Retry-After, such as 5s or 500ms; 0 disables it. The database is told too\n"+
			"(statement_timeout and lock_timeout on PostgreSQL, their equivalents on MySQL,\n"+
			"busy_timeout on SQLite)", nil)
	s.dbMaxConns = bind("db-max-conns", envDBMaxConns, strconv.Itoa(defaultDBMaxConns),
		"the `NUMBER` of connections to a PostgreSQL or MySQL server the server keeps at most;\n"+
			"requests beyond them wait for one (within the storage deadline). Raise it for a\n"+
			"database on a machine of its own with many cores, or far away (a request holds its\n"+
			"connection for each round trip). A SQLite file ignores it", nil)
	s.metricsAddr = bind("metrics-addr", envMetricsAddr, "",
		"`HOST:PORT` of a separate listener that serves only the Prometheus metrics at /metrics;\n"+
			"empty serves /metrics on the main listener, without authentication", nil)
	s.follow = bind("follow", envFollow, "", followUsage, nil)
	s.maxStreams = bind("max-streams", envMaxStreams, strconv.Itoa(defaultMaxStreams),
		"the `NUMBER` of live event streams (GET /api/admin/events/stream) held at once at most; beyond it a new\n"+
			"one is answered 503 ServiceUnavailable with Retry-After", nil)
	s.logKey, s.logState, s.logWitness, s.retention = bindLogSettings(bind)
	repeatable(fs, s.logWitness)
	s.gatewaySettings = bindGateway(bind)
	return s
}

// repeatable makes the flag of a list setting add to the list each time
// it is given (comma-separated), rather than keep the last.
func repeatable(fs *flag.FlagSet, st *setting) {
	fs.Lookup(st.flag).Value = &listValue{&st.value}
}

// listValue is the flag.Value of a repeatable flag.
type listValue struct{ value *string }

func (l *listValue) String() string {
	if l == nil || l.value == nil {
		return ""
	}
	return *l.value
}

func (l *listValue) Set(v string) error {
	if *l.value != "" {
		v = *l.value + "," + v
	}
	*l.value = v
	return nil
}

// lookup returns the value of st in effect and the name of its source for
// error messages: --flag, a variable, or Unleash's variables.
func (s *settings) lookup(st *setting, set map[string]bool) (raw, source string, err error) {
	if set[st.flag] {
		return st.value, "--" + st.flag, nil
	}
	if v := s.getenv(st.env); v != "" {
		return v, st.env, nil
	}
	if st.unleash != nil {
		if raw, source, err := st.unleash(s.getenv); err != nil || source != "" {
			return raw, source, err
		}
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
		{s.metricsAddr, into(&cfg.MetricsAddr, func(raw string) (string, error) {
			if strings.TrimSpace(raw) == "" {
				return "", nil
			}
			return parseAddr(raw)
		})},
		{s.webhooks, func(raw string) (err error) {
			cfg.Webhooks, cfg.WebhookSinks, err = loadWebhooks(raw)
			return err
		}},
		{s.dbMaxConns, into(&cfg.DBMaxConns, parseCount)},
		{s.maxStreams, into(&cfg.MaxStreams, parseCount)},
		{s.follow, into(&cfg.Follow, parseFollowURL)},
		{s.logKey, func(raw string) (err error) {
			cfg.LogKey, cfg.LogSignerKey, err = loadLogKey(raw)
			return err
		}},
		{s.logState, func(raw string) (err error) {
			cfg.LogState, err = parseLogState(raw, cfg.LogKey, cfg.DB)
			return err
		}},
		{s.logWitness, func(raw string) (err error) {
			cfg.LogWitnesses, err = parseLogWitnesses(raw, cfg.LogKey, cfg.DB)
			return err
		}},
		{s.retention, into(&cfg.Retention, parseRetention)},
	}
	steps = append(steps, s.gatewaySettings.steps(&cfg.GatewayConfig)...)
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
	if cfg.Follow != "" {
		if err := s.checkFollow(cfg, set); err != nil {
			return Config{}, err
		}
	}
	if cfg.Upstream != nil && cfg.Follow == "" {
		// In front of Unleash, flagadmin answers from its copy of Unleash's
		// database: without one its answers would not be Unleash's.
		_, source, _ := s.lookup(s.upstream, set)
		return Config{}, cliErrorf("%s needs --follow (or %s): flagadmin answers from a copy of the Unleash database it follows", source, envFollow)
	}
	return cfg, nil
}

// parseCount parses a count such as --max-streams: an integer of 1 or
// more.
func parseCount(raw string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("must be an integer of 1 or more, got %q", raw)
	}
	return n, nil
}

// unleashEnv are Unleash's environment variables that flagadmin reads where
// they mean the same thing as its own, so that an Unleash deployment's
// configuration starts flagadmin unchanged. Each stands in for the
// FLAGADMIN_ variable of, when neither that variable nor its flag is given.
var unleashEnv = []struct{ name, of, help string }{
	{"DATABASE_URL", envDB, "Unleash's: PostgreSQL URL, postgres://user:pass@host:5432/db; wins over the DATABASE_ parts below"},
	{"DATABASE_HOST", envDB, "Unleash's: with the four below, a PostgreSQL database: host (default localhost)"},
	{"DATABASE_PORT", envDB, "Unleash's: database port (default 5432)"},
	{"DATABASE_NAME", envDB, "Unleash's: database name (default unleash)"},
	{"DATABASE_USERNAME", envDB, "Unleash's: database user"},
	{"DATABASE_PASSWORD", envDB, "Unleash's: database password"},
	{"DATABASE_SSL", envDB, "Unleash's: true (TLS with a verified certificate, sslmode=verify-full) or false (sslmode=disable), for DATABASE_URL (unless it has an sslmode) or the parts"},
	{"INIT_ADMIN_API_TOKENS", envAdminTokens, "Unleash's: comma-separated admin tokens (*:*.<secret>) to create at start if missing"},
	{"HTTP_HOST", envAddr, "Unleash's: host to listen on (default all interfaces, as in Unleash)"},
	{"HTTP_PORT", envAddr, "Unleash's: port to listen on (default 4242)"},
	{"LOG_LEVEL", envLogLevel, "Unleash's: debug, info, warn, error, or fatal (read as error: flagadmin logs nothing above error)"},
}

// unleashNames lists the names of Unleash's variables that stand in for
// the FLAGADMIN_ variable env.
func unleashNames(env string) []string {
	var names []string
	for _, v := range unleashEnv {
		if v.of == env {
			names = append(names, v.name)
		}
	}
	return names
}

// unleashDB reads Unleash's database variables: DATABASE_URL, a postgres://
// URL, else one composed of DATABASE_HOST, DATABASE_PORT, DATABASE_NAME,
// DATABASE_USERNAME and DATABASE_PASSWORD with Unleash's defaults (as in
// Unleash, DATABASE_URL wins over the parts). DATABASE_SSL, Unleash's JSON
// switch, gives the sslmode of either unless the URL has its own: with
// true, node-postgres (Unleash's driver, since its version 8) verifies the
// certificate and host name, which is sslmode=verify-full.
func unleashDB(getenv func(string) string) (raw, source string, err error) {
	var u *url.URL
	if raw := strings.TrimSpace(getenv("DATABASE_URL")); raw != "" {
		source = "DATABASE_URL"
		if u, err = url.Parse(raw); err != nil {
			return "", source, fmt.Errorf("%q is not a valid URL", bunstore.RedactURL(raw))
		}
		if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return "", source, fmt.Errorf("%q is not a postgres:// URL; Unleash uses PostgreSQL only (for another database set %s)", bunstore.RedactURL(raw), envDB)
		}
	} else {
		host, port, name := getenv("DATABASE_HOST"), getenv("DATABASE_PORT"), getenv("DATABASE_NAME")
		user, password := getenv("DATABASE_USERNAME"), getenv("DATABASE_PASSWORD")
		if host+port+name+user+password == "" {
			return "", "", nil // DATABASE_SSL alone chooses no database
		}
		source = "DATABASE_HOST, DATABASE_PORT, DATABASE_NAME, DATABASE_USERNAME and DATABASE_PASSWORD"
		if port == "" {
			port = "5432"
		} else if port, err = parsePort(port); err != nil {
			return "", "DATABASE_PORT", err
		}
		host, name = cmp.Or(strings.TrimSpace(host), "localhost"), cmp.Or(strings.TrimSpace(name), "unleash")
		u = &url.URL{Scheme: "postgres", Host: net.JoinHostPort(host, port), Path: "/" + name}
		if password != "" {
			u.User = url.UserPassword(user, password)
		} else if user != "" {
			u.User = url.User(user)
		}
	}
	if ssl := getenv("DATABASE_SSL"); ssl != "" && !u.Query().Has("sslmode") {
		mode, ok := map[string]string{"true": "verify-full", "false": "disable"}[strings.TrimSpace(ssl)]
		if !ok {
			// The value is not repeated: Unleash's JSON form may hold a key.
			return "", "DATABASE_SSL", fmt.Errorf("flagadmin reads only true (sslmode=verify-full) or false (sslmode=disable); "+
				"for other TLS settings give %s a postgres:// URL with sslmode, sslrootcert, sslcert and sslkey", envDB)
		}
		q := u.Query()
		q.Set("sslmode", mode)
		u.RawQuery = q.Encode()
	}
	return u.String(), source, nil
}

// unleashAddr composes the listen address of Unleash's HTTP_HOST and
// HTTP_PORT with Unleash's defaults: all interfaces, port 4242.
func unleashAddr(getenv func(string) string) (raw, source string, err error) {
	host, port := strings.TrimSpace(getenv("HTTP_HOST")), getenv("HTTP_PORT")
	switch {
	case host == "" && port == "":
		return "", "", nil
	case port == "":
		return net.JoinHostPort(host, "4242"), "HTTP_HOST", nil
	}
	if port, err = parsePort(port); err != nil {
		return "", "HTTP_PORT", err
	}
	return net.JoinHostPort(host, port), "HTTP_HOST and HTTP_PORT", nil
}

// unleashAdminTokens reads Unleash's INIT_ADMIN_API_TOKENS, a
// comma-separated list of admin secrets like FLAGADMIN_ADMIN_TOKENS.
func unleashAdminTokens(getenv func(string) string) (raw, source string, err error) {
	if raw = getenv("INIT_ADMIN_API_TOKENS"); raw != "" {
		return raw, "INIT_ADMIN_API_TOKENS", nil
	}
	return "", "", nil
}

// unleashLogLevel reads Unleash's LOG_LEVEL. Unleash's fatal, above
// error, becomes error: the highest level flagadmin logs at.
func unleashLogLevel(getenv func(string) string) (raw, source string, err error) {
	if raw = getenv("LOG_LEVEL"); raw == "" {
		return "", "", nil
	}
	if strings.EqualFold(strings.TrimSpace(raw), "fatal") {
		raw = "error"
	}
	return raw, "LOG_LEVEL", nil
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
		switch t, ok := flagadmin.TokenShape(item); {
		case ok && t == flagadmin.TokenClient:
			return nil, fmt.Errorf("item %d is scoped to a project and environment ([project]:[environment].<secret>), "+
				"which an admin token cannot be (Unleash refuses it too); admin tokens look like *:*.<secret>", i+1)
		case !ok || t != flagadmin.TokenAdmin:
			return nil, fmt.Errorf("item %d is not an admin token; admin tokens look like *:*.<secret>", i+1)
		}
		out = append(out, item)
	}
	return out, nil
}
