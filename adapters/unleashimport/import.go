package unleashimport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Target is a store an import writes into: it must be empty, and it loads
// the whole world in one transaction, keeping the ids given (events
// included), so that an interrupted import leaves it empty.
// *bunstore.Store and *memstore.Store implement it.
type Target = flagadmin.Loader

// ErrNotEmpty: the target store holds data already. It matches
// flagadmin.ErrConflict too.
var ErrNotEmpty = fmt.Errorf("the target store is not empty%w", errConflictSilent{})

// errConflictSilent is flagadmin.ErrConflict without its text.
type errConflictSilent struct{}

func (errConflictSilent) Error() string        { return "" }
func (errConflictSilent) Is(target error) bool { return target == flagadmin.ErrConflict }

// Options tune an import.
type Options struct {
	// Progress receives a line per table and the events' rate while they
	// are read (stderr in the command); nil for none.
	Progress io.Writer
	// Now is the time put where Unleash has none (default time.Now).
	Now func() time.Time
	// EventBatch is how many events are read and written at a time
	// (default 5000): memory holds about one batch.
	EventBatch int
}

// Import reads src and writes it into target, which must be empty (else
// an error naming what it holds, and nothing read). All or nothing.
func Import(ctx context.Context, src *Source, target Target, opts Options) (*Summary, error) {
	have, err := target.Contents(ctx)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, k := range []string{"users", "groups", "projects", "features", "tokens", "events"} {
		if have[k] > 0 {
			held = append(held, nounCount(have[k], k))
		}
	}
	if len(held) > 0 {
		return nil, fmt.Errorf("%w: it holds %s; import into an empty database", ErrNotEmpty, strings.Join(held, ", "))
	}
	return src.run(ctx, opts, func(ctx context.Context, r *reader, w *world) error {
		err := target.Load(ctx, &w.batch, func(emit func([]flagadmin.Event) error) error {
			r.prog.step("write users, groups, projects, flags, tokens")
			return r.readEvents(ctx, eventMode{}, emit)
		})
		if err == nil {
			r.prog.step("build the event indexes and commit")
		}
		return err
	})
}

// DryRun reads and maps src as Import does, and writes nothing.
func DryRun(ctx context.Context, src *Source, opts Options) (*Summary, error) {
	return src.run(ctx, opts, func(ctx context.Context, r *reader, w *world) error {
		return r.readEvents(ctx, eventMode{}, func([]flagadmin.Event) error { return nil })
	})
}

