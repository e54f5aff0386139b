package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// Watch implements driver.Watcher (T8 of docs/design.md): it reads the key, delivers its
// state, then watches it from the read's revision, so that no write after the read is missed,
// and delivers each response's last state (a put's document, or no document after a delete), in
// revision order, skipping the events at or before the read's revision (what it read already).
// Not from the revision after the read: the server sends no progress notification on a stream
// while any of its watches starts at a revision not yet written, so the heartbeats of every
// watch of the client would wait for the next write to the cluster.
//
// clientv3 carries all the watches of a client on one gRPC stream, and when the connection
// breaks it resumes them on a new one from the revision after the last delivered: nothing is
// lost, so a reconnection is no failure. The watch asks for a leader (WithRequireLeader), so
// that a member cut off from its cluster cancels it rather than leave it silent. A response
// that cancels the watch (the revision to resume from was compacted away, no leader) and a
// closed channel (the client was closed) end it with an error: its caller watches again.
//
// Heartbeats (store.WithHeartbeat): the watch asks for a progress notification every interval
// (Watcher.RequestProgress, on the gRPC stream that carries the watch). The server answers on
// that stream, once it has sent every event up to the revision the answer carries, so a
// heartbeat delivered for it means that every write committed before the request has been
// delivered. The answer goes to every watch of the stream: those that asked for heartbeats
// deliver one, the others ignore it. A connection that goes silent without failing answers
// nothing, so the heartbeats stop; gRPC's keepalive, when set, ends such a connection, and
// clientv3 resumes the watch on a new one, where the heartbeats come again.
//
// The progress requests are made by a goroutine of the watch's own, which it ends and waits
// for before it returns: a request waits while the stream is being reconnected, and the watch
// must not.
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	k := s.prefix + key
	resp, err := s.client.Get(ctx, k)
	if err != nil {
		return fmt.Errorf("store/etcd: read for a watch: %w", err)
	}
	s.known.saw(k, resp.Kvs)
	n, err := notice(resp.Kvs)
	if err != nil {
		return err
	}
	if err := fn(n); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	read := resp.Header.Revision
	every := store.HeartbeatEvery(ctx)
	ch := s.client.Watch(wctx, k, clientv3.WithRev(read))
	if every > 0 {
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel() // before the wait
		wg.Go(func() { s.requestProgress(wctx, every) })
	}
	for wr := range ch {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("store/etcd: watch: %w", err)
		}
		if wr.Canceled {
			return errors.New("store/etcd: watch canceled by the server")
		}
		if len(wr.Events) == 0 {
			if every > 0 && wr.IsProgressNotify() {
				if err := fn(driver.Notice{Heartbeat: true}); err != nil {
					return err
				}
			}
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ev := wr.Events[len(wr.Events)-1] // the newest: the others are older states of the key
		if ev.Kv.ModRevision <= read {
			continue // the state the read delivered
		}
		var kvs []*mvccpb.KeyValue
		if ev.Type == clientv3.EventTypePut {
			kvs = []*mvccpb.KeyValue{ev.Kv}
		}
		s.known.saw(k, kvs)
		n, err := notice(kvs)
		if err != nil {
			return err
		}
		if err := fn(n); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("store/etcd: the watch channel was closed (the client was closed)")
}

// requestProgress asks for a progress notification on the stream of the watches made with
// wctx (the stream is chosen by the context's metadata) every interval, until wctx ends. A
// request that cannot be sent within the interval (the stream is being reconnected) is given
// up: the next tick makes another.
func (s *backend) requestProgress(wctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-wctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(wctx, every)
		if rctx.Err() == nil {
			s.client.RequestProgress(rctx) // its failure is the heartbeat's absence
		}
		cancel()
	}
}

// notice returns the state a Get's or a put event's key-values hold.
func notice(kvs []*mvccpb.KeyValue) (driver.Notice, error) {
	if len(kvs) == 0 {
		return driver.Notice{}, nil
	}
	doc, err := decode(kvs[0].Value)
	if err != nil {
		return driver.Notice{}, err
	}
	return driver.Notice{Found: true, Doc: doc}, nil
}
