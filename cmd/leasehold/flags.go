package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/health"
	"github.com/leasehold/leasehold/internal/leaseconf"
	"github.com/leasehold/leasehold/store"
)

// commonFlagsUsage documents the flags of run and status.
const commonFlagsUsage = `  --store URL             the store holding the lease: file:///path, sqlite:///path,
                          postgres://..., mysql://..., redis://..., etcd://..., nats://...,
                          dynamodb://..., s3://..., gs://..., azblob://...
                          (default: $LEASEHOLD_STORE, else
                          file://$XDG_STATE_HOME/leasehold/registry.json, else
                          ~/.local/state/leasehold/registry.json: the processes of one host
                          share it with nothing configured)
  --store-file PATH       read the store's URL from PATH (a mounted Kubernetes Secret, say),
                          so that its password is not on the command line for ps to show;
                          white space around it is ignored. --store wins over it, it over
                          LEASEHOLD_STORE
  --lease NAME            the lease's name: one election per name (default leader)
  --lease-duration D      L: how long a lease is valid without renewal (default 15s; at
                          least 100ms)
  --renew-interval D      R: time between two attempts, less than L (default 5s; at least
                          10ms)
  --instance-id ID        this instance's identity (default <hostname>-<pid>-<random>)
  --config FILE           a Webda-style JSON configuration: its Registry and cluster service
                          are used instead of --store; the flags above, when given, override
                          the cluster service's parameters
  --log-format text|json  format of the log on stderr (default text)
  --log-level LEVEL       debug, info, warn or error (default info)
` + durationNote

// durationNote ends the usage of every command that has duration flags.
const durationNote = `
A duration D is a Go duration (15s, 250ms, 1m30s) or a number of milliseconds (15000).
`

// commonFlags are the flags of run and status.
type commonFlags struct {
	store         string
	storeFile     string
	lease         string
	leaseDuration time.Duration
	renewInterval time.Duration
	instanceID    string
	config        string
	logFormat     string
	logLevel      string
	advertise     string // run --advertise (V1)

	// run --priority, --stability-window, --health-cmd, --health-url, --health-timeout,
	// --health-failures (Q1-Q4, U1-U3)
	priority        int
	stabilityWindow time.Duration
	healthCmd       string
	healthURL       string
	healthTimeout   time.Duration
	healthFailures  int

	set          map[string]bool // the flags given on the command line
	defaultStore bool            // store is the default one, whose directory may not exist yet
	storeFrom    string          // where store came from, for messages: --store, --store-file PATH...
}

// storeEnv is the variable holding the store's URL when no flag gives it: a password in the
// environment is not shown by ps, as one on the command line is.
const storeEnv = "LEASEHOLD_STORE"

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.store, "store", "", "")
	fs.StringVar(&c.storeFile, "store-file", "", "")
	fs.StringVar(&c.lease, "lease", cluster.DefaultLeaseName, "")
	fs.DurationVar(&c.leaseDuration, "lease-duration", cluster.DefaultLeaseDuration, "")
	fs.DurationVar(&c.renewInterval, "renew-interval", cluster.DefaultRenewInterval, "")
	fs.StringVar(&c.instanceID, "instance-id", "", "")
	fs.StringVar(&c.config, "config", "", "")
	fs.StringVar(&c.logFormat, "log-format", "text", "")
	fs.StringVar(&c.logLevel, "log-level", "info", "")
}

// parseFlags parses args with fs, which must not print anything itself: a parse error becomes
// a usage error. It reports whether help was asked for.
func parseFlags(fs *flag.FlagSet, args []string, usage string) (help bool, err error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				f.Value = durationFlag{g}
			}
		}
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		msg := strings.Replace(err.Error(), " -", " --", 1)
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			if near := nearestFlag(fs, strings.TrimPrefix(name, "-")); near != "" {
				msg += fmt.Sprintf(" (did you mean --%s?)", near)
			}
		}
		return false, badInput(usage, "%s", msg)
	}
	return false, nil
}

