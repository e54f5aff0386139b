//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// partitionHelper is the CMD of run --partitions tests (mode record-partition): it holds an
// exclusive flock on $LEASEHOLD_TEST_DIR/partition-P.lock for its whole life, and appends to
// $LEASEHOLD_TEST_DIR/partitions.log "start P TERM ID" once it holds it, "stop P TERM ID" on
// SIGTERM or SIGINT, before it exits, or "overlap P TERM ID" when another CMD of partition P
// holds the lock (and exits 99).
func partitionHelper(mode string) (int, bool) {
	if mode != "record-partition" {
		return 0, false
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	dir, p := os.Getenv("LEASEHOLD_TEST_DIR"), os.Getenv("LEASEHOLD_PARTITION")
	record := func(what string) {
		f, err := os.OpenFile(filepath.Join(dir, "partitions.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Println("CMD-ERROR", err)
			return
		}
		defer f.Close()
		// One write of a short line: appends of concurrent CMDs do not interleave.
		fmt.Fprintf(f, "%s %s %s %s\n", what, p, os.Getenv("LEASEHOLD_TERM"), os.Getenv("LEASEHOLD_INSTANCE_ID"))
	}
	if p == "" {
		record("no-partition")
		return 98, true
	}
	lock, err := os.OpenFile(filepath.Join(dir, "partition-"+p+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Println("CMD-ERROR", err)
		return 98, true
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		record("overlap")
		return 99, true
	}
	record("start")
	<-sigs
	record("stop")
	return 0, true
}

// partitionRun is one run of CMD for a partition, from the helper's records.
type partitionRun struct {
	term    uint64
	id      string
	stopped bool
}

// readPartitionRuns reads the helper's records and checks them: per partition, each start
// comes after the previous run's stop (never two CMDs of a partition at once) with a higher
// term, and no CMD found the partition's lock held. It returns each partition's runs, in order.
func readPartitionRuns(t *testing.T, dir string, k int) [][]partitionRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "partitions.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := make([][]partitionRun, k)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("record %q: want KIND P TERM ID", l)
		}
		p, err := strconv.Atoi(f[1])
		if err != nil || p < 0 || p >= k {
			t.Fatalf("record %q: partition not in [0, %d)", l, k)
		}
		term, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil || term == 0 {
			t.Fatalf("record %q: LEASEHOLD_TERM is not a term", l)
		}
		rs := runs[p]
		switch f[0] {
		case "start":
			if n := len(rs); n > 0 && !rs[n-1].stopped {
				t.Fatalf("partition %d: %s started it (term %d) while %s's CMD (term %d) had not stopped\n%s", p, f[3], term, rs[n-1].id, rs[n-1].term, b)
			}
			if n := len(rs); n > 0 && term <= rs[n-1].term {
				t.Fatalf("partition %d: term %d of %s after term %d of %s; want a higher term\n%s", p, term, f[3], rs[n-1].term, rs[n-1].id, b)
			}
			runs[p] = append(rs, partitionRun{term: term, id: f[3]})
		case "stop":
			if n := len(rs); n == 0 || rs[n-1].stopped || rs[n-1].term != term || rs[n-1].id != f[3] {
				t.Fatalf("partition %d: stop of %s (term %d) without its start\n%s", p, f[3], term, b)
			}
			rs[len(rs)-1].stopped = true
		default:
			t.Fatalf("record %q: two CMDs of one partition at once, or no LEASEHOLD_PARTITION\n%s", l, b)
		}
	}
	return runs
}

// waitPartitions polls the helper's records until every partition's CMD runs and want says
// the owners are as expected; it returns the run of each partition.
func waitPartitions(t *testing.T, w *world, k int, timeout time.Duration, what string, want func(running []partitionRun) bool) []partitionRun {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		runs := readPartitionRuns(t, w.dir, k)
		running := make([]partitionRun, k)
		all := true
		for p, rs := range runs {
			if len(rs) == 0 || rs[len(rs)-1].stopped {
				all = false
				continue
			}
			running[p] = rs[len(rs)-1]
		}
		if all && want(running) {
			return running
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s; runs: %+v", timeout, what, runs)
		}
		time.Sleep(20 * time.Millisecond) // polling the records, not a timing assumption
	}
}

func countOwners(running []partitionRun) map[string]int {
	n := map[string]int{}
	for _, r := range running {
		n[r.id]++
	}
	return n
}

