package cluster

import (
	"testing"

	"github.com/leasehold/leasehold/internal/leaseconf"
)

// The defaults users read here are the ones every constructor applies (internal/leaseconf).
func TestDefaultsAreLeaseconfs(t *testing.T) {
	if DefaultLeaseDuration != leaseconf.DefaultLeaseDuration || DefaultRenewInterval != leaseconf.DefaultRenewInterval ||
		DefaultLeaseName != leaseconf.DefaultLeaseName || MaxValueBytes != leaseconf.MaxValueBytes {
		t.Fatalf("cluster's defaults %v, %v, %q, %d; leaseconf applies %v, %v, %q, %d",
			DefaultLeaseDuration, DefaultRenewInterval, DefaultLeaseName, MaxValueBytes,
			leaseconf.DefaultLeaseDuration, leaseconf.DefaultRenewInterval, leaseconf.DefaultLeaseName, leaseconf.MaxValueBytes)
	}
}
