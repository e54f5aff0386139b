package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// BenchmarkIsLeader: the lock-free read every caller of IsLeader pays (target: under 20 ns,
// no allocation).
func BenchmarkIsLeader(b *testing.B) {
	e, err := NewElector(ElectorConfig{Lock: NewStoreLock(memory.New()), Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	e.leading.Store(&leadership{term: 1, deadline: time.Now().Add(time.Hour)})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !e.IsLeader() {
				b.Fatal("not leader")
			}
		}
	})
}

// BenchmarkRenewal: one renewal attempt as the leader makes it, a conditional write on the
// revision it holds without reading first (E10), over the memory store (target: under 5 µs).
func BenchmarkRenewal(b *testing.B) {
	e, err := NewElector(ElectorConfig{Lock: NewStoreLock(memory.New()), InstanceID: "a", Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	out := e.try(ctx, observation{}, nil, false, false)
	if out.kind != held {
		b.Fatalf("first attempt: %+v", out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if out = e.try(ctx, observation{}, &out.rec, true, false); out.kind != held {
			b.Fatalf("renewal: %+v", out)
		}
	}
}
