package redisfence_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	mathrand "math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/fencetest"
	"github.com/leasehold/leasehold/internal/testenv"
	redisstore "github.com/leasehold/leasehold/store/redis"
	"github.com/leasehold/leasehold/store/redis/redisfence"
)

// The fence's tests over Redis (F1–F4 in docs/design.md).

// client returns a client of the test server and a key prefix no other test uses; every key
// under it is deleted when the test ends.
func client(t *testing.T) (*goredis.Client, string) {
	t.Helper()
	raw := testenv.Redis.URL(t)
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "leasehold-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleaning up %s*: %v", prefix, err)
		}
		c.Close()
	})
	return c, prefix
}

// F1 over Redis: the first term, then equal and higher ones pass; a lower one is refused,
// naming the key and both terms, and changes nothing.
func TestF1Semantics(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "report"
	if v, term, err := redisfence.Get(ctx, c, key); v != "" || term != 0 || err != nil {
		t.Fatalf("Get of an absent key: %q, %d, %v", v, term, err)
	}
	for _, w := range []struct {
		term  uint64
		value string
		stale uint64 // the stored term of a refusal, 0 when the write passes
	}{
		{5, "a", 0}, {5, "b", 0}, {4, "c", 5}, {1, "d", 5}, {6, "e", 0}, {6, "f", 0}, {5, "g", 6},
	} {
		err := redisfence.Set(ctx, c, key, w.term, w.value)
		if w.stale == 0 {
			if err != nil {
				t.Fatalf("Set(%d, %q): %v", w.term, w.value, err)
			}
			continue
		}
		var se *fence.StaleError
		if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) || *se != (fence.StaleError{Resource: key, Term: w.term, Stored: w.stale}) {
			t.Fatalf("Set(%d, %q) with %d stored: %v, want a *fence.StaleError naming both", w.term, w.value, w.stale, err)
		}
	}
	if v, term, err := redisfence.Get(ctx, c, key); v != "f" || term != 6 || err != nil {
		t.Fatalf("Get: %q, %d, %v; want f, 6", v, term, err)
	}
}

// Terms compare exactly over the whole uint64 range, where Lua's numbers would round those
// above 2^53 (2^53 + 1 and 2^53 are one double).
func TestF1TermsAbove2To53(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "big"
	big := uint64(1<<53) + 1
	for _, term := range []uint64{9, 10, big, math.MaxUint64} {
		if err := redisfence.Set(ctx, c, key, term, strconv.FormatUint(term, 10)); err != nil {
			t.Fatalf("Set(%d): %v", term, err)
		}
	}
	for _, term := range []uint64{big - 1, math.MaxUint64 - 1, 99} {
		if err := redisfence.Set(ctx, c, key, term, "stale"); !errors.Is(err, fence.ErrStale) {
			t.Errorf("Set(%d) with %d stored: %v, want ErrStale", term, uint64(math.MaxUint64), err)
		}
	}
	key2 := prefix + "big2"
	if err := redisfence.Set(ctx, c, key2, big, "x"); err != nil {
		t.Fatal(err)
	}
	if err := redisfence.Set(ctx, c, key2, big-1, "y"); !errors.Is(err, fence.ErrStale) {
		t.Errorf("Set(2^53) with 2^53 + 1 stored: %v, want ErrStale", err)
	}
	if v, term, err := redisfence.Get(ctx, c, key); v != strconv.FormatUint(math.MaxUint64, 10) || term != math.MaxUint64 || err != nil {
		t.Errorf("Get: %q, %d, %v", v, term, err)
	}
}

// F4 over Redis: bad input names what is at fault; a key that is not a fence's hash is an
// error naming it, and is left as it was.
func TestF4BadInput(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{redisfence.Set(ctx, c, "", 1, "v"), "the key is empty"},
		{redisfence.Set(ctx, c, prefix+"k", 0, "v"), `key "` + prefix + `k": term 0 is no leadership's term`},
		{redisfence.Set(ctx, nil, prefix+"k", 1, "v"), "the client is nil"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%v, want an error containing %q", tc.err, tc.want)
		}
	}
	if _, _, err := redisfence.Get(ctx, c, ""); err == nil || !strings.Contains(err.Error(), "the key is empty") {
		t.Errorf("Get of the empty key: %v", err)
	}

	str := prefix + "a-string"
	c.Set(ctx, str, "not a hash", 0)
	if err := redisfence.Set(ctx, c, str, 1, "v"); err == nil || errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), str) {
		t.Errorf("Set on a string key: %v, want an error naming the key", err)
	}
	if v, _ := c.Get(ctx, str).Result(); v != "not a hash" {
		t.Errorf("the string key now holds %q", v)
	}
	bad := prefix + "bad-term"
	c.HSet(ctx, bad, "term", "12abc", "value", "x")
	if err := redisfence.Set(ctx, c, bad, 99, "v"); err == nil || errors.Is(err, fence.ErrStale) || !strings.Contains(err.Error(), "12abc") {
		t.Errorf("Set on a hash whose term is not a number: %v", err)
	}
	if _, _, err := redisfence.Get(ctx, c, bad); err == nil || !strings.Contains(err.Error(), "12abc") {
		t.Errorf("Get of a hash whose term is not a number: %v", err)
	}
}

// F2 over Redis under concurrency: writers with terms of their own, started at once in
// random order; the highest term's value stays, and every refusal names a higher stored term.
func TestF2Race(t *testing.T) {
	c, prefix := client(t)
	ctx := t.Context()
	key := prefix + "raced"
	const writers = 32
	errs := make([]error, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range mathrand.Perm(writers) {
		term := uint64(p + 1)
		wg.Go(func() {
			<-start
			errs[i] = redisfence.Set(ctx, c, key, term, "v"+strconv.FormatUint(term, 10))
		})
	}
	close(start)
	wg.Wait()
	refused := 0
	for _, err := range errs {
		var se *fence.StaleError
		switch {
		case err == nil:
		case errors.As(err, &se):
			refused++
			if se.Stored <= se.Term || se.Stored > writers {
				t.Errorf("refusal %+v", *se)
			}
		default:
			t.Error(err)
		}
	}
	if v, term, err := redisfence.Get(ctx, c, key); v != "v32" || term != writers || err != nil {
		t.Errorf("Get: %q, %d, %v; want v32, 32", v, term, err)
	}
	t.Logf("%d writers, %d refused as stale", writers, refused)
}

// F2: a holder frozen past its lease writes after its successor: refused. The election runs
// over this module's store, on the same server.
func TestF2FrozenHolder(t *testing.T) {
	c, prefix := client(t)
	u, err := url.Parse(testenv.Redis.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("prefix", prefix+"leases:")
	u.RawQuery = q.Encode()
	st, err := redisstore.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key := prefix + "report"
	fencetest.FrozenHolder(t, cluster.NewStoreLock(st), fencetest.Resource{
		Write: func(ctx context.Context, term uint64, value string) error {
			return redisfence.Set(ctx, c, key, term, value)
		},
		Read: func(ctx context.Context) (string, error) {
			v, _, err := redisfence.Get(ctx, c, key)
			return v, err
		},
	})
}