// parseCommand parses the flags of a command that takes no arguments (parseFlags), and refuses
// an argument. done is true when the command has nothing more to do: its usage was asked for,
// and printed on stdout, or err says what is wrong.
func parseCommand(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) (done bool, err error) {
	help, err := parseFlags(fs, args, usage)
	switch {
	case help:
		fmt.Fprint(stdout, usage)
		return true, nil
	case err != nil:
		return true, err
	case fs.NArg() > 0:
		return true, badInput(usage, "%s takes no arguments, got %q", fs.Name(), fs.Arg(0))
	}
	return false, nil
}

// nearestFlag returns the flag of fs that an unknown name most likely meant, or "": one whose
// name holds it as a word (--id for --instance-id), else one within two typing errors
// (--lease-duraton).
func nearestFlag(fs *flag.FlagSet, name string) string {
	if len(name) < 2 {
		return ""
	}
	best, bestDist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(strings.Split(f.Name, "-"), name) && bestDist > 0 {
			best, bestDist = f.Name, 0
			return
		}
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// durationFlag is a flag.Duration that also takes a bare number of milliseconds ("5000"), as
// the JSON configuration does: flag.Duration alone refuses a number without a unit, and the
// same value should mean the same on the command line and in a configuration.
type durationFlag struct{ flag.Getter }

func (d durationFlag) Set(s string) error {
	v, err := leasehold.ParseDuration(s)
	if err != nil {
		return err
	}
	return d.Getter.Set(v.String()) // String is exact: it parses back to v
}

// The least L and R the command takes. Below them nothing is gained but risk: R is how often
// every instance reads and writes the store; L-R bounds each attempt, and (L-R)/2 is the
// margin by which a leader stops leading before any other instance may take over, which a
// store's round trip, a GC pause or a descheduled process must fit in.
const (
	minLeaseDuration = 100 * time.Millisecond
	minRenewInterval = 10 * time.Millisecond
)

// checkFloors refuses an L or an R below the command's floors, saying why, in the names of
// whoever wrote them.
func checkFloors(l, r time.Duration, names leaseconf.Names) error {
	if err := checkLeaseFloor(l, names.LeaseDuration); err != nil {
		return err
	}
	if r < minRenewInterval {
		return fmt.Errorf("%s %v is below %v, the least leasehold takes: every instance would read and write the store more than %d times a second (a number alone is milliseconds)",
			names.RenewInterval, r, minRenewInterval, time.Second/minRenewInterval)
	}
	return nil
}

func checkLeaseFloor(l time.Duration, name string) error {
	if l < minLeaseDuration {
		return fmt.Errorf("%s %v is below %v, the least leasehold takes: (L-R)/2 is the margin by which a leader stops before another may take over, and a store round trip or a GC pause needs more (a number alone is milliseconds)",
			name, l, minLeaseDuration)
	}
	return nil
}

// registerRank registers run's priority and health flags.
func (c *commonFlags) registerRank(fs *flag.FlagSet) {
	fs.IntVar(&c.priority, "priority", 0, "")
	fs.DurationVar(&c.stabilityWindow, "stability-window", 0, "")
	fs.StringVar(&c.healthCmd, "health-cmd", "", "")
	fs.StringVar(&c.healthURL, "health-url", "", "")
	fs.DurationVar(&c.healthTimeout, "health-timeout", 0, "")
	fs.IntVar(&c.healthFailures, "health-failures", 0, "")
}

// validateRank checks the priority and health flags once parsed, naming the one at fault.
// Those that depend on R or on a health check are checked here against --renew-interval and
// --health-cmd/--health-url; with --config, against the cluster service's parameters once
// read (appConfig.checkRank).
func (c *commonFlags) validateRank(usage string) error {
	switch {
	case c.priority < math.MinInt32 || c.priority > math.MaxInt32:
		return badInput(usage, "--priority %d is outside the 32-bit range (%d to %d)", c.priority, math.MinInt32, math.MaxInt32)
	case c.set["stability-window"] && c.stabilityWindow <= 0:
		return badInput(usage, "--stability-window %v must be positive (leave it out for the default, %d × the lease duration)",
			c.stabilityWindow, cluster.DefaultStabilityWindowFactor)
	case c.set["health-cmd"] && c.set["health-url"]:
		return badInput(usage, "--health-cmd and --health-url cannot be used together: give one health check")
	case c.set["health-cmd"] && strings.TrimSpace(c.healthCmd) == "":
		return badInput(usage, "--health-cmd is empty: want a shell command")
	case c.set["health-url"] && strings.TrimSpace(c.healthURL) == "":
		return badInput(usage, "--health-url is empty: want an http or https URL")
	case c.set["health-failures"] && c.healthFailures < 1:
		return badInput(usage, "--health-failures %d must be at least 1", c.healthFailures)
	case c.set["health-timeout"] && c.healthTimeout <= 0:
		return badInput(usage, "--health-timeout %v must be positive", c.healthTimeout)
	}
	if c.set["health-url"] {
		if err := health.CheckURL("--health-url", c.healthURL); err != nil {
			return badInput(usage, "%v", err)
		}
	}
	if c.config != "" {
		return nil
	}
	return c.checkRankNeeds(c.set["health-cmd"] || c.set["health-url"], c.renewInterval, "--renew-interval", usage)
}

// checkRankNeeds refuses --health-timeout or --health-failures without a health check, and a
// --health-timeout longer than R (named rName).
func (c *commonFlags) checkRankNeeds(hasCheck bool, r time.Duration, rName, usage string) error {
	for _, name := range []string{"health-timeout", "health-failures"} {
		if c.set[name] && !hasCheck {
			return badInput(usage, "--%s needs a health check: give --health-cmd or --health-url", name)
		}
	}
	if c.set["health-timeout"] && c.healthTimeout > r {
		return badInput(usage, "--health-timeout %v exceeds %s %v: a check must end before the next one starts", c.healthTimeout, rName, r)
	}
	return nil
}

// flagTiming names L and R as the command line writes them.
var flagTiming = leaseconf.Names{LeaseDuration: "--lease-duration", RenewInterval: "--renew-interval"}

// validate checks the flags once parsed, naming the one at fault, and fills in the default
// store.
func (c *commonFlags) validate(fs *flag.FlagSet, usage string) error {
	c.visit(fs)
	if c.lease == "" {
		return badInput(usage, "--lease must not be empty")
	}
	if isSlotName(c.lease) {
		return badInput(usage, "--lease %q ends in /<digits>, the form of the record of a slot of a lease of N holders (run --holders): a lease of its own by that name would share the slot's record; choose another name (status --lease NAME shows the slots of NAME)", c.lease)
	}
	if c.set["instance-id"] && strings.TrimSpace(c.instanceID) == "" {
		return badInput(usage, "--instance-id must not be empty")
	}
	if c.leaseDuration <= 0 {
		return badInput(usage, "--lease-duration %v must be positive", c.leaseDuration)
	}
	if c.renewInterval == 0 {
		return badInput(usage, "--renew-interval 0s must be positive")
	}
	if err := checkFloors(c.leaseDuration, c.renewInterval, flagTiming); err != nil {
		return badInput(usage, "%v", err)
	}
	if _, _, err := leaseconf.Timing(c.leaseDuration, c.renewInterval, flagTiming); err != nil {
		return badInput(usage, "%v", err)
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return badInput(usage, "--log-format %q: want text or json", c.logFormat)
	}
	if _, err := parseLevel(c.logLevel); err != nil {
		return badInput(usage, "--log-level: %v", err)
	}
	return c.validateStore(usage)
}

// isSlotName reports whether a lease name has the form of a slot's record, NAME/<digits> (H1):
// the record of slot i of the lease NAME run with --holders N.
func isSlotName(lease string) bool {
	i := strings.LastIndexByte(lease, '/')
	if i <= 0 || i == len(lease)-1 {
		return false
	}
	for _, r := range lease[i+1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// visit records the flags given on the command line.
func (c *commonFlags) visit(fs *flag.FlagSet) {
	c.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
}

// validateStore checks --store and --config, and finds the store's URL: --store, else the
// file of --store-file, else $LEASEHOLD_STORE, else the default store. Its messages name where
// the URL came from, and never show its password.
func (c *commonFlags) validateStore(usage string) error {
	if c.set["config"] && strings.TrimSpace(c.config) == "" {
		return badInput(usage, "--config is empty: want the path of a configuration file")
	}
	if c.config != "" {
		for _, name := range []string{"store", "store-file"} {
			if c.set[name] {
				return badInput(usage, "--%s and --config cannot be used together: the configuration's Registry holds the lease", name)
			}
		}
		return nil
	}
	// A setting given empty is a mistake (a crontab's --store "$STORE" with STORE unset), never
	// the default: that file store is local to the host, and every host would lead.
	env, envSet := os.LookupEnv(storeEnv)
	c.storeFrom = "--store"
	switch {
	case c.set["store"]:
		c.store = strings.TrimSpace(c.store)
		if c.store == "" {
			return badInput(usage, "--store is empty: want the store's URL (an unset variable?); leave --store out for the default store")
		}
	case c.set["store-file"]:
		if strings.TrimSpace(c.storeFile) == "" {
			return badInput(usage, "--store-file is empty: want the path of a file holding the store's URL")
		}
		data, err := os.ReadFile(c.storeFile)
		if err != nil {
			return badInput(usage, "--store-file: %v", err)
		}
		c.store, c.storeFrom = strings.TrimSpace(string(data)), "--store-file "+c.storeFile
		if c.store == "" {
			return badInput(usage, "--store-file %s is empty: want the store's URL", c.storeFile)
		}
	case envSet:
		c.store, c.storeFrom = strings.TrimSpace(env), storeEnv
		if c.store == "" {
			return badInput(usage, "%s is set but empty: want the store's URL; unset it for the default store", storeEnv)
		}
	default:
		def, err := defaultStoreURL()
		if err != nil {
			return fmt.Errorf("no store given (--store, --store-file or %s) and no default: %w", storeEnv, err)
		}
		c.store, c.defaultStore = def, true
	}
	u, err := store.ParseURL(c.store)
	if err != nil {
		return badInput(usage, "%s: %v", c.storeFrom, err)
	}
	if b, ok := missingScheme(u.Scheme); ok {
		return badInput(usage, "%s %s: %s", c.storeFrom, store.Redact(u), b.missingText())
	}
	if !slices.Contains(store.Schemes(), strings.ToLower(u.Scheme)) {
		return badInput(usage, "%s %s: unknown scheme %q (known: %s)", c.storeFrom, store.Redact(u), u.Scheme, strings.Join(store.Schemes(), ", "))
	}
	return nil
}

// defaultStoreURL is a file store under the user's state directory. The directory is created
// by the commands that write (makeStateDir), not by those that only read.
func defaultStoreURL() (string, error) {
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	return "file://" + filepath.ToSlash(filepath.Join(dir, "registry.json")), nil
}

func stateDir() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find the state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "leasehold"), nil
}

// makeStateDir creates the directory of the default store, when that is the store.
func (c *commonFlags) makeStateDir() error {
	if !c.defaultStore {
		return nil
	}
	dir, err := stateDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// logger returns the logger the flags ask for, writing to w.
func (c *commonFlags) logger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.logLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.logFormat == "json" {
		// slog's JSON handler writes a time.Duration as a number of nanoseconds, which nobody
		// reads at a glance: write it as the text handler does, "15s", which Go parses back.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
