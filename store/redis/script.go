package redis

import (
	"context"
	_ "embed"
	"encoding/json"
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

// conditionArgs returns the script's arguments up to the patch's fields.
func conditionArgs(op string, cond *driver.Condition) ([]any, error) {
	if cond == nil {
		return []any{op, "0", "", ""}, nil
	}
	field, _ := json.Marshal(cond.Field)
	value, err := json.Marshal(cond.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: condition on %q: %v", store.ErrInvalid, cond.Field, err)
	}
	return []any{op, "1", field, value}, nil
}

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
