package cluster

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// M1 is tight, and the checks see it broken: the configuration L15s-R5s-clocks of
// TestRandomFaults gives the instances clocks whose rates differ by up to just under
// 2L/(L+R) = 1.5 and never sees two leaders. Here the fastest clock's L is (L+R)/2 - R/10 =
// 9.5 s, a rate 15/9.5 = 1.58 times the slowest's: a follower on it takes over a leader on the
// slowest clock whose renewals fail while that leader still leads by its own clock, and the
// same checks report two leaders.
func TestRandomClocksBeyondTheBound(t *testing.T) {
	type caught struct{ msg string }
	cfg := randomConfigs()[0]
	if cfg.name != "L15s-R5s" {
		t.Fatalf("first configuration %s, want L15s-R5s", cfg.name)
	}
	cfg.name, cfg.fastest, cfg.hours = "L15s-R5s-beyond", (cfg.l+cfg.r)/2-cfg.r/10, 2
	cfg.failed = func(msg string) { panic(caught{msg}) }
	var msgs []string
	for seed := uint64(1); seed <= 10 && len(msgs) == 0; seed++ {
		synctest.Test(t, func(t *testing.T) {
			defer func() {
				switch r := recover().(type) {
				case nil:
				case caught:
					msgs = append(msgs, fmt.Sprintf("seed %d: %s", seed, r.msg))
				default:
					panic(r)
				}
			}()
			runRandomSeed(t, cfg, seed, newRandomStats())
		})
	}
	if len(msgs) == 0 {
		t.Fatal("rates 1.58 times apart: no check failed in 10 seeds of 2 fake hours; want two leaders")
	}
	for _, want := range []string{"two leaders", "IsLeader() is true for both", "two fns at once"} {
		if strings.Contains(msgs[0], want) {
			t.Logf("caught, as wanted: %s", strings.SplitN(msgs[0], "\n", 2)[0])
			return
		}
	}
	t.Fatalf("rates 1.58 times apart: a check failed, but not on two leaders: %s", msgs[0])
}
