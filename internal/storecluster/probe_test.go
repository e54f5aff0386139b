//go:build unix

package storecluster

import (
	"context"
	"testing"
	"time"
)

// testQuorumProbe checks the Probe of a cluster of three members that elect a leader by
// majority: it answers while a majority runs, a paused member skipped, and fails once the
// cluster has lost its quorum, since a write then never commits.
func testQuorumProbe(t *testing.T, c Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, ok := c.(Prober)
	if !ok {
		t.Fatalf("the %s cluster is no Prober", c.Backend())
	}
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("Probe of a whole cluster: %v", err)
	}
	ms := c.Members()
	if err := ms[0].Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil { // another member leads if the paused one did
		t.Fatal(err)
	}
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("Probe with %s paused: %v", ms[0].Name, err)
	}
	if err := ms[1].Kill(); err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	defer pcancel()
	if err := p.Probe(pctx); err == nil {
		t.Fatalf("Probe with %s paused and %s killed, no quorum: no error", ms[0].Name, ms[1].Name)
	}
	if err := ms[0].Resume(); err != nil {
		t.Fatal(err)
	}
}
