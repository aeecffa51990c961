package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// The account commands: service-account create|list, user create|list,
// token list|revoke. Each writes through flagadmin.Service as
// flagadmin.System, which records the change's event in the same
// transaction (createdBy "system").

var (
	serviceAccountCreateCommand = command{
		usage:   "flagadmin service-account create [flags]",
		summary: "Creates a service account (an account for a machine, with its own tokens), and with --token a token for it.",
		about: `It records service-account-created. With --token it also creates a token for
the account (recording pat-created) and prints the token's secret on stdout,
once: the database keeps only a hash of it; the account's line then goes to
stderr, so SECRET=$(flagadmin service-account create ... --token) works. The
account and its token are written in one transaction: both or neither.

Root roles: Viewer (the default), Editor, Admin.`,
		env: []string{envDB, envLogLevel, envLogFormat},
	}
	serviceAccountListCommand = command{
		usage:   "flagadmin service-account list [flags]",
		summary: "Lists the service accounts: id, name, username, root role and how many tokens each has.",
		env:     []string{envDB, envLogLevel, envLogFormat},
	}
	serviceAccountGroup = commandGroup{
		name:    "service-account",
		summary: "Manages service accounts (accounts for machines, with their own tokens): creates one, lists them.",
		subs:    []subcommandHelp{{"create", &serviceAccountCreateCommand}, {"list", &serviceAccountListCommand}},
	}
	userCreateCommand = command{
		usage:   "flagadmin user create [flags]",
		summary: "Creates a personal user account and records user-created.",
		about: `Give it a token with "flagadmin token create --type user --user-id ID".

Root roles: Viewer (the default), Editor, Admin.`,
		env: []string{envDB, envLogLevel, envLogFormat},
	}
	userListCommand = command{
		usage:   "flagadmin user list [flags]",
		summary: "Lists the user accounts (not service accounts): id, name, username, email and root role.",
		env:     []string{envDB, envLogLevel, envLogFormat},
	}
	userGroup = commandGroup{
		name:    "user",
		summary: "Manages personal user accounts: creates one, lists them.",
		subs:    []subcommandHelp{{"create", &userCreateCommand}, {"list", &userListCommand}},
	}
)

