//go:build unix

package storecluster

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// TestNATS: three servers meet; the stream of the URL's bucket, created with three replicas,
// has a leader that Failover replaces, by a step-down and by killing it; Restart brings the
// cluster back with a leader of the stream.
func TestNATS(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := StartNATS(ctx, t.TempDir(), 3)
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.URL(nil, map[string]string{"bucket": "b"})
	cfg := `{"name":"KV_b","subjects":["$KV.b.>"],"num_replicas":3,"storage":"file","max_msgs_per_subject":1}`
	if _, err := natsRequest(ctx, c.Members()[0].Addr, "$JS.API.STREAM.CREATE.KV_b", []byte(cfg)); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, loseWrites := range []bool{false, true} {
		if err := c.Failover(ctx, loseWrites); err != nil {
			t.Fatalf("Failover(%v): %v", loseWrites, err)
		}
		next, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if next == leader {
			t.Errorf("Failover(%v): %s still leads", loseWrites, next.Name)
		}
		for _, m := range c.Members() {
			if !m.Running() {
				t.Errorf("Failover(%v): %s is not running", loseWrites, m.Name)
			}
		}
		leader = next
	}
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	reply, err := natsRequest(ctx, c.Members()[2].Addr, "$JS.API.STREAM.INFO.KV_b", nil)
	if err != nil {
		t.Fatalf("after Restart: %v", err)
	}
	t.Logf("after Restart: %.80s", reply)
	if u := c.URL([]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, nil); u != "nats://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?bucket=leasehold&replicas="+strconv.Itoa(3) {
		t.Errorf("URL = %s", u)
	}
}

// Probe writes into the URL's bucket through every running member: it answers on a whole
// cluster and with a member paused once the stream has a leader again, and fails once the
// stream has lost its majority (a member paused, another killed): no write is acknowledged then.
func TestNATSProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := StartNATS(ctx, t.TempDir(), 3)
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, ok := c.(Prober)
	if !ok {
		t.Fatal("the NATS cluster is no Prober")
	}
	c.URL(nil, map[string]string{"bucket": "b"})
	cfg := `{"name":"KV_b","subjects":["$KV.b.>"],"num_replicas":3,"storage":"file","max_msgs_per_subject":1}`
	if _, err := natsRequest(ctx, c.Members()[0].Addr, "$JS.API.STREAM.CREATE.KV_b", []byte(cfg)); err != nil {
		t.Fatal(err)
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// answered waits until a probe answers: a stream leader elected a moment ago answers
	// nothing until it has applied its predecessor's writes.
	answered := func(what string) {
		t.Helper()
		var err error
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			err = p.Probe(pctx)
			pcancel()
			if err == nil {
				return
			}
		}
		t.Fatalf("Probe %s: %v", what, err)
	}
	answered("of a whole cluster")
	reply, err := natsRequest(ctx, leader.Addr, "$JS.API.STREAM.INFO.KV_b", nil)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		State struct {
			Msgs uint64 `json:"messages"`
		} `json:"state"`
	}
	if err := json.Unmarshal(reply, &info); err != nil || info.State.Msgs != 1 {
		t.Errorf("the stream holds %d messages after the probes (%v): want the probe key's one", info.State.Msgs, err)
	}

	ms := c.Members()
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.(*natsCluster).leaderOtherThan(ctx, leader); err != nil {
		t.Fatal(err)
	}
	answered("with the stream leader " + leader.Name + " paused")
	var other *Member
	for _, m := range ms {
		if m != leader {
			other = m
			break
		}
	}
	if err := other.Kill(); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	defer pcancel()
	if err := p.Probe(pctx); err == nil {
		t.Fatalf("Probe with %s paused and %s killed, no majority: no error", leader.Name, other.Name)
	}
	if err := leader.Resume(); err != nil {
		t.Fatal(err)
	}
}
