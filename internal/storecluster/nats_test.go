//go:build unix

package storecluster

import (
	"context"
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
