package sqlq

import (
	"reflect"
	"testing"

	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"
)

func TestFragments(t *testing.T) {
	cases := []struct {
		name string
		f    Fragment
		text string
		args []any
	}{
		{"in", In("type", []string{"a", "b"}), "type IN (?, ?)", []any{"a", "b"}},
		{"in nothing", In("type", []string(nil)), "1 = 0", nil},
		{"and skips empty", And(F("a = ?", 1), Fragment{}, F("b = ?", 2)), "a = ? AND b = ?", []any{1, 2}},
		{"fill", Fill("SELECT ? FROM t WHERE ?", F("x + ?", 1), In("id", []int64{7, 8})), "SELECT x + ? FROM t WHERE id IN (?, ?)", []any{1, int64(7), int64(8)}},
		{"wrap", F("a = ?", 1).Wrap("(", ")"), "(a = ?)", []any{1}},
		{"like contains", LikeContains("search_meta", "50%_off!"), "search_meta LIKE ? ESCAPE '!'", []any{"%50!%!_off!!%"}},
	}
	for _, c := range cases {
		if c.f.Text != c.text || !reflect.DeepEqual(c.f.Args, c.args) {
			t.Errorf("%s: got %q %v, want %q %v", c.name, c.f.Text, c.f.Args, c.text, c.args)
		}
	}
}

func TestDollar(t *testing.T) {
	text, args := Fill("SELECT ? WHERE ? AND c = ?", F("?", 1), In("b", []string{"x", "y"}), F("?", true)).Dollar()
	if want := "SELECT $1 WHERE b IN ($2, $3) AND c = $4"; text != want {
		t.Errorf("got %q, want %q", text, want)
	}
	if want := []any{1, "x", "y", true}; !reflect.DeepEqual(args, want) {
		t.Errorf("got arguments %v, want %v", args, want)
	}
}

func TestFillPanicsOnAMiscount(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Fill with fewer fragments than places did not panic")
		}
	}()
	Fill("? ?", F("1"))
}

func TestOpaque(t *testing.T) {
	f := F("a = ? AND b = ? AND c = ? AND d IN (?, ?)", int64(7), "x", true, 3, "y")
	text, args := f.Opaque()
	want := "a = (SELECT CAST($1 AS bigint)) AND b = (SELECT CAST($2 AS text)) AND c = $3 AND d IN ((SELECT CAST($4 AS bigint)), (SELECT CAST($5 AS text)))"
	if text != want || !reflect.DeepEqual(args, f.Args) {
		t.Errorf("Opaque() = %q, %v\nwant %q, %v", text, args, want, f.Args)
	}
}

func TestTexts(t *testing.T) {
	f := F("a = ? AND p = ANY(CAST(? AS text[]))", "x", Texts{"b", "c'd"})
	for _, c := range []struct {
		name string
		form func() (string, []any)
		want string
	}{
		{"Dollar", f.Dollar, "a = $1 AND p = ANY(CAST((SELECT CAST($2 AS text[])) AS text[]))"},
		{"Opaque", f.Opaque, "a = (SELECT CAST($1 AS text)) AND p = ANY(CAST((SELECT CAST($2 AS text[])) AS text[]))"},
	} {
		text, args := c.form()
		if text != c.want || !reflect.DeepEqual(args, []any{"x", []string{"b", "c'd"}}) {
			t.Errorf("%s() = %q, %#v\nwant %q with the list as []string", c.name, text, args, c.want)
		}
		if _, ok := f.Args[1].(Texts); !ok {
			t.Errorf("%s() changed the fragment's values: %#v", c.name, f.Args)
		}
	}
	gen := schema.NewQueryGen(pgdialect.New())
	if got, want := string(gen.AppendQuery(nil, f.Text, f.Args...)), `a = 'x' AND p = ANY(CAST(ARRAY['b', 'c''d'] AS text[]))`; got != want {
		t.Errorf("Bun writes %s, want %s", got, want)
	}
}
