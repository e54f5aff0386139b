//go:build (!leasehold_minimal || leasehold_redis) && !leasehold_no_redis

package main

import (
	"context"

	goredis "github.com/redis/go-redis/v9"

	_ "github.com/leasehold/leasehold/store/redis" // redis://, rediss://, Webda/RedisStore
)

// go-redis prints its own line on stderr each time its pool fails to dial, beside the error it
// returns, which the command reports once, in its log format.
func init() { goredis.SetLogger(discardRedisLog{}) }

type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}