// D6-D8 through the command: three leasehold run --partitions 6 over one file store run the 6
// partitions' CMDs, 2 per instance, each with its partition and term, never two CMDs of one
// partition at once (the records and each partition's flock say so); status --partitions 6
// shows the owners and terms the CMDs were given, and the members. SIGTERM to one instance
// stops its CMDs and it exits 0; the two others run its partitions, with higher terms.
func TestRunPartitions(t *testing.T) {
	const k = 6
	w := newWorld(t)
	env := []string{"LEASEHOLD_TEST_CMD=record-partition"}
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b", "c"} {
		procs[id] = w.start(id, env, runArgs(w, id, "--partitions", strconv.Itoa(k))...)
	}
	running := waitPartitions(t, w, k, 30*time.Second, "6 partitions running, 2 per instance", func(running []partitionRun) bool {
		n := countOwners(running)
		return n["a"] == 2 && n["b"] == 2 && n["c"] == 2
	})

	st := slotsStatus(t, w.storeURL(), 0, "--lease", "jobs", "--partitions", strconv.Itoa(k))
	if len(st.Partitions) != k || strings.Join(st.Members, ",") != "a,b,c" || !st.Held {
		t.Fatalf("status --partitions %d: %+v; want %d partitions and members a, b, c", k, st, k)
	}
	for p, s := range st.Partitions {
		if s.Lease != "jobs/"+strconv.Itoa(p) || s.Holder != running[p].id || s.Term != running[p].term {
			t.Errorf("status: partition %d: %s held by %q term %d; its CMD runs on %s with term %d", p, s.Lease, s.Holder, s.Term, running[p].id, running[p].term)
		}
	}
	out, _, code := runLeasehold(t, "status", "--store", w.storeURL(), "--lease", "jobs", "--partitions", strconv.Itoa(k))
	for _, want := range []string{"held (6 of 6 partitions owned)", "members:", "a, b, c", "partition 0:", "partition 5:", "owned by"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status --partitions %d: exit %d, output lacks %q:\n%s", k, code, want, out)
		}
	}

	if err := procs["a"].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(procs["a"], 30*time.Second); code != 0 {
		t.Fatalf("a exited %d after SIGTERM; want 0", code)
	}
	// a's CMDs are gone before it exits: their stops are recorded.
	for p, rs := range readPartitionRuns(t, w.dir, k) {
		for _, r := range rs {
			if r.id == "a" && !r.stopped {
				t.Errorf("partition %d: a's CMD (term %d) did not stop before a exited", p, r.term)
			}
		}
	}
	after := waitPartitions(t, w, k, 30*time.Second, "a's partitions running on b and c, 3 each", func(now []partitionRun) bool {
		n := countOwners(now)
		return n["b"] == 3 && n["c"] == 3
	})
	for p := range k {
		if running[p].id == "a" && after[p].term <= running[p].term {
			t.Errorf("partition %d: term %d on %s after a's term %d; want a higher term", p, after[p].term, after[p].id, running[p].term)
		}
	}

	for _, id := range []string{"b", "c"} {
		if err := procs[id].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"b", "c"} {
		if code := w.waitExit(procs[id], 30*time.Second); code != 0 {
			t.Errorf("%s exited %d after SIGTERM; want 0", id, code)
		}
	}
	for p, rs := range readPartitionRuns(t, w.dir, k) {
		if !rs[len(rs)-1].stopped {
			t.Errorf("partition %d: its last CMD did not stop before its instance exited", p)
		}
	}
	st = slotsStatus(t, w.storeURL(), exitNoLease, "--lease", "jobs", "--partitions", strconv.Itoa(k))
	if st.State != "released" || len(st.Members) != 0 {
		t.Errorf("status once every instance stopped: %+v; want released, no members", st)
	}
}

// A CMD that exits by itself ends leasehold run --partitions as a leader's does: the other
// partitions' CMDs are stopped, the partitions released, and leasehold exits with its status.
func TestRunPartitionsCmdExits(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=exit", "LEASEHOLD_TEST_EXIT=7"}, runArgs(w, "a", "--partitions", "3")...)
	if code := w.waitExit(p, 30*time.Second); code != 7 {
		t.Fatalf("run --partitions 3 with a CMD exiting 7: exit %d; want 7", code)
	}
	st := slotsStatus(t, w.storeURL(), exitNoLease, "--lease", "jobs", "--partitions", "3")
	if st.Held {
		t.Errorf("status after leasehold exited: %+v; want no partition owned", st)
	}
}

