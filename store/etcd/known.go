package etcd

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// knownMax bounds the values a client remembers: past it, it forgets them all and reads
// again, which costs one request per write and never a wrong answer.
const knownMax = 4096

// knownValues remembers, per key, the newest value this client saw with its revision (from a
// read, a write, a failed transaction or a watch), so that a conditional write can compare
// and swap on it without reading first. Nothing rests on it being current: every write it
// serves is a transaction on that revision.
type knownValues struct {
	mu sync.Mutex
	m  map[string]*mvccpb.KeyValue
}

func (c *knownValues) get(key string) (*mvccpb.KeyValue, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kv, ok := c.m[key]
	return kv, ok
}

// saw records the answer of a read or a watch of key: its value, or none.
func (c *knownValues) saw(key string, kvs []*mvccpb.KeyValue) {
	if len(kvs) == 0 {
		c.forget(key)
		return
	}
	c.put(key, kvs[0])
}

func (c *knownValues) wrote(key string, rev int64, value []byte) {
	c.put(key, &mvccpb.KeyValue{Key: []byte(key), Value: value, ModRevision: rev})
}

// put keeps kv unless a newer value of key is known: answers that cross on the way do not
// bring an older value back.
func (c *knownValues) put(key string, kv *mvccpb.KeyValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.m[key]
	if ok && old.ModRevision > kv.ModRevision {
		return
	}
	if c.m == nil || !ok && len(c.m) >= knownMax {
		c.m = make(map[string]*mvccpb.KeyValue)
	}
	c.m[key] = kv
}

func (c *knownValues) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}
