package etcd

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/store"
)

// countingKV counts the reads and the transactions of a client.
type countingKV struct {
	clientv3.KV
	gets, txns *atomic.Int64
}

func (c countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	c.gets.Add(1)
	return c.KV.Get(ctx, key, opts...)
}

func (c countingKV) Txn(ctx context.Context) clientv3.Txn {
	c.txns.Add(1)
	return c.KV.Txn(ctx)
}

type counted struct {
	*Store
	gets, txns atomic.Int64
}

func (c *counted) calls() [2]int64 { return [2]int64{c.gets.Swap(0), c.txns.Swap(0)} }

// openPair opens two stores on one prefix, as two processes would, each counting its calls.
func openPair(t *testing.T) (*counted, *counted) {
	t.Helper()
	raw, _ := serverURL(t)
	open := func() *counted {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		c := &counted{Store: s}
		s.b.client.KV = countingKV{KV: s.b.client.KV, gets: &c.gets, txns: &c.txns}
		return c
	}
	a, b := open(), open()
	t.Cleanup(func() {
		if _, err := a.Client().Delete(context.Background(), a.Prefix(), clientv3.WithPrefix()); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	})
	return a, b
}

func rev(v string) *store.Condition { return &store.Condition{Field: "revision", Value: v} }

// A conditional write on a value this client wrote, read or was sent by its watch is one
// transaction, with no read before it; a value changed by another client since costs the
// transaction that fails and returns it, and the answers stay those of a read-then-write.
func TestWriteOnKnownValue(t *testing.T) {
	ctx := t.Context()
	a, b := openPair(t)
	want := func(s *counted, who string, gets, txns int64) {
		t.Helper()
		if got := s.calls(); got != [2]int64{gets, txns} {
			t.Fatalf("%s's reads and transactions: %v; want [%d %d]", who, got, gets, txns)
		}
	}
	if err := a.Create(ctx, "k", map[string]any{"revision": "1"}); err != nil {
		t.Fatal(err)
	}
	want(a, "a", 0, 1)
	if err := a.Patch(ctx, "k", map[string]any{"revision": "2"}, rev("1")); err != nil {
		t.Fatal(err) // on its own write
	}
	want(a, "a", 0, 1)

	if _, err := b.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	b.calls()
	if err := b.Patch(ctx, "k", map[string]any{"revision": "3"}, rev("2")); err != nil {
		t.Fatal(err) // on what it read
	}
	want(b, "b", 0, 1)

	// a's value is stale: its write fails, the failed transaction brings revision 3.
	if err := a.Patch(ctx, "k", map[string]any{"revision": "9"}, rev("2")); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("write on a stale condition: %v; want ErrConditionFailed", err)
	}
	want(a, "a", 0, 1)
	if err := a.Patch(ctx, "k", map[string]any{"revision": "4"}, rev("3")); err != nil {
		t.Fatal(err)
	}
	want(a, "a", 0, 1)

	// b's value (3) is stale and fails the condition it is given: it reads before answering.
	if err := b.Patch(ctx, "k", map[string]any{"revision": "5"}, rev("4")); err != nil {
		t.Fatalf("write on the current condition, over a stale value: %v", err)
	}
	want(b, "b", 1, 1)

	// A value the watch sent is as good as a read.
	r := watch(t, b.Store, "k")
	<-r.calls
	b.calls()
	if err := a.Patch(ctx, "k", map[string]any{"revision": "6"}, rev("5")); err != nil {
		t.Fatal(err)
	}
	if c := <-r.calls; c.Doc["revision"] != "6" {
		t.Fatalf("watch: %+v; want revision 6", c)
	}
	if err := b.Patch(ctx, "k", map[string]any{"revision": "7"}, rev("6")); err != nil {
		t.Fatal(err)
	}
	want(b, "b", 0, 1)

	// Deleted by another client: the write on a's value finds nothing.
	if err := b.Delete(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	a.calls()
	if err := a.Patch(ctx, "k", map[string]any{"revision": "8"}, rev("7")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("write on a deleted key: %v; want ErrNotFound", err)
	}
}

// A restored etcd whose revisions were not bumped can give a key's revision to another value
// than the one this client remembers with it. The transaction compares the value too, so a
// write decided on the remembered value fails and reads, and the condition is checked on
// what is stored (B1).
func TestWriteOnKnownValueOfARepeatedRevision(t *testing.T) {
	ctx := t.Context()
	a, _ := openPair(t)
	if err := a.Create(ctx, "k", map[string]any{"revision": "1"}); err != nil {
		t.Fatal(err)
	}
	k := a.Prefix() + "k"
	resp, err := a.Client().Get(ctx, k)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get: %v, %v", resp, err)
	}
	// The value remembered under the stored revision is another one, as after such a restore.
	kv := resp.Kvs[0]
	a.b.known.m[k] = &mvccpb.KeyValue{Key: kv.Key, Value: []byte(`{"revision":"0"}`), ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision, Version: kv.Version}

	err = a.Patch(ctx, "k", map[string]any{"revision": "2"}, rev("0"))
	if !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("a write conditioned on the remembered value: %v; want ErrConditionFailed", err)
	}
	doc, err := a.Get(ctx, "k")
	if err != nil || doc["revision"] != "1" {
		t.Fatalf("the stored document: %v, %v; want revision 1 kept", doc, err)
	}
}
