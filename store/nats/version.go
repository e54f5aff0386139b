package nats

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/store"
)

// minReplicatedVersion is the first nats-server release whose stream leader checks a write's
// expected last revision (Nats-Expected-Last-Subject-Sequence) when it applies the write, after
// the stream's replicas agreed on it. Earlier releases check it only before proposing the write
// to them, so two compare-and-swaps on one revision of a bucket with more than one replica can
// both succeed: two leaders at once. A bucket with one replica has no such window.
var minReplicatedVersion = [3]int{2, 9, 21}

// checkReplicas refuses a bucket with more than one replica on a server older than
// minReplicatedVersion. version is the server's, as it announces it ("2.9.10"); one that cannot
// be read is taken as current, as the servers that announce none are.
func checkReplicas(bucket string, replicas int, version string) error {
	if replicas <= 1 {
		return nil
	}
	v, ok := parseVersion(version)
	if !ok || !older(v, minReplicatedVersion) {
		return nil
	}
	return store.ConfigError(fmt.Errorf("store/nats: bucket %q has %d replicas on nats-server %s, "+
		"whose compare-and-swap on a replicated bucket can let two writers win: upgrade every server to %d.%d.%d or later (or use a bucket with one replica)",
		bucket, replicas, version, minReplicatedVersion[0], minReplicatedVersion[1], minReplicatedVersion[2]))
}

// parseVersion reads major.minor.patch from a server version such as "2.9.10" or
// "2.10.0-beta.3" (its pre-release part is ignored).
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	s, _, _ = strings.Cut(s, "-")
	s, _, _ = strings.Cut(s, "+")
	parts := strings.Split(strings.TrimPrefix(s, "v"), ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func older(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
