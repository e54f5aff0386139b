package campaign

import (
	"context"

	"github.com/leasehold/leasehold/internal/storecluster"
	redisstore "github.com/leasehold/leasehold/store/redis"
)

func init() {
	// Three shards of a primary and a replica; every write waits for its shard's replica (the
	// docs' advice for failovers), so that a failover does not lose a takeover it acknowledged.
	// The members' faults hit the shard that holds the campaign's record.
	RegisterClusterBackend("redis-cluster", func(ctx context.Context, dir string) (storecluster.Cluster, error) {
		c, err := storecluster.StartRedisShards(ctx, dir)
		if err != nil {
			return nil, err
		}
		return redisShards{c}, nil
	})
}

// A recordUser is a cluster whose faults act on the part of the store that holds one record:
// the driver names the record once it has opened the store.
type recordUser interface {
	useRecord(ctx context.Context, url, key string) error
}

// redisShards is the Redis Cluster whose URL asks each write to wait for one replica, and
// whose Leader and Failover act on the shard of the campaign's record.
type redisShards struct{ *storecluster.RedisShards }

var _ recordUser = redisShards{}

func (r redisShards) URL(addrs []string, params map[string]string) string {
	p := map[string]string{"wait_replicas": "1", "wait_timeout": "100ms"}
	for k, v := range params {
		p[k] = v
	}
	return r.RedisShards.URL(addrs, p)
}

// useRecord has Leader and Failover act on the shard of key, the Redis key the store at url
// keeps it under.
func (r redisShards) useRecord(ctx context.Context, url, key string) error {
	rs, err := redisstore.Open(ctx, url)
	if err != nil {
		return err
	}
	defer rs.Close()
	r.Key = rs.Key(key)
	return nil
}
