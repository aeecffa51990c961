// Package sqlq builds SQL text piece by piece: a Fragment is SQL with ?
// placeholders and the values that fill them, in order. The store's
// builders (the filters of an event search, the totals read from the
// summaries) write fragments once; Bun writes a fragment's values into the
// text (Bun's own formatting, for every database), and the PostgreSQL page
// statements turn its placeholders into $1, $2, ... so that the text
// depends only on the query's shape and pgx can keep it prepared (Dollar).
//
// A fragment's text never holds a ? of its own: every ? is a placeholder.
// Collect reads the rows of a statement run outside Bun.
package sqlq

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// Fragment is SQL text with ? placeholders and their values, in order. The
// zero Fragment is empty.
type Fragment struct {
	Text string
	Args []any
}

// F returns the fragment of text and its values.
func F(text string, args ...any) Fragment { return Fragment{Text: text, Args: args} }

// Empty reports whether f has no text.
func (f Fragment) Empty() bool { return f.Text == "" }

// In is "expr IN (?, ?, ...)", one placeholder per value. With no values it
// is "1 = 0", which matches nothing (an IN list cannot be empty).
func In[T any](expr string, values []T) Fragment {
	if len(values) == 0 {
		return F("1 = 0")
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return F(expr+" IN ("+placeholders(len(values))+")", args...)
}

// Texts is a list of strings passed as one value, PostgreSQL's text[]:
// "column IN (SELECT unnest(CAST(? AS text[])))" looks a row up in the
// list's hash table, built once, where PostgreSQL builds the array of an
// IN list of statement parameters (Opaque's sub-selects) again for every
// row it filters (stored.ProjectHidden). Bun writes it as
// ARRAY['a', 'b']; Dollar and Opaque as an array parameter in a
// sub-select (hiddenArray).
type Texts []string

var _ schema.QueryAppender = Texts{}

// AppendQuery implements schema.QueryAppender: ARRAY[...] of the strings
// as literals.
func (t Texts) AppendQuery(gen schema.QueryGen, b []byte) ([]byte, error) {
	b = append(b, "ARRAY["...)
	for i, s := range t {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = gen.Append(b, s)
	}
	return append(b, ']'), nil
}

// LikeContains is "column LIKE ? ESCAPE '!'" with the pattern that
// matches the values containing text, a literal: its !, % and _ escaped by
// !. It reads the same on PostgreSQL, MySQL and SQLite.
func LikeContains(column, text string) Fragment {
	return F(column+" LIKE ? ESCAPE '!'", "%"+likeEscaper.Replace(text)+"%")
}

// OnConflictUpdate makes q an upsert of the SQL standard's family, which
// PostgreSQL and SQLite share: INSERT ... ON CONFLICT (key) DO UPDATE SET
// column = EXCLUDED.column for each of fields.
func OnConflictUpdate(q *bun.InsertQuery, key string, fields []*schema.Field) *bun.InsertQuery {
	q = q.On("CONFLICT (?) DO UPDATE", bun.Ident(key))
	for _, f := range fields {
		q = q.Set("? = EXCLUDED.?", bun.Ident(f.Name), bun.Ident(f.Name))
	}
	return q
}

// likeEscaper makes a text a literal LIKE pattern with ESCAPE '!'.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// placeholders is "?, ?, ..." with n placeholders.
func placeholders(n int) string {
	return strings.Repeat("?, ", n-1) + "?"
}

// Join joins the fragments that are not empty with sep.
func Join(sep string, fs ...Fragment) Fragment {
	var b strings.Builder
	var args []any
	for _, f := range fs {
		if f.Empty() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(sep)
		}
		b.WriteString(f.Text)
		args = append(args, f.Args...)
	}
	return Fragment{Text: b.String(), Args: args}
}

// And joins the fragments that are not empty with AND.
func And(fs ...Fragment) Fragment { return Join(" AND ", fs...) }

// Wrap returns f between before and after.
func (f Fragment) Wrap(before, after string) Fragment {
	return Fragment{Text: before + f.Text + after, Args: f.Args}
}

// Fill returns text with each ? replaced by the next fragment of fs, in
// order: the fragments' values take the places of their placeholders.
func Fill(text string, fs ...Fragment) Fragment {
	parts := strings.Split(text, "?")
	if len(parts) != len(fs)+1 {
		panic("sqlq: Fill: " + strconv.Itoa(len(parts)-1) + " places for " + strconv.Itoa(len(fs)) + " fragments")
	}
	var b strings.Builder
	var args []any
	for i, p := range parts {
		b.WriteString(p)
		if i < len(fs) {
			b.WriteString(fs[i].Text)
			args = append(args, fs[i].Args...)
		}
	}
	return Fragment{Text: b.String(), Args: args}
}

