package redis

import (
	"context"
	"fmt"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store/driver"
)

// Pipelining of writes. Every write is one script (EVALSHA), and one process renewing
// thousands of leases every R spends its CPU on the client's per-command cost (a round trip,
// its syscalls, a pooled connection), not on the server: at 10,000 leases one EVALSHA at a
// time reached three quarters of the writes needed. So a Store coalesces its concurrent writes
// into pipelines (driver.Batcher says when): a write finding a free slot and an empty queue is
// sent alone, as before; the writes that queued meanwhile go as one pipeline, one write and
// one read of the connection for all of them.
//
// A pipeline is not a transaction: Redis runs its commands one after the other, each script
// atomically, and answers each on its own, so each caller gets its own true answer, in the
// order of arrival (the queue's, which a pipeline keeps: two writes of one key run in their
// order). A command refused with NOSCRIPT did not run: the script is loaded and the command
// sent again, alone. A connection that fails, or a context that ends, leaves the outcome of
// every command not yet answered unknown, and go-redis gives each that error.

// maxPipeline bounds a pipeline's commands, so that its replies stay of a reasonable size.
const maxPipeline = 2000

// redisWrite is one write: a script on one key.
type redisWrite struct {
	script *luaScript
	key    string // the Redis key
	args   []any
}

func newBatcher(client goredis.UniversalClient, pool int, wait waitRule) *driver.Batcher[redisWrite, *goredis.Cmd] {
	// Fewer in flight than the pool's connections, so that reads (Gets, watches' syncs) always
	// find one; few, so that under load the writes queue and go as pipelines of many. On two
	// cores, 10,000 leases renewing every 500 ms, 8 gave attempts a p50 of 14 ms against 23 ms
	// with 2 and 60 ms with 4, at the same CPU (single runs, bench's many elections).
	n := pool / 2
	b := &driver.Batcher[redisWrite, *goredis.Cmd]{
		MaxInFlight: max(1, min(n, 8)),
		MaxBatch:    maxPipeline,
		Key:         func(w redisWrite) string { return w.key },
		Closed:      errStoreClosed,
		Name:        "store/redis",
	}
	b.Lone = func(ctx context.Context, w redisWrite) *goredis.Cmd {
		return runOne(ctx, client, w, wait)
	}
	b.Send = func(ctx context.Context, ws []redisWrite) []*goredis.Cmd {
		return sendPipeline(ctx, client, ws, wait)
	}
	return b
}

// write runs script on key, alone or in a pipeline, and returns its reply.
func (s *backend) write(ctx context.Context, script *luaScript, key string, args ...any) *goredis.Cmd {
	cmd, err := s.batch.Do(ctx, redisWrite{script: script, key: key, args: args})
	if err != nil {
		cmd = goredis.NewCmd(ctx)
		cmd.SetErr(err)
	}
	s.lookAgain(cmd.Err()) // reroute.go
	return cmd
}

// runOne runs w alone: EVALSHA, then the whole script (EVAL) if the server does not know it;
// each followed by WAIT, in the same round trip, when the URL asks for replicas (wait.go).
func runOne(ctx context.Context, client goredis.UniversalClient, w redisWrite, wait waitRule) *goredis.Cmd {
	if wait.replicas > 0 {
		if cc, ok := client.(*goredis.ClusterClient); ok {
			// WAIT counts the replicas of the connection's server: it goes to the key's
			// primary, on the same connection as the write (wait.go).
			node, err := cc.MasterForKey(ctx, w.key)
			if err != nil {
				cmd := goredis.NewCmd(ctx)
				cmd.SetErr(fmt.Errorf("store/redis: the node of key %q: %w", w.key, err))
				return cmd
			}
			client = node
		}
		cmd := sendWaited(ctx, client, w, wait, false)
		if goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmd = sendWaited(ctx, client, w, wait, true)
		}
		return cmd
	}
	cmd := w.script.cmd(ctx, false, w.key, w.args)
	_ = client.Process(ctx, noRetry{cmd})
	if goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = w.script.cmd(ctx, true, w.key, w.args)
		_ = client.Process(ctx, noRetry{cmd})
	}
	return cmd
}

