//go:build race

package main

// raceBuild makes the binary under test race-instrumented when the tests
// are, so the signal path is checked by the race detector too.
const raceBuild = true
