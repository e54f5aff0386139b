package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
)

// DefaultInstanceID returns "<HOSTNAME or os.Hostname()>-<pid>-<random>": unique per process,
// and readable in logs and in the lease record. It is the default of every InstanceID here; a
// program calls it to know the identity before it starts an election, to log it or to give
// several elections the same one.
func DefaultInstanceID() string {
	host := os.Getenv("HOSTNAME")
	if host == "" {
		host, _ = os.Hostname()
	}
	if host == "" {
		host = "localhost"
	}
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}