// run --partitions refusals: exit 2 and a message naming the flag.
func TestRunPartitionsBadInput(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--partitions", "0"}, "--partitions"},
		{[]string{"--partitions", "-1"}, "--partitions"},
		{[]string{"--max-moves", "2"}, "--max-moves"},
		{[]string{"--partitions", "4", "--max-moves", "0"}, "--max-moves"},
		{[]string{"--partitions", "4", "--holders", "2"}, "--holders"},
		{[]string{"--partitions", "4", "--try"}, "--try"},
		{[]string{"--partitions", "4", "--wait", "1s"}, "--wait"},
		{[]string{"--partitions", "4", "--priority", "2"}, "--priority"},
		{[]string{"--partitions", "4", "--health-cmd", "true"}, "--health-cmd"},
		{[]string{"--partitions", "4", "--health-url", "http://127.0.0.1:1/"}, "--health-url"},
		{[]string{"--partitions", "4", "--health-failures", "2"}, "--health-failures"},
		{[]string{"--partitions", "4", "--advertise", "x:1"}, "--advertise"},
		{[]string{"--partitions", "4", "--hold-at-least", "1s"}, "--hold-at-least"},
		{[]string{"--partitions", "4", "--metrics-addr", "127.0.0.1:0"}, "--metrics-addr"},
	} {
		p := w.start("bad", nil, runArgs(w, "a", c.args...)...)
		if code := w.waitExit(p, 30*time.Second); code != exitUsage {
			t.Errorf("run %v: exit %d; want 2", c.args, code)
		}
		p.mu.Lock()
		out := strings.Join(p.output, "\n")
		p.mu.Unlock()
		if !strings.Contains(out, c.flag) {
			t.Errorf("run %v: output %q does not name %s", c.args, out, c.flag)
		}
	}
	for _, args := range [][]string{
		{"--partitions", "0"},
		{"--partitions", "2", "--holders", "2"},
		{"--partitions", "2", "--watch"},
	} {
		_, stderr, code := runLeasehold(t, append([]string{"status", "--store", w.storeURL(), "--lease", "jobs"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "--partitions") {
			t.Errorf("status %v: exit %d, %q; want 2 naming --partitions", args, code, stderr)
		}
	}
}

// The usage of run --partitions and docs/command.md say what newPartitionsElection takes: a
// store (--store, or --config with a store cluster service) or Kubernetes Leases (--config with
// a Kubernetes cluster service: its Lock keeps the roster, as TestPartitionsOverKubernetes
// runs), and never that the partitions need a store, not a Kubernetes lease.
func TestDocsRunUsagePartitions(t *testing.T) {
	para := runUsage[strings.Index(runUsage, "- --partitions K:"):]
	para = para[:strings.Index(para, "\n\n")]
	flat := strings.Join(strings.Fields(para), " ")
	doc := strings.Join(strings.Fields(docSection(t, "docs/command.md", "## Partitions: `run --partitions K`")), " ")
	for _, c := range []struct{ where, text string }{{"run --help", flat}, {"docs/command.md", doc}} {
		for _, want := range []string{"--config with a store cluster service", "--config with a Kubernetes cluster service", "list and delete"} {
			if !strings.Contains(strings.ReplaceAll(c.text, "`", ""), want) {
				t.Errorf("%s on --partitions does not say %q:\n%s", c.where, want, c.text)
			}
		}
		for _, wrong := range []string{"not a Kubernetes", "Needs a store", "needs a store"} {
			if strings.Contains(c.text, wrong) {
				t.Errorf("%s on --partitions says %q: a Kubernetes cluster service's Lock keeps a roster too", c.where, wrong)
			}
		}
	}
}

// run --partitions with --config: the partitions are the configured cluster service's lease
// (its name, L and R) over its Registry: two instances run the 4 partitions' CMDs, 2 each,
// and the records pool/0 to pool/3 of the Registry name their owners.
func TestRunPartitionsWithConfig(t *testing.T) {
	const k = 4
	w := newWorld(t)
	registry := filepath.Join(w.dir, "app-registry.json")
	cfg := writeConfig(t, w.dir, "app.json", `
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseName": "pool", "leaseDuration": 2000, "renewInterval": 500}`)
	env := []string{"LEASEHOLD_TEST_CMD=record-partition"}
	for _, id := range []string{"a", "b"} {
		w.start(id, env, append([]string{"run", "--config", cfg, "--instance-id", id, "--partitions", strconv.Itoa(k), "--log-format", "json", "--"}, helperCmd()...)...)
	}
	running := waitPartitions(t, w, k, 30*time.Second, "4 partitions running, 2 per instance", func(running []partitionRun) bool {
		n := countOwners(running)
		return n["a"] == 2 && n["b"] == 2
	})
	st := slotsStatus(t, "file://"+registry, 0, "--lease", "pool", "--partitions", strconv.Itoa(k))
	if len(st.Partitions) != k || strings.Join(st.Members, ",") != "a,b" {
		t.Fatalf("status of the lease pool: %+v; want its %d partitions and members a, b", st, k)
	}
	for p, s := range st.Partitions {
		if s.Lease != "pool/"+strconv.Itoa(p) || s.Holder != running[p].id || s.Term != running[p].term {
			t.Errorf("record %s of the Registry: holder %q term %d; its CMD runs on %s with term %d", s.Lease, s.Holder, s.Term, running[p].id, running[p].term)
		}
	}
}

// The help of run and status, and the bash and zsh completions, carry --partitions K and
// --max-moves M.
func TestCompletionPartitions(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--help"}, []string{"--partitions K", "--max-moves M", "LEASEHOLD_PARTITION"}},
		{[]string{"status", "--help"}, []string{"--partitions K", "members"}},
		{[]string{"completion", "bash"}, []string{"--partitions", "--max-moves"}},
		{[]string{"completion", "zsh"}, []string{"'--partitions[split the lease into K partitions", ":number of partitions:", "'--max-moves[", ":partitions moved per renew interval:"}},
	} {
		out, _, code := runLeasehold(t, c.args...)
		for _, want := range c.want {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("leasehold %v: exit %d, output lacks %q", c.args, code, want)
			}
		}
	}
}
