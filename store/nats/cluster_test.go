//go:build unix

package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/eventlog"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// startCluster starts three current nats-servers (storecluster.StartNATS), stopped when the
// test ends.
func startCluster(t *testing.T) storecluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := storecluster.StartNATS(ctx, t.TempDir(), 3)
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func uniqueBucket() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "leasehold_test_" + hex.EncodeToString(b)
}

// TestClusterLinearizable is TestLinearizable on a bucket with three replicas over three
// servers, each client connected to the servers in its own order: a read must see every write
// acknowledged before it, whichever server the client is connected to (T1, T2, T7). Reads by
// direct get, which any replica answers, failed it.
func TestClusterLinearizable(t *testing.T) {
	c := startCluster(t)
	raw := c.URL(nil, map[string]string{"bucket": uniqueBucket(), "reconnect_wait": "100ms"})
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestClusterServerDies: the leader instance and a follower are connected to the same server,
// not the bucket's stream leader, and that server is killed. Both reconnect to another server
// (the URL names all three): the leader renews there, at its next attempt, and nobody else
// leads; the follower's watch, which failed with the connection, is opened again and brings the
// renewals (E9). A call in flight when the connection is lost must end at once: waiting for its
// answer until its deadline, the leader missed E5's, (L+R)/2 after its last renewal.
func TestClusterServerDies(t *testing.T) {
	c := startCluster(t)
	raw := c.URL(nil, map[string]string{"bucket": uniqueBucket(), "reconnect_wait": "50ms"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	open := func() *Store {
		s, err := Open(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := open()
	server := a.b.conn.ConnectedServerName()
	var b *Store
	for range 50 { // the client picks one of the URL's servers at random
		b = open()
		if b.b.conn.ConnectedServerName() == server {
			break
		}
		b.Close()
		b = nil
	}
	if b == nil {
		t.Fatalf("no client of 50 connected to %s", server)
	}
	var victim *storecluster.Member
	for _, m := range c.Members() {
		if m.Name == server {
			victim = m
		}
	}
	if victim == nil {
		t.Fatalf("connected to %q, not a member", server)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader == victim {
		// A stream without a leader answers nothing for seconds: keep the election of a new
		// one out of this test.
		if err := c.Failover(ctx, false); err != nil {
			t.Fatal(err)
		}
	}

	rec := &eventlog.Log{}
	lease := "lease-" + uniqueBucket()
	start := func(s *Store, id string) *cluster.Elector {
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock:          cluster.NewStoreLock(s),
			LeaseName:     lease,
			LeaseDuration: 1500 * time.Millisecond,
			RenewInterval: 200 * time.Millisecond,
			InstanceID:    id,
			Logger:        slog.New(slog.DiscardHandler),
			Observer:      rec.Add,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Stop(context.Background()) })
		return e
	}
	ea := start(a, "a")
	rec.Wait(t, ctx, func(ev cluster.Event) bool { return ev.Instance == "a" && ev.Kind == cluster.BecameLeader })
	start(b, "b")
	rec.Wait(t, ctx, func(ev cluster.Event) bool { return ev.Instance == "b" && ev.Kind == cluster.WatchedChange })

	killed := time.Now()
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	renewed := rec.Wait(t, ctx, func(ev cluster.Event) bool {
		return ev.Instance == "a" && ev.Kind == cluster.AttemptSucceeded && ev.Time.After(killed) && ev.Holder == "a"
	})
	watched := rec.Wait(t, ctx, func(ev cluster.Event) bool {
		return ev.Instance == "b" && ev.Kind == cluster.WatchedChange && ev.Time.After(killed)
	})
	t.Logf("server %s killed: the leader renewed %v later, the follower's watch brought a renewal %v later",
		server, renewed.Time.Sub(killed).Round(time.Millisecond), watched.Time.Sub(killed).Round(time.Millisecond))
	if now := a.b.conn.ConnectedServerName(); now == server {
		t.Errorf("the leader's client is still on %s", now)
	}
	// An attempt the kill cut short fails, and a leader whose attempt fails stops leading (E4);
	// its next attempt, through another server, takes the lease it still holds back. Any other
	// end of its leadership, or another leader, is a failure.
	for _, ev := range rec.All() {
		switch {
		case ev.Kind == cluster.AttemptFailed:
			t.Logf("%s: attempt failed %v after the kill: %v", ev.Instance, ev.Time.Sub(killed).Round(time.Millisecond), ev.Err)
		case ev.Kind == cluster.BecameLeader && ev.Instance != "a":
			t.Errorf("%s became leader: the leader's renewals should have gone on through another server", ev.Instance)
		case ev.Kind == cluster.StoppedLeading && ev.Reason != cluster.ReasonError:
			t.Errorf("a stopped leading (%s, %v): its renewals should have gone on through another server", ev.Reason, ev.Err)
		case ev.Kind == cluster.StoppedLeading:
			back := rec.Wait(t, ctx, func(b cluster.Event) bool {
				return b.Instance == "a" && b.Kind == cluster.BecameLeader && b.Time.After(ev.Time)
			})
			t.Logf("a stopped leading on the attempt the kill cut (E4), and led again %v after the kill",
				back.Time.Sub(killed).Round(time.Millisecond))
		}
	}
	if !ea.IsLeader() {
		t.Error("a does not lead after its server died")
	}
}

// oldNATSServer is the packaged nats-server, older than 2.9.21 on this machine's distribution.
const oldNATSServer = "/usr/sbin/nats-server"

// TestClusterOldServerRefused: on servers older than 2.9.21 a bucket with three replicas is
// refused with a configuration error that says what to do, whether the store would create it
// or finds it; one replica is accepted.
func TestClusterOldServerRefused(t *testing.T) {
	if _, err := os.Stat(oldNATSServer); err != nil {
		testenv.Unavailable(t, "no packaged nats-server: "+err.Error())
	}
	v, err := storecluster.NATSServerVersion(oldNATSServer)
	if err != nil {
		t.Fatal(err)
	}
	if !older(v, minReplicatedVersion) {
		testenv.Unavailable(t, oldNATSServer+" is not older than 2.9.21")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := storecluster.StartNATSBinary(ctx, oldNATSServer, t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	refused := func(t *testing.T, err error, bucket string) {
		t.Helper()
		if !errors.Is(err, store.ErrConfig) {
			t.Fatalf("err = %v, want a configuration error", err)
		}
		for _, want := range []string{bucket, "3 replicas", "2.9.", "upgrade every server to 2.9.21 or later"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}

	t.Run("create", func(t *testing.T) {
		bucket := uniqueBucket()
		_, err := Open(ctx, c.URL(nil, map[string]string{"bucket": bucket, "replicas": "3"}))
		refused(t, err, bucket)
	})
	t.Run("existing", func(t *testing.T) {
		bucket := uniqueBucket()
		s, err := Open(ctx, c.URL(nil, map[string]string{"bucket": bucket, "replicas": "1"}))
		if err != nil {
			t.Fatalf("one replica: %v", err)
		}
		defer s.Close()
		if err := s.Create(ctx, "k", map[string]any{"v": 1.0}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.JetStream().CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket + "_r3", Replicas: 3}); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, c.URL(nil, map[string]string{"bucket": bucket + "_r3", "replicas": "1"}))
		refused(t, err, bucket+"_r3")
	})
}

// TestClusterWatchConsumerSilent: the server of the watch's consumer (an ordered consumer has
// one replica, on any server) is paused, while the watch's connection is to another server,
// which answers every flush. A write acknowledged meanwhile does not reach the watch, and the
// watch must not prove itself alive by heartbeats while it does not: a follower that trusts
// them does not read, and learned the leader's renewals, after a server was killed and started
// again, only once per L from its own reads. The watch ends with an error instead, once its
// consumer has been behind the stream for pingTimeout, or brings the write; at most the
// heartbeat under way at the write passes.
func TestClusterWatchConsumerSilent(t *testing.T) {
	c := startCluster(t)
	raw := c.URL(nil, map[string]string{"bucket": uniqueBucket()})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	w, err := Open(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	// A new replicated bucket's stream may not answer until it has a leader ("no response from
	// stream" on a loaded machine): the first write is made again until it is answered. A
	// retried write whose first answer was lost may find the key: the bucket is this test's.
	for {
		err := w.Create(ctx, "k", map[string]any{"n": 1})
		if err == nil || errors.Is(err, store.ErrExists) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		t.Logf("the first write: %v; writing again", err)
		time.Sleep(100 * time.Millisecond)
	}

	type call struct {
		change store.Change
		at     time.Time
		end    error
	}
	var (
		s      *Store
		calls  chan call
		victim *storecluster.Member
	)
	for range 20 { // the consumer lands on any server: until it is not the connection's
		s, err = Open(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		s.b.watches.pingTimeout = time.Second
		calls = make(chan call, 1024)
		go func(s *Store, calls chan call) {
			err := store.Watch(store.WithHeartbeat(ctx, 20*time.Millisecond), s, "k", func(ch store.Change) { calls <- call{change: ch, at: time.Now()} })
			calls <- call{end: err}
		}(s, calls)
		if first := <-calls; first.end != nil {
			t.Fatal(first.end)
		}
		var server string
		l := s.b.stream.ListConsumers(ctx)
		for info := range l.Info() {
			if info.Cluster != nil {
				server = info.Cluster.Leader
			}
		}
		if l.Err() != nil {
			t.Fatal(l.Err())
		}
		if server != "" && server != s.b.conn.ConnectedServerName() {
			for _, m := range c.Members() {
				if m.Name == server {
					victim = m
				}
			}
			break
		}
		s.Close()
	}
	if victim == nil {
		t.Fatal("no watch of 20 had its consumer on another server than its connection's")
	}
	t.Cleanup(func() { s.Close() })
	if leader, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	} else if leader == victim {
		// Keep the election of a new stream leader out of the write's time.
		if err := c.Failover(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := victim.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Resume() })
	// Through the watch's own connection: not to the paused server.
	if err := s.Patch(ctx, "k", map[string]any{"n": 2}, nil); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	beats := 0
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("neither the write nor the watch's end came: %v", ctx.Err())
		case got := <-calls:
			switch {
			case got.end != nil:
				t.Logf("the watch ended with its consumer on %s paused: %v", victim.Name, got.end)
				return
			case got.change.Heartbeat && got.at.After(acked):
				if beats++; beats > 1 {
					t.Fatalf("%d heartbeats after the write, which the watch did not bring: its consumer on %s is paused", beats, victim.Name)
				}
			case got.change.Found && got.change.Doc["n"] == float64(2):
				t.Logf("the watch brought the write with its consumer's server %s paused (%d heartbeats before)", victim.Name, beats)
				return
			}
		}
	}
}
