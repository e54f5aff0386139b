package campaign

import "sync"

// A gate lets campaigns run side by side in one process without one's start disturbing the
// bounds another measures. Starting a backend (servers, a kube-apiserver, JVMs) and its
// workers, up to a healthy election, is the CPU-heavy part of a campaign, and it runs alone:
// it waits until no campaign of the gate is in a fault, and no campaign starts a fault until
// it is over. Faults (an injection and the settle that follows) and the final stop run beside
// one another; they spend their time waiting on timers, not computing. Starting alone also
// keeps a campaign from taking a port that another campaign's member left free while it was
// killed. A nil gate lets everything through: a campaign on its own.
type gate struct{ mu sync.RWMutex }

// alone waits until the campaign may start alone, and returns what ends that.
func (g *gate) alone() (release func()) {
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	return g.mu.Unlock
}

// beside waits until the campaign may run a fault beside others, and returns what ends that.
func (g *gate) beside() (release func()) {
	if g == nil {
		return func() {}
	}
	g.mu.RLock()
	return g.mu.RUnlock
}
