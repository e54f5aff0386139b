package redisfence_test

import (
	"context"
	"errors"
	"log"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/store/redis/redisfence"
)

// A report written under the term of a holding: refused, and nothing written, when a later
// holding has written it since (this holder was paused past its lease).
func ExampleSet() {
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	var term uint64 = 42 // a locker holding's Held.Term(), or cluster.TermOf(ctx)

	err := redisfence.Set(ctx, rdb, "report:2026-12", term, "the report")
	switch {
	case errors.Is(err, fence.ErrStale):
		log.Print("a later holding wrote the report: ", err)
	case err != nil:
		log.Fatal(err)
	}
}