// sendWaited sends w's script (by its hash, or whole) and WAIT as one pipeline.
func sendWaited(ctx context.Context, client goredis.UniversalClient, w redisWrite, wait waitRule, whole bool) *goredis.Cmd {
	pipe := client.Pipeline()
	cmd := w.script.cmd(ctx, whole, w.key, w.args)
	_ = pipe.Process(ctx, noRetry{cmd})
	wc := wait.send(ctx, pipe)
	_, _ = pipe.Exec(ctx)
	wait.checkReplicated(wc, cmd)
	return cmd
}

// sendPipeline sends ws as one pipeline, followed by one WAIT for them all when the URL asks
// for replicas; a batch of one is a lone write. On a cluster, go-redis splits the pipeline by
// node; with a WAIT, the store does, so that each node's part ends with its own WAIT.
func sendPipeline(ctx context.Context, client goredis.UniversalClient, ws []redisWrite, wait waitRule) []*goredis.Cmd {
	if len(ws) == 1 {
		return []*goredis.Cmd{runOne(ctx, client, ws[0], wait)}
	}
	cmds := make([]*goredis.Cmd, len(ws))
	if cc, ok := client.(*goredis.ClusterClient); ok && wait.replicas > 0 {
		sendPerNode(ctx, cc, ws, cmds, wait)
	} else {
		sendOn(ctx, client, ws, cmds, wait)
	}
	rerunNoScript(ctx, client, ws, cmds, wait)
	return cmds
}

// sendOn sends ws on client as one pipeline, their replies in cmds.
func sendOn(ctx context.Context, client goredis.UniversalClient, ws []redisWrite, cmds []*goredis.Cmd, wait waitRule) {
	pipe := client.Pipeline()
	for i, w := range ws {
		cmds[i] = w.script.cmd(ctx, false, w.key, w.args)
		_ = pipe.Process(ctx, noRetry{cmds[i]})
	}
	var wc *goredis.Cmd
	if wait.replicas > 0 {
		wc = wait.send(ctx, pipe)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own reply or error
	if wc != nil {
		wait.checkReplicated(wc, cmds...)
	}
}

// sendPerNode sends ws as one pipeline to each primary that owns some of their keys, all at
// once, each followed by its WAIT. A key whose slot has moved since is answered MOVED: its
// write did not run, and fails (the client learns the new owner meanwhile).
func sendPerNode(ctx context.Context, cc *goredis.ClusterClient, ws []redisWrite, cmds []*goredis.Cmd, wait waitRule) {
	type part struct {
		node *goredis.Client
		idx  []int
	}
	parts := map[string]*part{}
	for i, w := range ws {
		node, err := cc.MasterForKey(ctx, w.key)
		if err != nil {
			cmds[i] = goredis.NewCmd(ctx)
			cmds[i].SetErr(fmt.Errorf("store/redis: the node of key %q: %w", w.key, err))
			continue
		}
		addr := node.Options().Addr
		if parts[addr] == nil {
			parts[addr] = &part{node: node}
		}
		parts[addr].idx = append(parts[addr].idx, i)
	}
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			sub := make([]redisWrite, len(p.idx))
			out := make([]*goredis.Cmd, len(p.idx))
			for j, i := range p.idx {
				sub[j] = ws[i]
			}
			sendOn(ctx, p.node, sub, out, wait)
			for j, i := range p.idx {
				cmds[i] = out[j]
			}
		})
	}
	wg.Wait()
}

