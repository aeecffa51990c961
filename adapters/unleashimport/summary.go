package unleashimport

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Summary is what an import read, imported, skipped and mapped down, per
// kind of row, with the reasons.
type Summary struct {
	// Schema describes the source schema ("migration 397, 20260902120000-...").
	Schema string
	// Kinds are the counts per kind of row, in the order they were read.
	Kinds []*Count
	// NotImportable lists the rows that cannot be imported, one line each
	// (tokens Unleash keeps only as a hash).
	NotImportable []string
	// Warnings are remarks about the whole import.
	Warnings []string
	// Elapsed is how long the import took.
	Elapsed time.Duration
}

// Count is what happened to the rows of one kind.
type Count struct {
	// Name of the kind, such as "users" or "events".
	Name string
	// Read counts the source rows; Imported those written (or, in a dry
	// run, that would be).
	Read, Imported int
	// Skipped counts the rows not imported, by reason.
	Skipped map[string]int
	// MappedDown counts the rows imported with something changed, by what.
	MappedDown map[string]int
}

// kind returns the count named name, added when missing.
func (s *Summary) kind(name string) *Count {
	for _, c := range s.Kinds {
		if c.Name == name {
			return c
		}
	}
	c := &Count{Name: name, Skipped: map[string]int{}, MappedDown: map[string]int{}}
	s.Kinds = append(s.Kinds, c)
	return c
}

// Kind returns the count named name, or nil.
func (s *Summary) Kind(name string) *Count {
	for _, c := range s.Kinds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (c *Count) skip(reason string)    { c.Skipped[reason]++ }
func (c *Count) mapDown(reason string) { c.MappedDown[reason]++ }
func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// SkippedTotal is the number of skipped rows of the kind.
func (c *Count) SkippedTotal() int { return sum(c.Skipped) }

// MappedDownTotal is the number of mapped-down rows of the kind.
func (c *Count) MappedDownTotal() int { return sum(c.MappedDown) }

// Write prints the summary as a table followed by the reasons.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tread\timported\tskipped\tmapped down\t")
	for _, c := range s.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", c.Name, c.Read, c.Imported, c.SkippedTotal(), c.MappedDownTotal())
	}
	tw.Flush()
	for _, part := range []struct {
		title string
		of    func(*Count) map[string]int
	}{{"skipped", func(c *Count) map[string]int { return c.Skipped }}, {"mapped down", func(c *Count) map[string]int { return c.MappedDown }}} {
		var lines []string
		for _, c := range s.Kinds {
			m := part.of(c)
			for _, r := range slices.Sorted(maps.Keys(m)) {
				lines = append(lines, fmt.Sprintf("  %s: %d %s", c.Name, m[r], r))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "%s:\n%s\n", part.title, strings.Join(lines, "\n"))
		}
	}
	if len(s.NotImportable) > 0 {
		fmt.Fprintf(&b, "not importable:\n  %s\n", strings.Join(s.NotImportable, "\n  "))
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
