package campaign

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// The Ranked mode's settings of a worker, beside proctest's Config: its priority, stability
// window and health failures (ElectorConfig.Priority, StabilityWindow, HealthFailures).
const (
	envPriority       = "LEASEHOLD_FAULTS_PRIORITY"
	envWindow         = "LEASEHOLD_FAULTS_WINDOW"
	envHealthFailures = "LEASEHOLD_FAULTS_HEALTH_FAILURES"
)

// slotPriority is the priority of the workers of slot n: distinct per slot and kept across
// restarts, so that a worker started again in the highest slot outranks every other (Q1).
func slotPriority(n int) int { return n }

// rankedEnv is the environment of a worker of slot n in the Ranked mode.
func rankedEnv(o Options, n int) []string {
	return []string{
		envPriority + "=" + strconv.Itoa(slotPriority(n)),
		envWindow + "=" + o.StabilityWindow.String(),
		envHealthFailures + "=" + strconv.Itoa(o.HealthFailures),
	}
}

// rankedConfig sets cfg's priority, stability window and health check from the environment,
// when the runner started this worker in the Ranked mode, and returns the switch of its check
// (nil otherwise). An unreadable value is an error naming its variable.
func rankedConfig(cfg *cluster.ElectorConfig) (*healthSwitch, error) {
	p := os.Getenv(envPriority)
	if p == "" {
		return nil, nil
	}
	var err error
	if cfg.Priority, err = strconv.Atoi(p); err != nil {
		return nil, fmt.Errorf("%s: %w", envPriority, err)
	}
	if cfg.StabilityWindow, err = time.ParseDuration(os.Getenv(envWindow)); err != nil {
		return nil, fmt.Errorf("%s: %w", envWindow, err)
	}
	if cfg.HealthFailures, err = strconv.Atoi(os.Getenv(envHealthFailures)); err != nil {
		return nil, fmt.Errorf("%s: %w", envHealthFailures, err)
	}
	h := &healthSwitch{}
	cfg.Health = h.check
	cfg.Lock = withAsks(cfg.Lock, cfg.InstanceID)
	return h, nil
}
