package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/storecache"
)

// --result-cache-size defaults to flagadmin serve's size, reaches the
// server child's command line, and shows in the run's header.
func TestResultCacheSizeOption(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseOptions(nil, &stderr)
	if err != nil || o.ResultCacheSize != storecache.DefaultResultCacheSize {
		t.Fatalf("default: %d, %v; want %d", o.ResultCacheSize, err, storecache.DefaultResultCacheSize)
	}
	if o, err = parseOptions([]string{"--result-cache-size", "0"}, &stderr); err != nil || o.ResultCacheSize != 0 {
		t.Errorf("--result-cache-size 0: %d, %v", o.ResultCacheSize, err)
	}
	if _, err = parseOptions([]string{"--result-cache-size", "-1"}, &stderr); err == nil {
		t.Error("--result-cache-size -1: want an error")
	}
	o.ResultCacheSize = 1 << 20
	if args := childArgs(o); !slices.Contains(args, "--result-cache-size") || args[slices.Index(args, "--result-cache-size")+1] != "1048576" {
		t.Errorf("child arguments %q lack --result-cache-size 1048576", args)
	}

	var help bytes.Buffer
	run(context.Background(), []string{"--help"}, nil, &help, &help)
	if !strings.Contains(help.String(), "--result-cache-size") {
		t.Error("--help does not list --result-cache-size")
	}

	for _, c := range []struct {
		size *int64
		want string
	}{{sizePtr(64 << 20), "result cache 64 MiB"}, {sizePtr(0), "result cache off"}, {sizePtr(1000), "result cache 1,000 bytes"}, {nil, "result cache (the server's own)"}} {
		var out bytes.Buffer
		printHeader(&out, &results{Config: runConfig{ResultCacheBytes: c.size}})
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("header lacks %q:\n%s", c.want, out.String())
		}
	}
}

// The server child serves with the result cache it is given.
func TestServeChildResultCache(t *testing.T) {
	for _, size := range []string{"0", "1048576"} {
		var stdout, stderr bytes.Buffer
		err := serveChild(context.Background(), []string{"--db", memoryDB, "--result-cache-size", size}, strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "--db") {
			t.Errorf("size %s: got %v, want the refusal of memory: (the flag itself parsed)", size, err)
		}
	}
	err := serveChild(context.Background(), []string{"--result-cache-size", "lots"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "result-cache-size") {
		t.Errorf("a bad size: got %v", err)
	}
}

func sizePtr(v int64) *int64 { return &v }
