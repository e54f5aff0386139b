//go:build unix

package zookeeper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
)

// TestTLS: a server serving TLS and requiring a client certificate from the test authority:
// the store works over TLS with the authority and a client certificate; without the
// certificate, with another authority, or without TLS on the TLS port, Open fails.
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper server")
	}
	certs := testcerts.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := storecluster.StartZooKeeperTLS(ctx, t.TempDir(), 1, &storecluster.ZooKeeperTLS{
		Cert: certs.ServerCert, Key: certs.ServerKey, CA: certs.CA, ClientAuth: true,
	})
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	addr := c.(*storecluster.ZooKeeperCluster).SecureAddrs()[0]
	base := "zk://" + addr + newChroot() + "?dial_timeout=3s&"
	s := openRaw(t, base+"ca="+certs.CA+"&cert="+certs.ClientCert+"&key="+certs.ClientKey)
	if err := s.Create(ctx, "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.Get(ctx, "k"); err != nil || doc["a"] != float64(1) {
		t.Fatalf("Get over TLS: %v, %v", doc, err)
	}
	for name, c := range map[string]struct{ raw, want string }{
		"no client certificate": {base + "ca=" + certs.CA, `"cert"`},
		"another authority":     {base + "ca=" + certs.OtherCA + "&cert=" + certs.ClientCert + "&key=" + certs.ClientKey, `"ca"`},
		"no TLS":                {strings.TrimSuffix(base, "&"), "no session"},
	} {
		octx, ocancel := context.WithTimeout(ctx, 3*time.Second)
		s, err := store.Open(octx, c.raw)
		ocancel()
		if err == nil {
			store.Close(s)
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		t.Logf("%s: %v", name, err)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: the error does not say %s: %v", name, c.want, err)
		}
	}
}
