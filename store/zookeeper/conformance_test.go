//go:build unix

package zookeeper

import (
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// TestConformance runs the store suite (T1–T5, T7, T8) against a real ZooKeeper.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestLinearizable: one key as a compare-and-swap register, with 8 clients, each with a
// session of its own, and calls cut short by their deadlines (T1, T2, T7); see
// store/storetest/linearize.
func TestLinearizable(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	linearize.Run(t, func(t *testing.T) store.Store { return openRaw(t, raw) })
}

// TestRetryWhileConditionHolds: conditional patches whose condition holds succeed however
// often other writers move the znode's version, none lost (T2).
func TestRetryWhileConditionHolds(t *testing.T) {
	t.Parallel()
	storetest.RetryWhileConditionHolds(t, openTest(t))
}

// TestOpenByURL checks that importing the package registers the zk scheme (T4), with a second
// server that is down: the client uses the one that answers.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), "zk") {
		t.Fatalf("scheme zk is not registered: %v", store.Schemes())
	}
	raw, chroot := serverURL(t)
	raw = strings.Replace(raw, serverAddr(t), testenv.ClosedPort(t)+","+serverAddr(t), 1)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	zs, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open(%q) returned a %T", raw, s)
	}
	if zs.Chroot() != chroot {
		t.Errorf("chroot %q, want %q", zs.Chroot(), chroot)
	}
	if err := s.Create(t.Context(), "a/b", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := zs.Conn().Get(chroot + "/a%2Fb"); err != nil {
		t.Errorf("the record of key a/b is not the znode %s/a%%2Fb: %v", chroot, err)
	}
}

// TestWatchClosed: closing the store ends its watches with an error of their own (T8).
func TestWatchClosed(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WatchClosed(t, s)
}

// TestWatchMany: many watches on one session each see their own key (T8).
func TestWatchMany(t *testing.T) {
	t.Parallel()
	storetest.WatchMany(t, openTest(t), 20)
}
