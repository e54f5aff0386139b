package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// Watch implements driver.Watcher (T8 of docs/design.md): it reads the key, delivers its
// state, then watches it from the read's revision + 1, so that no write after the read is
// missed, and delivers each response's last state (a put's document, or no document after a
// delete), in revision order.
//
// clientv3 carries all the watches of a client on one gRPC stream, and when the connection
// breaks it resumes them on a new one from the revision after the last delivered: nothing is
// lost, so a reconnection is no failure. The watch asks for a leader (WithRequireLeader), so
// that a member cut off from its cluster cancels it rather than leave it silent. A response
// that cancels the watch (the revision to resume from was compacted away, no leader) and a
// closed channel (the client was closed) end it with an error: its caller watches again.
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
	for wr := range s.client.Watch(wctx, k, clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("store/etcd: watch: %w", err)
		}
		if wr.Canceled {
			return errors.New("store/etcd: watch canceled by the server")
		}
		if len(wr.Events) == 0 {
			continue // a progress notification
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ev := wr.Events[len(wr.Events)-1] // the newest: the others are older states of the key
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