// accountCommand runs service-account (service set) or user.
func (c *cli) accountCommand(ctx context.Context, args []string, service bool) error {
	group := userGroup
	if service {
		group = serviceAccountGroup
	}
	sub, rest, err := c.subcommand(group, args)
	if err != nil {
		return err
	}
	full := "flagadmin " + group.name + " " + sub
	fs := newFlagSet(full)
	s := newSettings(fs, c.getenv, withDB)
	var a newAccount
	if sub == "create" {
		a.flags(fs, service)
	}
	positional, err := c.parse(fs, *group.command(sub), rest)
	if err != nil {
		return err
	}
	if err := noArgs(fs, positional); err != nil {
		return err
	}
	cfg, err := s.config(fs)
	if err != nil {
		return err
	}
	if sub == "create" {
		return c.accountCreate(ctx, cfg, full, service, a)
	}
	svc, closeStore, err := c.openExistingService(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer closeStore()
	return c.listAccounts(ctx, svc, service)
}

// newAccount is what service-account create and user create are given:
// the account, and for a service account with --token, its token.
type newAccount struct {
	user                         flagadmin.User
	rootRole, tokenName, expires string
	withToken                    bool
}

// flags registers the flags of create: the account's, the email of a
// user, and the token's of a service account.
func (a *newAccount) flags(fs *flag.FlagSet, service bool) {
	fs.StringVar(&a.user.Name, "name", "", "display `NAME`")
	fs.StringVar(&a.user.Username, "username", "", "user `NAME` (login name)")
	if !service {
		fs.StringVar(&a.user.Email, "email", "", "email `ADDRESS` (events the user causes name it as createdBy)")
	}
	fs.StringVar(&a.rootRole, "root-role", "Viewer", "root `ROLE`: Viewer, Editor or Admin")
	if service {
		fs.BoolVar(&a.withToken, "token", false, "also create a token for the account and print its secret, once")
		fs.StringVar(&a.tokenName, "token-name", "", "`NAME` of the token of --token (default: the account's username or name)")
		fs.StringVar(&a.expires, "expires", "", "`EXPIRY` of the token of --token: RFC 3339 time, yyyy-mm-dd, or a duration such as 90d (default: never)")
	}
}

// account returns the account to create and the expiry of its token (nil:
// never). It refuses, in this order: an unknown root role, an account
// without a name, token flags without --token, an expiry it cannot read
// or in the past.
func (a *newAccount) account(full string, service bool) (flagadmin.User, *time.Time, error) {
	u := a.user
	u.Name, u.Username, u.Email, u.IsService = strings.TrimSpace(u.Name), strings.TrimSpace(u.Username), strings.TrimSpace(u.Email), service
	role, err := parseRootRole(a.rootRole)
	if err != nil {
		return flagadmin.User{}, nil, err
	}
	u.RootRole = role
	if u.Name == "" && u.Username == "" && u.Email == "" {
		if service {
			return flagadmin.User{}, nil, cliErrorf("%s needs --name or --username", full)
		}
		return flagadmin.User{}, nil, cliErrorf("%s needs --name, --username or --email", full)
	}
	if !a.withToken && (a.tokenName != "" || a.expires != "") {
		return flagadmin.User{}, nil, cliErrorf("--token-name and --expires describe the token of --token; add --token")
	}
	expiresAt, err := tokenExpiry(a.expires, time.Now())
	if err != nil {
		return flagadmin.User{}, nil, err
	}
	return u, expiresAt, nil
}

// tokenExpiry reads --expires (see parseExpiry): nil when raw is empty,
// an error when it cannot be read or is not after now.
func tokenExpiry(raw string, now time.Time) (*time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	at, err := parseExpiry(raw, now)
	if err != nil {
		return nil, cliErrorf("--expires: %v", err)
	}
	if !at.After(now) {
		return nil, cliErrorf("--expires: %s is in the past", at.Format(time.RFC3339))
	}
	return &at, nil
}

// accountCreate runs service-account create (service set) or user create,
// into a database that keeps it.
func (c *cli) accountCreate(ctx context.Context, cfg Config, full string, service bool, a newAccount) error {
	u, expiresAt, err := a.account(full, service)
	if err != nil {
		return err
	}
	if cfg.DB == memoryURL {
		return cliErrorf("memory: keeps nothing after this command ends; create accounts in a database (sqlite:, postgres://, mysql://)")
	}
	svc, closeStore, err := c.openService(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	return c.createAccount(ctx, svc, cfg, u, a.withToken, a.tokenName, expiresAt)
}

// commandGroup is a command made of subcommands, such as token create,
// list and revoke, for dispatch and help.
type commandGroup struct {
	// name is the command after "flagadmin": "token".
	name string
	// summary says what the command is for, in a line or two.
	summary string
	subs    []subcommandHelp
}

// subcommandHelp is a subcommand of a commandGroup and its help.
type subcommandHelp struct {
	name string
	cmd  *command
}

// command returns the help of the subcommand sub.
func (g commandGroup) command(sub string) *command {
	for _, s := range g.subs {
		if s.name == sub {
			return s.cmd
		}
	}
	return nil
}

// names lists the subcommands as "a, b or c".
func (g commandGroup) names() string {
	var names []string
	for _, s := range g.subs {
		names = append(names, s.name)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// printHelp writes what the group is for, then each subcommand's usage
// and summary.
func (g commandGroup) printHelp(w io.Writer) {
	writeWrapped(w, "", g.summary, 0)
	fmt.Fprint(w, "\nUsage:\n")
	for _, s := range g.subs {
		fmt.Fprintf(w, "  %s\n", s.cmd.usage)
		writeWrapped(w, "      ", s.cmd.summary, 6)
	}
	fmt.Fprintf(w, "\nRun \"flagadmin %s SUBCOMMAND --help\" for the flags of each.\n", g.name)
}

// subcommand splits args into a subcommand of g and its arguments; --help
// alone prints the help of g.
func (c *cli) subcommand(g commandGroup, args []string) (string, []string, error) {
	if len(args) > 0 && isHelpFlag(args[0]) {
		g.printHelp(c.stdout)
		return "", nil, errHelpShown
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", nil, cliErrorf("flagadmin %s needs a subcommand: %s (see flagadmin %s --help)", g.name, g.names(), g.name)
	}
	if g.command(args[0]) == nil {
		return "", nil, cliErrorf("unknown subcommand %s of flagadmin %s; use %s", strconv.Quote(args[0]), g.name, g.names())
	}
	return args[0], args[1:], nil
}

// parseRootRole reads a root role in any case.
func parseRootRole(raw string) (flagadmin.RootRole, error) {
	for _, r := range []flagadmin.RootRole{flagadmin.RoleViewer, flagadmin.RoleEditor, flagadmin.RoleAdmin} {
		if strings.EqualFold(strings.TrimSpace(raw), string(r)) {
			return r, nil
		}
	}
	return "", cliErrorf("--root-role: %s is not a root role; use Viewer, Editor or Admin", strconv.Quote(raw))
}

// createAccount creates u and, with withToken, a token for it in the same
// transaction (both or neither).
func (c *cli) createAccount(ctx context.Context, svc *flagadmin.Service, cfg Config, u flagadmin.User, withToken bool, tokenName string, expiresAt *time.Time) error {
	fields := map[string]string{"name": "--name", "rootRole": "--root-role", "expiresAt": "--expires"}
	kind := "user"
	if u.IsService {
		kind = "service account"
	}
	if !withToken {
		created, err := svc.CreateUser(ctx, flagadmin.System, u)
		if err != nil {
			return accountWriteError("cannot create the account", err, fields)
		}
		fmt.Fprintf(c.stdout, "created %s %d %s (root role %s) in %s\n", kind, created.ID, strconv.Quote(accountName(created)), created.RootRole, bunstore.RedactURL(cfg.DB))
		return nil
	}
	if tokenName == "" {
		tokenName = cmpOr(u.Username, u.Name, u.Email)
	}
	created, secret, tok, err := svc.CreateUserWithToken(ctx, flagadmin.System, u, flagadmin.NewAPIToken{Name: tokenName, ExpiresAt: expiresAt})
	if err != nil {
		return accountWriteError("cannot create the account and its token", err, fields)
	}
	fmt.Fprintf(c.stderr, "created %s %d %s (root role %s) in %s\n", kind, created.ID, strconv.Quote(accountName(created)), created.RootRole, bunstore.RedactURL(cfg.DB))
	fmt.Fprintln(c.stdout, secret)
	fmt.Fprintf(c.stderr, "created token %s (id %s) for %s %d; the secret above is shown once and cannot be shown again\n", strconv.Quote(tok.Name), tok.ID(), kind, created.ID)
	return nil
}

// cmpOr returns the first of vs that is not empty.
func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// accountName is how listings name an account.
func accountName(u flagadmin.User) string { return cmpOr(u.Name, u.Username, u.Email) }

// listAccounts prints the service accounts (service) or the users.
func (c *cli) listAccounts(ctx context.Context, svc *flagadmin.Service, service bool) error {
	users, err := svc.ListUsers(ctx, flagadmin.System)
	if err != nil {
		return cliErrorf("cannot list the accounts: %s", withCause(err))
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	if service {
		tokens, err := svc.ListAPITokens(ctx, flagadmin.System)
		if err != nil {
			return cliErrorf("cannot list the tokens: %s", withCause(err))
		}
		count := map[int64]int{}
		for _, t := range tokens {
			if t.UserID != nil {
				count[*t.UserID]++
			}
		}
		fmt.Fprintln(tw, "ID\tNAME\tUSERNAME\tROOT ROLE\tTOKENS")
		for _, u := range users {
			if u.IsService {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\n", u.ID, dash(u.Name), dash(u.Username), u.RootRole, count[u.ID])
			}
		}
	} else {
		fmt.Fprintln(tw, "ID\tNAME\tUSERNAME\tEMAIL\tROOT ROLE")
		for _, u := range users {
			if !u.IsService {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", u.ID, dash(u.Name), dash(u.Username), dash(u.Email), u.RootRole)
			}
		}
	}
	return tw.Flush()
}

// dash stands in for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tokenList prints every token, never a secret.
func (c *cli) tokenList(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin token list")
	s := newSettings(fs, c.getenv, withDB)
	cfg, err := c.parseConfig(fs, s, tokenListCommand, args)
	if err != nil {
		return err
	}
	svc, closeStore, err := c.openExistingService(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer closeStore()
	tokens, err := svc.ListAPITokens(ctx, flagadmin.System)
	if err != nil {
		return cliErrorf("cannot list the tokens: %s", withCause(err))
	}
	users, err := svc.ListUsers(ctx, flagadmin.System)
	if err != nil {
		return cliErrorf("cannot list the accounts: %s", withCause(err))
	}
	byID := map[int64]flagadmin.User{}
	for _, u := range users {
		byID[u.ID] = u
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tNAME\tOWNER\tPROJECT\tENVIRONMENT\tEXPIRES\tCREATED")
	for _, t := range tokens {
		owner := "-"
		if t.UserID != nil {
			u, ok := byID[*t.UserID]
			switch {
			case !ok:
				owner = fmt.Sprintf("deleted account %d", *t.UserID)
			case u.IsService:
				owner = fmt.Sprintf("service account %d (%s)", u.ID, accountName(u))
			default:
				owner = fmt.Sprintf("user %d (%s)", u.ID, u.DisplayName())
			}
		}
		expires := "never"
		if t.ExpiresAt != nil {
			expires = t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		project, env := "-", "-"
		if t.Type == flagadmin.TokenClient || t.Type == flagadmin.TokenFrontend {
			project, env = t.Project, t.Environment
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID(), t.Type, dash(t.Name), owner, project, env, expires, t.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// tokenRevoke deletes the token its argument names.
func (c *cli) tokenRevoke(ctx context.Context, args []string) error {
	fs := newFlagSet("flagadmin token revoke")
	s := newSettings(fs, c.getenv, withDB)
	rest, err := c.parse(fs, tokenRevokeCommand, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return cliErrorf("flagadmin token revoke takes one token: its id from flagadmin token list, or its secret (got %d arguments)", len(rest))
	}
	cfg, err := s.config(fs)
	if err != nil {
		return err
	}
	svc, closeStore, err := c.openExistingService(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer closeStore()
	tok, err := svc.RevokeAPIToken(ctx, flagadmin.System, rest[0])
	switch {
	case errors.Is(err, flagadmin.ErrNotFound):
		return cliErrorf("token %s does not exist (flagadmin token list shows the tokens and their ids)", flagadmin.QuoteInput(strings.TrimSpace(rest[0])))
	case err != nil:
		return accountWriteError("cannot revoke the token", err, nil)
	}
	fmt.Fprintf(c.stdout, "revoked %s token %s (id %s); it no longer authenticates\n", tok.Type, strconv.Quote(tok.Name), tok.ID())
	return nil
}

// accountWriteError is the one line of a failed write: a validation error's
// fields (named by their flags when flags maps them), or the error with
// its cause.
func accountWriteError(what string, err error, flags map[string]string) error {
	var v *flagadmin.ValidationError
	if !errors.As(err, &v) {
		return cliErrorf("%s: %s", what, withCause(err))
	}
	parts := make([]string, len(v.Fields))
	for i, f := range v.Fields {
		path := f.Path
		if fl, ok := flags[path]; ok {
			path = fl
		}
		parts[i] = path + ": " + f.Message
	}
	return cliErrorf("%s: %s", what, strings.Join(parts, "; "))
}
