package redisfence_test

import (
	"context"
	"errors"
	"log"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/store/redis/redisfence"
)

// A report written under the holding of a key: refused, and nothing written, when a later
// holding has written it since (this holder was paused past its lease).
func ExampleSet() {
	var (
		ctx    = context.Background()
		rdb    = goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
		held   *locker.Held // from locker.Acquire(ctx, "report-2026-12")
		report = "..."
	)
	err := redisfence.Set(ctx, rdb, "report:2026-12", held.Term(), report)
	if errors.Is(err, fence.ErrStale) {
		log.Print("a later holding wrote the report: ", err)
	}
}
