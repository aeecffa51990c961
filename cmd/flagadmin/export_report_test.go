package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"
)

// TestExportFailureLines holds the one line of a failed export: what was
// written where, and the resume it offers when one can succeed.
func TestExportFailureLines(t *testing.T) {
	newFile := &exportFile{path: "/tmp/out.ndjson"}
	appended := &exportFile{path: "/tmp/out.ndjson", appending: true}
	cases := []struct {
		name    string
		err     error
		written int64
		file    *exportFile
		dest    string
		want    string
	}{
		{"nothing written to a new file", errors.New("boom"), 0, newFile, "/tmp/out.ndjson",
			"flagadmin events export: boom; no event was written and /tmp/out.ndjson was left as it was"},
		{"nothing appended", errors.New("boom"), 0, appended, "/tmp/out.ndjson (appended)",
			"flagadmin events export: boom; no event was written"},
		{"nothing written to stdout", errors.New("boom"), 0, nil, "stdout",
			"flagadmin events export: boom; no event was written"},
		{"some written, resumable", errors.New("connection reset"), 5, nil, "stdout",
			"flagadmin events export: connection reset; 5 events written to stdout, the last id 9: resume with --after-id 9"},
		{"some written, malformed", fmt.Errorf("%w: no id", errBadExport), 5, newFile, "/tmp/out.ndjson",
			"flagadmin events export: the export is malformed: no id; 5 events written to /tmp/out.ndjson, the last id 9"},
		{"some written, not writable", writeError{errors.New("disk full")}, 5, nil, "stdout",
			"flagadmin events export: write: disk full; 5 events written to stdout, the last id 9"},
		{"interrupted", fmt.Errorf("read: %w", context.Canceled), 5, appended, "/tmp/out.ndjson (appended)",
			"flagadmin events export: interrupted; 5 events written to /tmp/out.ndjson (appended), the last id 9: resume with --after-id 9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := &exporter{lastID: 9}
			x.written.Store(c.written)
			if got := exportFailure(c.err, x, c.file, c.dest).Error(); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestExportFinishOutputReportsAWriteFailure: the output that cannot be
// flushed fails an export that had not failed, as a write error; an
// export's own failure comes first.
func TestExportFinishOutputReportsAWriteFailure(t *testing.T) {
	x := &exporter{out: bufio.NewWriter(failingWriter{})}
	x.out.WriteString("{}\n")
	var we writeError
	if err := x.finishOutput(nil, nil); !errors.As(err, &we) {
		t.Errorf("got %v, want a writeError", err)
	}
	x = &exporter{out: bufio.NewWriter(failingWriter{})}
	x.out.WriteString("{}\n")
	failed := errors.New("the server failed")
	if err := x.finishOutput(nil, failed); err != failed {
		t.Errorf("got %v, want the export's own error", err)
	}
}

// syncBuffer is a buffer written by the reporter and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestExportReportProgress: while it runs, the export reports how many
// events it wrote, at the rate asked; at the end, its figures.
func TestExportReportProgress(t *testing.T) {
	var out syncBuffer
	x := &exporter{lastID: 42}
	x.written.Store(7)
	r := exportReport{w: &out, x: x, dest: "stdout", start: time.Now()}
	stop := r.every(time.Millisecond)
	progress := regexp.MustCompile(`^(exported 7 events \(\d+ events/s\)\n)+$`)
	deadline := time.Now().Add(10 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop()
	if got := out.String(); !progress.MatchString(got) {
		t.Fatalf("progress: %q", got)
	}
	var final bytes.Buffer
	r.w = &final
	r.final()
	if got := final.String(); !regexp.MustCompile(`^exported 7 events in \S+ \(\d+ events/s\) to stdout; last id 42\n$`).MatchString(got) {
		t.Errorf("final: %q", got)
	}
	var none bytes.Buffer
	r.w = &none
	r.every(0)()
	if none.Len() != 0 {
		t.Errorf("progress without a period: %q", none.String())
	}
}
