package driver

import "time"

// Pace ticks at the shortest heartbeat interval that the watches sharing one connection ask
// for (store.WithHeartbeat): one round trip on the connection proves it alive for them all.
// The zero Pace ticks never. It is used by one goroutine.
type Pace struct {
	tick  *time.Ticker
	every time.Duration
}

// Shortest returns the shortest positive interval of asked, 0 when none.
func Shortest[K comparable](asked map[K]time.Duration) time.Duration {
	var out time.Duration
	for _, d := range asked {
		if d > 0 && (out == 0 || d < out) {
			out = d
		}
	}
	return out
}

// C makes the Pace tick every interval (0: never), keeping its ticker when the interval is the
// same, and returns the channel to wait on: nil, which blocks for ever, when it never ticks.
func (p *Pace) C(every time.Duration) <-chan time.Time {
	if every != p.every {
		p.Stop()
		if p.every = every; every > 0 {
			p.tick = time.NewTicker(every)
		}
	}
	if p.tick == nil {
		return nil
	}
	return p.tick.C
}

// Stop stops the ticker; C starts it again.
func (p *Pace) Stop() {
	if p.tick != nil {
		p.tick.Stop()
		p.tick = nil
	}
	p.every = 0
}
