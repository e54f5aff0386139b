package redis

import (
	"context"
	_ "embed"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

//go:embed script.lua
var scriptSource string

// writeScript performs a conditional Patch or Delete (script.lua says how). go-redis runs it
// with EVALSHA and loads it with EVAL when the server does not know it yet (NOSCRIPT), so it is
// sent whole once per server restart or SCRIPT FLUSH.
var writeScript = goredis.NewScript(scriptSource)

func (s *backend) run(ctx context.Context, key string, cond *driver.Condition, args []any) error {
	res, err := s.write(ctx, writeScript, s.prefix+key, args...).Text()
	if err != nil {
		return err
	}
	switch res {
	case "ok":
		return nil
	case "notfound":
		return store.ErrNotFound
	case "notjson":
		return driver.NotObject(ErrNotJSON)
	case "missing":
		return fmt.Errorf("%w: the document has no field %q", store.ErrConditionFailed, cond.Field)
	case "mismatch":
		return fmt.Errorf("%w: field %q is not %s", store.ErrConditionFailed, cond.Field, args[3])
	}
	return fmt.Errorf("store/redis: unexpected reply %q from the write script", res)
}