// rerunNoScript sends again, alone and in order, the commands of a pipeline that failed with
// NOSCRIPT (a SCRIPT FLUSH, a restarted server): they did not run. A command followed in the
// pipeline by a write of its key that did not fail so keeps its NOSCRIPT error instead: run
// now, it would come after that write, against the order of arrival. The error is true (the
// write was not made); only a script cache emptied or filled in the middle of a pipeline, or
// holding one of the two scripts and not the other, leads there.
func rerunNoScript(ctx context.Context, client goredis.UniversalClient, ws []redisWrite, cmds []*goredis.Cmd, wait waitRule) {
	noScript := func(i int) bool { return goredis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") }
	for i := range cmds {
		if !noScript(i) || ranLater(ws, i, noScript) {
			continue
		}
		// runOne sends the script whole if its server does not know it.
		cmds[i] = runOne(ctx, client, ws[i], wait)
	}
}

// ranLater reports whether a write after ws[i] in its pipeline, of the same key, did not fail
// with NOSCRIPT (it ran, or may have).
func ranLater(ws []redisWrite, i int, noScript func(int) bool) bool {
	for j := i + 1; j < len(ws); j++ {
		if ws[j].key == ws[i].key && !noScript(j) {
			return true
		}
	}
	return false
}

// Pipelining of reads. A lease's first attempt, and every attempt after a failed one, reads
// its record before writing it: at 10,000 leases, when writes are late and attempts fail, the
// reads become half the requests, and one GET at a time spent the process's CPU on the
// client's per-command cost as writes did before. Gets are coalesced as writes are, into
// pipelines of GET (not one MGET: a key of another type must fail with WRONGTYPE, which MGET
// reads as missing). Each GET is atomic and answered on its own; a pipeline of reads orders
// nothing, as concurrent reads never were ordered.

// newReadBatcher returns the batcher of a Store's Gets.
func newReadBatcher(client goredis.UniversalClient, pool int) *driver.Batcher[string, *goredis.StringCmd] {
	// Fewer in flight than the writes (newBatcher), so that the two together leave the pool
	// connections for the watches' syncs (newSyncBatcher) and the pings.
	n := pool / 4
	b := &driver.Batcher[string, *goredis.StringCmd]{
		MaxInFlight: max(1, min(n, 4)),
		MaxBatch:    maxPipeline,
		Closed:      errStoreClosed,
		Name:        "store/redis",
	}
	b.Lone = func(ctx context.Context, key string) *goredis.StringCmd { return client.Get(ctx, key) }
	b.Send = func(ctx context.Context, keys []string) []*goredis.StringCmd {
		if len(keys) == 1 {
			return []*goredis.StringCmd{client.Get(ctx, keys[0])}
		}
		pipe := client.Pipeline()
		cmds := make([]*goredis.StringCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.Get(ctx, k)
		}
		_, _ = pipe.Exec(ctx) // each command holds its own reply or error
		return cmds
	}
	return b
}

// read GETs key, alone or in a pipeline.
func (s *backend) read(ctx context.Context, key string) *goredis.StringCmd {
	cmd, err := s.reads.Do(ctx, key)
	if err != nil {
		cmd = goredis.NewStringCmd(ctx)
		cmd.SetErr(err)
	}
	return cmd
}

// Pipelining of the watches' syncs. A watch's first state comes from the sync script (watch.go),
// run once its channel is subscribed. A Store starting thousands of watches at once (a member
// watching every partition's record) ran thousands of scripts at once, each on a connection
// of its own: most waited for the pool, and those that waited longer than its timeout ended
// their watch with an error, to be started again, by the thousand, the same way. They are
// coalesced as the writes are instead; their order does not matter, each tags its own
// message. No WAIT for replicas: a sync changes no key, and its message is for the
// subscribers of this server.

// newSyncBatcher returns the batcher of a Store's watch syncs.
func newSyncBatcher(client goredis.UniversalClient, pool int) *driver.Batcher[redisWrite, *goredis.Cmd] {
	// With the writes and the Gets, no more in flight than the pool has connections (four or
	// more): a sync never waits for one.
	n := pool / 8
	b := &driver.Batcher[redisWrite, *goredis.Cmd]{
		MaxInFlight: max(1, min(n, 2)),
		MaxBatch:    maxPipeline,
		Closed:      errStoreClosed,
		Name:        "store/redis",
	}
	b.Lone = func(ctx context.Context, w redisWrite) *goredis.Cmd {
		return runOne(ctx, client, w, waitRule{})
	}
	b.Send = func(ctx context.Context, ws []redisWrite) []*goredis.Cmd {
		return sendPipeline(ctx, client, ws, waitRule{})
	}
	return b
}

// sync runs the sync script on the Redis key rkey with the watch's token, alone or in a pipeline.
func (s *backend) sync(ctx context.Context, rkey, token string) error {
	cmd, err := s.syncs.Do(ctx, redisWrite{script: s.scripts.sync, key: rkey, args: []any{token}})
	if err != nil {
		return err
	}
	return cmd.Err()
}
