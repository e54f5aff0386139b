package recoverlock

import (
	"context"
	"errors"
	"testing"
)

type panicking struct{ calls int }

func (p *panicking) Get(context.Context, string) (int, error) { p.calls++; panic("boom") }
func (p *panicking) Create(context.Context, string, int) (int, error) {
	p.calls++
	panic("boom")
}
func (p *panicking) Update(_ context.Context, _ string, r int) (int, error) {
	p.calls++
	return r + 1, errors.New("refused")
}

// E8: every call's panic comes back as an error naming the package and the lease; a call that
// does not panic returns what the Store returned.
func TestE8PanicBecomesError(t *testing.T) {
	s := &panicking{}
	l := Lock[int]{Store: s, Pkg: "cluster"}
	ctx := context.Background()
	const want = `cluster: lease "jobs": lock panicked: boom`
	if _, err := l.Get(ctx, "jobs"); err == nil || err.Error() != want {
		t.Errorf("Get: error %v, want %q", err, want)
	}
	if _, err := l.Create(ctx, "jobs", 1); err == nil || err.Error() != want {
		t.Errorf("Create: error %v, want %q", err, want)
	}
	if r, err := l.Update(ctx, "jobs", 1); r != 2 || err == nil || err.Error() != "refused" {
		t.Errorf("Update = %d, %v; want the Store's 2, refused", r, err)
	}
	if s.calls != 3 {
		t.Errorf("Store called %d times, want 3", s.calls)
	}
}
