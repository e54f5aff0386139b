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

// luaScript is a script and its text: it runs with EVALSHA, and is sent whole (EVAL) when the
// server does not know it yet (NOSCRIPT), once per server restart or SCRIPT FLUSH.
type luaScript struct {
	*goredis.Script
	src string
}

func newScript(src string) *luaScript { return &luaScript{Script: goredis.NewScript(src), src: src} }

// cmd returns the command that runs the script on key: by its hash, or whole.
func (sc *luaScript) cmd(ctx context.Context, whole bool, key string, args []any) *goredis.Cmd {
	a := make([]any, 0, 4+len(args))
	if whole {
		a = append(a, "eval", sc.src, 1, key)
	} else {
		a = append(a, "evalsha", sc.Hash(), 1, key)
	}
	return goredis.NewCmd(ctx, append(a, args...)...)
}

// scriptSet is the store's scripts: the write script (script.lua) and the Create and watch
// sync scripts (watch.go), publishing on "watch:" and the key, or, on a cluster, on the sharded
// channel named as the key.
type scriptSet struct {
	write, create, sync *luaScript
	cluster             bool
}

var (
	plainScripts   = scriptSet{write: newScript(scriptSource), create: newScript(createSource), sync: newScript(syncSource)}
	clusterScripts = scriptSet{write: newScript(clusterScript(scriptSource)), create: newScript(clusterScript(createSource)),
		sync: newScript(clusterScript(syncSource)), cluster: true}
)

func (s *backend) run(ctx context.Context, key string, cond *driver.Condition, args []any) error {
	res, err := s.write(ctx, s.scripts.write, s.rkey(key), args...).Text()
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
