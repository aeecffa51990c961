//go:build !flagadmin_bench_noleaves

package bunstore

// keepLeaves is true in every build but the one that measures what the
// verifiable log costs the writes (leaves_unkept.go).
const keepLeaves = true