// Dollar returns f's text with its placeholders numbered $1, $2, ... (in
// the order of its values) and its values: PostgreSQL's form, for pgx.
func (f Fragment) Dollar() (string, []any) {
	return f.numbered(func(p string, arg any) string {
		if _, ok := arg.(Texts); ok {
			return hiddenArray(p)
		}
		return p
	})
}

// hiddenArray is the text[] parameter p in a sub-select, unknown to
// PostgreSQL's planner: seeing the array, each custom plan of a prepared
// statement estimates its rows apart from the generic plan, which is then
// never kept.
func hiddenArray(p string) string { return "(SELECT CAST(" + p + " AS text[]))" }

// Opaque is Dollar with each value that is a number or a string also
// hidden from PostgreSQL's planner in a sub-select, (SELECT CAST($n AS
// bigint)) or (SELECT CAST($n AS text)), for a statement kept prepared
// whose one generic plan serves all its values. PostgreSQL plans a prepared
// statement for its values five times (custom plans), then keeps its
// generic plan only if that costs no more than the custom ones did; when
// seeing the values makes each custom plan's estimate a little lower,
// every run plans the statement again, which may cost more than running
// it. A value in a sub-select is unknown to custom and generic plans
// alike, so from the sixth run on the generic plan is kept.
func (f Fragment) Opaque() (string, []any) {
	return f.numbered(func(p string, arg any) string {
		switch arg.(type) {
		case int, int64:
			return "(SELECT CAST(" + p + " AS bigint))"
		case string:
			return "(SELECT CAST(" + p + " AS text))"
		case Texts:
			return hiddenArray(p)
		}
		return p
	})
}

// numbered returns f's text with each placeholder replaced by what write
// makes of $n (n counting from 1 in the order of its values) and of its
// value, and f's values (a Texts as []string, for pgx).
func (f Fragment) numbered(write func(p string, arg any) string) (string, []any) {
	var b strings.Builder
	n := 0
	for i := 0; i < len(f.Text); i++ {
		if f.Text[i] != '?' {
			b.WriteByte(f.Text[i])
			continue
		}
		var arg any // none when the text has more placeholders than values
		if n < len(f.Args) {
			arg = f.Args[n]
		}
		b.WriteString(write("$"+strconv.Itoa(n+1), arg))
		n++
	}
	args, cloned := f.Args, false
	for i, arg := range f.Args {
		if t, ok := arg.(Texts); ok {
			if !cloned {
				args, cloned = slices.Clone(f.Args), true
			}
			args[i] = []string(t)
		}
	}
	return b.String(), args
}

var _ schema.QueryAppender = Fragment{}

// AppendQuery implements schema.QueryAppender: a fragment is a Bun query
// argument, written with its values as literals.
func (f Fragment) AppendQuery(gen schema.QueryGen, b []byte) ([]byte, error) {
	return gen.AppendQuery(b, f.Text, f.Args...), nil
}

// Query runs stmt, a statement whose text repeats with other values, on
// db: kept prepared where the database would plan it anew each time (the
// dialect's QueryPrepared).
type Query func(ctx context.Context, db bun.IDB, stmt Fragment) (*sql.Rows, error)

// All runs stmt on db by query and returns its rows, each read by scan.
func All[T any](ctx context.Context, db bun.IDB, query Query, stmt Fragment, scan func(*sql.Rows, *T) error) ([]T, error) {
	rows, err := query(ctx, db, stmt)
	if err != nil {
		return nil, err
	}
	return Collect(rows, scan)
}

// One runs stmt on db by query and returns its one row, read by scan; a
// statement that returns none or several is an error.
func One[T any](ctx context.Context, db bun.IDB, query Query, stmt Fragment, scan func(*sql.Rows, *T) error) (T, error) {
	read, err := All(ctx, db, query, stmt, scan)
	if err == nil && len(read) != 1 {
		err = fmt.Errorf("%d rows where one was expected", len(read))
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return read[0], nil
}

// Value reads a row of one column into v: the scan of All or One of such
// a statement.
func Value[T any](rows *sql.Rows, v *T) error { return rows.Scan(v) }

// Collect reads every row of rows by scan, in order, and closes them.
func Collect[T any](rows *sql.Rows, scan func(*sql.Rows, *T) error) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var x T
		if err := scan(rows, &x); err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}
