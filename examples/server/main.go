// Server shows the flagadmin server wired by hand with net/http, without
// fx: a bunstore database (SQLite by default), the flagadmin.Service, the
// httpapi handler with the live event stream (one eventfeed.Feed reading
// the store) and an http.Server with timeouts, stopped gracefully on
// SIGINT or SIGTERM. On first start it creates an admin token and prints it.
//
//	go run ./examples/server -addr 127.0.0.1:4243 -db sqlite:example.db
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flagadmin/flagadmin/adapters/bunstore"
	"github.com/flagadmin/flagadmin/adapters/eventfeed"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
	"github.com/flagadmin/flagadmin/flagadmin"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4243", "address to listen on")
	db := flag.String("db", "sqlite:example.db", "database URL: sqlite:PATH, postgres://... or mysql://...")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*addr, *db, log); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// dbTimeout is the storage deadline of a request.
const dbTimeout = 5 * time.Second

func run(addr, db string, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The store: opened and migrated to the current schema. Each of its
	// operations may take at most dbTimeout (pool wait, statements, locks).
	store, err := bunstore.Open(ctx, db, bunstore.WithLogger(log), bunstore.WithTimeout(dbTimeout))
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer store.Close()

	// The service, and a first admin token when the store has none.
	svc := flagadmin.NewService(store)
	secret, created, err := svc.EnsureAdminToken(ctx)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintln(os.Stderr, "admin token (shown once):", secret)
	}

	// The HTTP server: listen first, so a busy port is an error right away.
	// Each request's storage work ends within dbTimeout, answered 503 if
	// the database did not answer: a stalled database never holds a
	// request, nor the graceful stop below.
	// The live stream (GET /api/admin/events/stream): one reader of the
	// event log for every stream, running until the server stops.
	feed := eventfeed.New(store, eventfeed.Options{Logger: log})
	feedCtx, stopFeed := context.WithCancel(context.Background())
	defer stopFeed()
	go feed.Run(feedCtx)
	api := httpapi.New(svc, httpapi.Config{Logger: log, Version: "example", StorageTimeout: dbTimeout, Feed: feed})
	srv := &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	// Shutdown waits for handlers: live streams end when it begins.
	srv.RegisterOnShutdown(api.EndStreams)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("listening", "addr", "http://"+ln.Addr().String())

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	// Graceful stop: in-flight requests get 30 seconds to finish.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
