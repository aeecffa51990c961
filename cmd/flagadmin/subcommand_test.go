package main

import (
	"strings"
	"testing"
)

// TestSoleSubcommands: import and follow each have one subcommand; without
// it, or with another, the command says which it is.
func TestSoleSubcommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import"}, "flagadmin import needs a source: unleash (see flagadmin import --help)"},
		{[]string{"import", "flipt"}, `flagadmin: unknown source "flipt" of flagadmin import; the only one is unleash`},
		{[]string{"follow"}, "flagadmin follow needs a subcommand: status (see flagadmin follow -h)"},
		{[]string{"follow", "stop"}, `flagadmin: unknown subcommand "stop" of flagadmin follow; the only one is status`},
	} {
		code, stdout, stderr := runCLI(t, nil, c.args...)
		if code != 1 || stdout != "" || stderr != c.want+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
	for _, args := range [][]string{{"import", "-h"}, {"import", "unleash", "--help"}} {
		if code, stdout, _ := runCLI(t, nil, args...); code != 0 || !strings.Contains(stdout, "Usage: flagadmin import unleash") {
			t.Errorf("%q: exit %d, stdout %q; want the help of import unleash", args, code, stdout)
		}
	}
}

// TestFollowStatusAsksTheServerOfTheEnvironment: without --url, follow
// status asks the server FLAGADMIN_URL names, unless --db is given.
func TestFollowStatusAsksTheServerOfTheEnvironment(t *testing.T) {
	env := map[string]string{envURL: "http://127.0.0.1:1"}
	wantOneLine(t, env, "cannot reach the server at http://127.0.0.1:1", "follow", "status")
	wantOneLine(t, env, "memory: keeps nothing between processes; ask the server with --url", "follow", "status", "--db", "memory:")
}