// WriteSeed reads src and writes it to out as a seed file (flagadmin seed,
// --seed): users, service accounts, groups, projects with their members
// and favorites, flags, tokens with their secrets in clear, and events in
// id order (a seed file gives no ids: loaded into an empty store, events
// get 1, 2, ... in file order, which are Unleash's ids when it has no
// gaps). Events of types a seed cannot hold are skipped and counted. The
// file holds every secret in clear: keep it as safe as the database.
func WriteSeed(ctx context.Context, src *Source, out io.Writer, opts Options) (*Summary, error) {
	return src.run(ctx, opts, func(ctx context.Context, r *reader, w *world) error {
		bw := bufio.NewWriterSize(out, 1<<16)
		if err := writeSeedHead(bw, w); err != nil {
			return err
		}
		first := true
		err := r.readEvents(ctx, eventMode{forSeed: true}, func(batch []flagadmin.Event) error {
			for _, e := range batch {
				line, err := flagadmin.SeedEventJSON(e)
				if err != nil {
					return err
				}
				if !first {
					bw.WriteString(",\n")
				}
				first = false
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := bw.WriteString("\n]}\n"); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// run reads src in one read-only snapshot: the world, then sink, which
// reads the events through r.
func (s *Source) run(ctx context.Context, opts Options, sink func(context.Context, *reader, *world) error) (*Summary, error) {
	start := time.Now()
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	sum := &Summary{Schema: fmt.Sprintf("Unleash schema at migration %d (%s)", s.Migrations, s.LastMigration)}
	if s.Newer() {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("the schema is newer than the newest this importer was tested with (Unleash 8.2.0, migration %s)", NewestKnownMigration))
	}
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, sourceFailure(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	r := &reader{src: s, tx: tx, sum: sum, prog: newProgress(opts.Progress), batchSize: opts.EventBatch}
	if r.batchSize < 1 {
		r.batchSize = defaultEventBatch
	}
	w, err := r.readWorld(ctx, flagadmin.Truncate(now()))
	if err != nil {
		return nil, err
	}
	if err := sink(ctx, r, w); err != nil {
		return nil, err
	}
	sum.Elapsed = time.Since(start)
	return sum, nil
}

// seed sections, in the order a seed file lists them.
func writeSeedHead(w *bufio.Writer, wd *world) error {
	var users, services []flagadmin.User
	for _, u := range wd.batch.Users {
		if u.IsService {
			u.IsService = false // the section says it
			services = append(services, u)
		} else {
			users = append(users, u)
		}
	}
	tokens := make([]flagadmin.SeedToken, len(wd.batch.Tokens))
	for i, t := range wd.batch.Tokens {
		st := flagadmin.SeedToken{Secret: wd.secrets[i], Name: t.Name, UserID: t.UserID, ExpiresAt: t.ExpiresAt}
		if t.Type != flagadmin.TokenUser {
			st.Type = t.Type
		}
		tokens[i] = st
	}
	w.WriteString("{")
	for _, sec := range []struct {
		key string
		v   any
	}{{"users", orEmpty(users)}, {"serviceAccounts", orEmpty(services)}, {"groups", orEmpty(wd.batch.Groups)},
		{"projects", orEmpty(wd.batch.Projects)}, {"features", orEmpty(wd.batch.Features)}, {"apiTokens", orEmpty(tokens)}} {
		body, err := json.Marshal(sec.v)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%q: %s,\n", sec.key, body)
	}
	_, err := w.WriteString(`"events": [` + "\n")
	return err
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// progress writes progress lines, each with the time the step took.
type progress struct {
	w          io.Writer
	report     func(done, total int) // the events read so far, at every batch (nil: none)
	total      int
	start      time.Time
	lastReport time.Time
	lastStep   time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w, lastStep: time.Now()} }

// since is the time since the last step, which ends now.
func (p *progress) since() time.Duration {
	now := time.Now()
	d := now.Sub(p.lastStep)
	p.lastStep = now
	return d.Round(time.Millisecond)
}

func (p *progress) table(name string, rows int) {
	if p.w != nil {
		fmt.Fprintf(p.w, "read %s: %s in %s\n", name, nounCount(int64(rows), "rows"), p.since())
	}
}

// step reports a step of the target's.
func (p *progress) step(what string) {
	if p.w != nil {
		fmt.Fprintf(p.w, "%s: %s\n", what, p.since())
	}
}

func (p *progress) startEvents(total int) {
	p.total, p.start, p.lastReport = total, time.Now(), time.Now()
	if p.report != nil {
		p.report(0, total)
	}
}

// events reports every second at most (to report, at every call).
func (p *progress) events(done int) {
	if p.report != nil {
		p.report(done, p.total)
	}
	if p.w == nil || time.Since(p.lastReport) < time.Second {
		return
	}
	p.lastReport = time.Now()
	fmt.Fprintf(p.w, "events: %d of %d (%.0f events/s)\n", done, p.total, rate(done, time.Since(p.start)))
}

func (p *progress) doneEvents(done int) {
	if p.w != nil {
		d := time.Since(p.start)
		p.lastStep = time.Now()
		fmt.Fprintf(p.w, "events: %d in %s (%.0f events/s)\n", done, d.Round(time.Millisecond), rate(done, d))
	}
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// nounCount is "1 user", "2 users": n of the plural noun kind.
func nounCount(n int64, kind string) string {
	if n == 1 {
		kind = strings.TrimSuffix(kind, "s")
	}
	return fmt.Sprintf("%d %s", n, kind)
}
