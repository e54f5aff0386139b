//go:build unix

package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestNotJSON checks that a znode holding data this store did not write is an error naming the
// key, for every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	c := rawConn(t, serverAddr(t))
	for i, raw := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, "42"} {
		key := fmt.Sprintf("bad:%d", i)
		if _, err := c.Create(s.Path(key), []byte(raw), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		data, _, err := c.Get(s.Path(key))
		if err != nil || string(data) != raw {
			t.Errorf("%q holding %q changed: %q (%v)", key, raw, data, err)
		}
	}
}

// TestDeleteKeepsTheVersion: a deleted record leaves its znode, emptied, and a record created
// again there goes on from its version; a write based on a version read before the deletion
// fails. An empty znode someone else made reads as no record.
func TestDeleteKeepsTheVersion(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	_, before, err := s.Conn().Get(s.Path("k"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "k", map[string]any{"n": 2}); err != nil {
		t.Fatal(err)
	}
	data, after, err := s.Conn().Get(s.Path("k"))
	if err != nil || string(data) != `{"n":2}` || after.Version != before.Version+2 {
		t.Fatalf("after delete and create: %q version %d (%v); want {\"n\":2} at version %d", data, after.Version, err, before.Version+2)
	}
	if _, err := s.Conn().Set(s.Path("k"), []byte(`{"n":3}`), before.Version); !errors.Is(err, zk.ErrBadVersion) {
		t.Errorf("a write on the version read before the deletion: %v, want a version conflict", err)
	}
	c := rawConn(t, serverAddr(t))
	if _, err := c.Create(s.Path("empty"), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "empty"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an empty znode: %v, want ErrNotFound", err)
	}
	if err := s.Create(ctx, "empty", map[string]any{"a": 1}); err != nil {
		t.Errorf("Create on an empty znode: %v", err)
	}
}

// TestBadURL checks the errors for malformed URLs and parameters: they name the problem and
// never the password.
func TestBadURL(t *testing.T) {
	t.Setenv("LH_ZK_EMPTY", "")
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"zk://u:hunter2secret@127.0.0.1:2181/x":                              "password",
		"zk://127.0.0.1:2181/x?bogus=1":                                      "bogus",
		"zk://127.0.0.1:2181/x?session_timeout=soon":                         "session_timeout",
		"zk://127.0.0.1:2181/x?session_timeout=-1s":                          "session_timeout",
		"zk://127.0.0.1:2181/x?dial_timeout=0":                               "dial_timeout",
		"zk://127.0.0.1:2181/x?tls=maybe":                                    "tls",
		"zk://127.0.0.1:2181/x?acl=everyone":                                 "acl",
		"zk://127.0.0.1:2181/x?acl=creator":                                  "digest credentials",
		"zk://,127.0.0.1:2181/x":                                             "empty server",
		"zk:///x":                                                            "no server",
		"zk://127.0.0.1:2181/a//b":                                           "path",
		"zk://127.0.0.1:2181/a/../b":                                         "path",
		"zk://127.0.0.1:2181/zookeeper/x":                                    "/zookeeper",
		"zk://127.0.0.1:2181/a%01b":                                          "character",
		"zk://u@127.0.0.1:2181/x":                                            "no password",
		"zk://127.0.0.1:2181/x?password_env=LH_ZK_PW":                        "user name",
		"zk://u@127.0.0.1:2181/x?password_env=1BAD":                          "password_env",
		"zk://u@127.0.0.1:2181/x?password_env=LH_ZK_EMPTY":                   "LH_ZK_EMPTY",
		"zk://u@127.0.0.1:2181/x?password_env=LH_ZK_NO_SUCH":                 "LH_ZK_NO_SUCH",
		"zk://u@127.0.0.1:2181/x?password_file=/no/such/file":                "password_file",
		"zk://u@127.0.0.1:2181/x?password_file=/no/such/file&password_env=X": "password_file",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestUnreachable checks that Open fails by its deadline when no server answers, naming the
// server.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	addr := testenv.ClosedPort(t)
	start := time.Now()
	_, err := store.Open(ctx, "zk://"+addr+"/x")
	if err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
	t.Logf("error after %v: %v", time.Since(start), err)
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("the error does not name the server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open on a closed port took %v with a 2s deadline", d)
	}
}

// TestDigestACL: with acl=creator, the chroot and the records are readable and writable by
// the URL's digest user only: a client without credentials, or with another user's, is
// refused, and a store of another user fails at Open, naming the chroot, as a configuration
// error. The password comes from a file or from an environment variable, and no error shows
// it.
func TestDigestACL(t *testing.T) {
	const password = "hunter2secret"
	t.Setenv("LH_ZK_PASSWORD", password)
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A chroot of its own from the root: the znodes it creates are alice's only.
	chroot := strings.Replace(newChroot(), "/leasehold-test/", "/leasehold-acl-", 1)
	base := "zk://alice@" + serverAddr(t) + chroot + "?acl=creator&"
	s := openRaw(t, base+"password_env=LH_ZK_PASSWORD")
	if err := s.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	// The same user with the password from a file.
	s2 := openRaw(t, base+"password_file="+file)
	if _, err := s2.Get(t.Context(), "k"); err != nil {
		t.Errorf("Get by the same user, password from a file: %v", err)
	}
	acl, _, err := s.Conn().GetACL(s.Path("k"))
	if err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "alice:") || acl[0].Perms != zk.PermAll {
		t.Errorf("ACL of the record: %+v (%v), want alice's digest with every permission", acl, err)
	}
	c := rawConn(t, serverAddr(t))
	if _, _, err := c.Get(s.Path("k")); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("Get without credentials: %v, want ErrNoAuth", err)
	}
	t.Setenv("LH_ZK_OTHER", "otherpassword")
	_, err = Open(t.Context(), "zk://bob@"+serverAddr(t)+chroot+"?password_env=LH_ZK_OTHER")
	if err == nil || !errors.Is(err, store.ErrConfig) || !strings.Contains(err.Error(), chroot) {
		t.Errorf("Open by another user: %v, want a configuration error naming the chroot", err)
	}
	if err != nil && strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}
}
