package main

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// A follower whose watch is healthy sends no attempts (E9): /healthz must count the changes its
// watch brings as the store answering, or every follower turns unhealthy L after its last
// attempt while the election works.
func TestHealthzFollowerOnAWatch(t *testing.T) {
	t0 := time.Now()
	v := &electionView{lease: "l", id: "b", l: time.Second, r: 250 * time.Millisecond, elector: func() *cluster.Elector { return nil }, started: t0}
	v.observe(cluster.Event{Kind: cluster.AttemptSucceeded, Holder: "a", Time: t0})
	for i := 1; i <= 20; i++ {
		v.observe(cluster.Event{Kind: cluster.WatchedChange, Holder: "a", Term: 1, Time: t0.Add(time.Duration(i) * 250 * time.Millisecond)})
	}
	if err := v.healthy(t0.Add(5*time.Second + 100*time.Millisecond)); err != nil {
		t.Fatalf("a follower hearing every renewal through its watch: %v; want healthy", err)
	}
	// With neither attempts nor changes for more than L, it is unhealthy, as before.
	if err := v.healthy(t0.Add(7 * time.Second)); err == nil {
		t.Fatal("no attempt and no change for 2s with L = 1s: healthy; want unhealthy")
	}
}
