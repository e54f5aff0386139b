//go:build race

package main

// raceEnabled makes TestMain build the binary with -race too, so that the black-box tests
// check the command itself for data races.
const raceEnabled = true
