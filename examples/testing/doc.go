// Package testingexample shows how to test code that talks to flagadmin
// without a database: load a known world from a seed file
// (testdata/seed.json) into the in-memory store, then assert on what the
// Service returns. See example_test.go; it runs with go test ./...
package testingexample
