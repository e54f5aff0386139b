// Package termctx carries a lease's term in the context of a leadership's callbacks: what
// cluster.TermOf reads.
package termctx

import "context"

type key struct{}

// With returns ctx carrying the lease term. An Elector uses it for the contexts it gives to
// its LeaderFuncs, a partitioned election for those of each partition's callbacks.
func With(ctx context.Context, term uint64) context.Context {
	return context.WithValue(ctx, key{}, term)
}

// Of returns the lease term ctx carries, false when it carries none.
func Of(ctx context.Context) (uint64, bool) {
	t, ok := ctx.Value(key{}).(uint64)
	return t, ok
}
