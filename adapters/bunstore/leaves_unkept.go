//go:build flagadmin_bench_noleaves

package bunstore

// keepLeaves is false in the build tagged flagadmin_bench_noleaves, which
// writes events without their leaves: the side of scripts/bench-log.sh's
// A/B without the log, so that the two sides differ in nothing else. Its
// log does not verify; it is never a build to run.
const keepLeaves = false
