// Package faulttest holds the fault-injection tests of the server: the
// real HTTP handler (httpapi) over a bunstore.Store whose database sits
// behind a faultproxy that stalls or cuts its connections, under
// concurrent reads and writes. It has no code of its own besides tests.
package faulttest
