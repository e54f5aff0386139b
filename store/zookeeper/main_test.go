//go:build unix

package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
)

// server is the standalone ZooKeeper TestMain starts for the whole package (each test uses a
// chroot of its own), and serverErr why there is none.
var (
	server    storecluster.Cluster
	serverErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leasehold-zk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	server, serverErr = storecluster.StartZooKeeper(ctx, dir, 1)
	cancel()
	if serverErr != nil && !errors.Is(serverErr, storecluster.ErrUnavailable) {
		fmt.Fprintln(os.Stderr, "cannot start ZooKeeper:", serverErr)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if server != nil {
		server.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverAddr returns the test server's client address, or skips the test (fails it when
// servers are required) when ZooKeeper is not installed.
func serverAddr(t testing.TB) string {
	t.Helper()
	if server == nil {
		testenv.Unavailable(t, "ZooKeeper is not installed ("+serverErr.Error()+"); install it with scripts/services")
	}
	return server.Members()[0].Addr
}

// newChroot returns a chroot no other test uses.
func newChroot() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "/leasehold-test/" + hex.EncodeToString(b)
}

// serverURL returns the test server's URL with a fresh chroot, and the chroot.
func serverURL(t testing.TB, params ...string) (string, string) {
	t.Helper()
	chroot := newChroot()
	raw := "zk://" + serverAddr(t) + chroot
	if len(params) > 0 {
		raw += "?" + strings.Join(params, "&")
	}
	return raw, chroot
}

// openTest opens a store on a fresh chroot, closed when the test ends.
func openTest(t testing.TB, params ...string) *Store {
	t.Helper()
	raw, _ := serverURL(t, params...)
	return openRaw(t, raw)
}

// openRaw opens raw, closed when the test ends.
func openRaw(t testing.TB, raw string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawConn opens a client of the test server of its own, for what the store does not do
// (writing foreign data, reading ACLs), closed when the test ends.
func rawConn(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(discard{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for range events {
		}
	})
	return c
}
