// Package indexbuild describes the statements that make a table's indexes
// again once a bulk load has written its rows: the store drops the
// indexes before the rows and builds each once after them, which is far
// cheaper than keeping it current row by row.
package indexbuild

// Step is a statement run after a load, and what it does for a progress
// display ("" for nothing worth telling, such as setting a parameter).
//
// A step ByIDs has two placeholders in its SQL, the bounds of a range of
// event ids (above the first, up to the second): it is run over every
// event, one range at a time, so that its progress can be told.
type Step struct {
	SQL   string
	What  string
	ByIDs bool
}
