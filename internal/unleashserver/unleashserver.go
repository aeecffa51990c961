// Package unleashserver starts the real Unleash for end-to-end tests:
// unleash-server as pinned in testdata/unleash (package.json and its lock
// file, installed with "npm ci" once per lock file and kept in
// testdata/unleash/node_modules), on a new PostgreSQL database of the
// server of FLAGADMIN_TEST_POSTGRES_DSN, with the settings the fixture was
// made with (testdata/unleash/start.mjs). Each test gets its own Unleash
// and database, stopped and dropped when it ends. Without Node and npm, or
// without the DSN, tests skip saying which is missing.
package unleashserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/flagadmin/flagadmin/internal/dbtest"
	"github.com/flagadmin/flagadmin/internal/npmci"
	"github.com/flagadmin/flagadmin/internal/syncbuffer"
)

// AdminToken is the admin API token Unleash creates at start
// (INIT_ADMIN_API_TOKENS in start.mjs).
const AdminToken = "*:*.unleash-insecure-admin-api-token"

// Timeouts.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = 10 * time.Second
)

// Dir is testdata/unleash, where package.json and start.mjs are.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "unleash")
}

// Server is a running Unleash.
type Server struct {
	// URL is its base URL, http://127.0.0.1:PORT.
	URL string
	// DatabaseURL is its PostgreSQL database.
	DatabaseURL string
	// Log is what the Unleash process wrote.
	Log *syncbuffer.Buffer
}

// installer installs Dir's npm packages for the tests.
var installer = npmci.New(Dir(), "flagadmin-unleash-npm-ci.lock", "the end-to-end tests run the real Unleash (unleash-server from npm)")

// Start starts an Unleash on a new database and waits until it answers
// GET /health; it stops, and the database is dropped, when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dsn := os.Getenv(dbtest.PostgresEnv)
	if dsn == "" {
		t.Skipf("%s is not set: Unleash runs on PostgreSQL", dbtest.PostgresEnv)
	}
	installer.Ensure(t)
	db, name := createDatabase(t, dsn)
	s := &Server{DatabaseURL: db, Log: &syncbuffer.Buffer{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command("node", "start.mjs", db, fmt.Sprint(port))
	cmd.Dir = Dir()
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	if err := cmd.Start(); err != nil {
		t.Fatalf("unleashserver: start node: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		dropDatabase(t, dsn, name)
	})
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case err := <-exited:
			t.Fatalf("unleashserver: Unleash exited at start (%v):\n%s", err, s.Log)
		default:
		}
		if status, _, err := s.call(http.MethodGet, "/health", nil); err == nil && status == http.StatusOK {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("unleashserver: Unleash did not answer /health within %s:\n%s", startTimeout, s.Log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Call sends a request to Unleash's API with the admin token, body (when
// not nil) as JSON, and returns the status and the body.
func (s *Server) Call(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	status, data, err := s.call(method, path, body)
	if err != nil {
		t.Fatalf("unleashserver: %s %s: %v", method, path, err)
	}
	return status, data
}

// Must calls as Call does and fails t unless the status is 2xx; it
// decodes the body into out when out is not nil.
func (s *Server) Must(t testing.TB, method, path string, body, out any) {
	t.Helper()
	status, data := s.Call(t, method, path, body)
	if status/100 != 2 {
		t.Fatalf("unleashserver: %s %s: %d %s", method, path, status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("unleashserver: %s %s: %v in %s", method, path, err, data)
		}
	}
}

func (s *Server) call(method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", AdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// createDatabase creates an empty database on the server of dsn and
// returns its URL and name.
func createDatabase(t testing.TB, dsn string) (string, string) {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "unleash_e2e_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("unleashserver: create database: %v", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String(), name
}

func dropDatabase(t testing.TB, dsn, name string) {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Error(err)
		return
	}
	defer admin.Close()
	if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("unleashserver: drop %s: %v", name, err)
	}
}
