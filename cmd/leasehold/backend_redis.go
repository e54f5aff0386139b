//go:build (!leasehold_minimal || leasehold_redis) && !leasehold_no_redis

package main

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store"
	redisstore "github.com/leasehold/leasehold/store/redis" // redis://, rediss://, redis+sentinel://, redis+cluster://, Webda/RedisStore
)

// go-redis prints its own line on stderr each time its pool fails to dial, beside the error it
// returns, which the command reports once, in its log format.
func init() { goredis.SetLogger(discardRedisLog{}) }

type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}

// The Redis store never deletes a value that is not a JSON object: repair removes one with the
// store's own client, unconditionally (see unreadable).
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		rs, ok := st.(*redisstore.Store)
		if !ok {
			return false, nil
		}
		return true, rs.Client().Del(ctx, rs.Key(key)).Err()
	})
}
