// Package redisfence writes Redis values through a fence: a write carries the term of its
// writer's holding (locker's Held.Term, cluster.TermOf), and a write under a lower term than
// the one stored, a holder's paused past its lease, is refused. Package fence (in the core
// module) says why, and gives the same check in SQL.
//
// A fenced value is a hash of two fields, term and value, written together by one Lua script
// (EVALSHA, sent whole when the server does not know it yet): it stores the value and the term
// only if the term is not lower than the stored one, atomically, so a stale writer can never
// slip in between the check and the write. An equal term is the same holding: accepted. Read
// the value with Get, or HGET key value.
//
// A single key per call, so it works on a Redis Cluster as on a single server. A structure
// other than one value (a list, a set) is fenced the same way by a script of its own that
// keeps the term beside it and runs the same comparison.
package redisfence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/fence"
)

//go:embed set.lua
var setSource string

var setScript = goredis.NewScript(setSource)

// Set writes value into the hash key (fields term and value) under term, or refuses with a
// *fence.StaleError (wrapping fence.ErrStale) when key holds a higher term: a later holding
// has written. term 0, the term of no leadership, is refused.
func Set(ctx context.Context, c goredis.Scripter, key string, term uint64, value string) error {
	if err := check(c, key); err != nil {
		return err
	}
	if term == 0 {
		return fmt.Errorf("redisfence: key %q: term 0 is no leadership's term (terms start at 1; cluster.TermOf returns 0 outside a leadership)", key)
	}
	res, err := setScript.Run(ctx, c, []string{key}, strconv.FormatUint(term, 10), value).Slice()
	if err != nil {
		return fmt.Errorf("redisfence: key %q: writing under term %d: %w", key, term, err)
	}
	if len(res) != 2 {
		return fmt.Errorf("redisfence: key %q: the script answered %v", key, res)
	}
	written, _ := res[0].(int64)
	s, _ := res[1].(string)
	stored, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("redisfence: key %q: the script answered term %q: %w", key, s, err)
	}
	if written == 1 {
		return nil
	}
	return &fence.StaleError{Resource: key, Term: term, Stored: stored}
}

// Get returns the value of the hash key and the term it was written under; an absent key
// returns "" and term 0.
func Get(ctx context.Context, c goredis.Cmdable, key string) (value string, term uint64, err error) {
	if err := check(c, key); err != nil {
		return "", 0, err
	}
	res, err := c.HMGet(ctx, key, "term", "value").Result()
	if err != nil {
		return "", 0, fmt.Errorf("redisfence: key %q: %w", key, err)
	}
	t, _ := res[0].(string)
	value, _ = res[1].(string)
	if t == "" {
		return value, 0, nil
	}
	if term, err = strconv.ParseUint(t, 10, 64); err != nil {
		return "", 0, fmt.Errorf("redisfence: key %q: field term %q is not a term: %w", key, t, err)
	}
	return value, term, nil
}

var errNoKey = errors.New("redisfence: the key is empty")

func check(c any, key string) error {
	if key == "" {
		return errNoKey
	}
	if c == nil {
		return fmt.Errorf("redisfence: key %q: the client is nil", key)
	}
	return nil
}
