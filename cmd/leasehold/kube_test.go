//go:build unix

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/kubernetes/kubetest"
)

// startKube starts a kube-apiserver of the test's own, with ns granted to its restricted user
// (get, create, update and watch on Leases, and the extra verbs), and writes a kubeconfig of
// that user. It skips when the binaries of scripts/kube-binaries are absent, unless
// LEASEHOLD_REQUIRE_KUBE=1.
func startKube(t *testing.T, ns string, extra ...string) (kubeconfig string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	bin, err := kubetest.FindBinaries()
	if err != nil {
		if os.Getenv(kubetest.RequireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir, err := os.MkdirTemp("", "leasehold-cmd-kube-")
	if err != nil {
		t.Fatal(err)
	}
	env, err := kubetest.Start(dir, bin)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		env.Stop()
		os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := env.API.Grant(ctx, ns, append([]string{"get", "create", "update", "watch"}, extra...)...); err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: elector, user: {token: %q}}]
contexts: [{name: elector, context: {cluster: test, user: elector, namespace: %s}}]
current-context: elector
`, env.API.Host, base64.StdEncoding.EncodeToString(env.API.CAData), env.API.UserToken, ns)
	if err := os.WriteFile(kubeconfig, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// --config with a Webda/KubernetesClusterService, end to end against a real API server as a
// user holding only the Lease Role.
func TestConfigOverKubernetes(t *testing.T) {
	kubeconfig := startKube(t, "cmdtest")
	config := func(w *world, lease string) string {
		return writeConfig(t, w.dir, lease+".json", `
		"cluster": {"type": "Webda/KubernetesClusterService", "namespace": "cmdtest", "config": "`+kubeconfig+`",
			"leaseName": "`+lease+`", "leaseDuration": 2000, "renewInterval": 500}`)
	}
	runConfig := func(cfg, id string, extra ...string) []string {
		args := append([]string{"run", "--config", cfg, "--instance-id", id, "--log-format", "json"}, extra...)
		return append(append(args, "--"), helperCmd()...)
	}

	// run --holders 2 runs one CMD per slot (the Leases pool-0 and pool-1), and status
	// --config --lease pool-N reads each slot's Lease, naming the instance that runs its CMD.
	t.Run("holders", func(t *testing.T) {
		w := newWorld(t)
		cfg := config(w, "pool")
		for _, id := range []string{"a", "b", "c"} {
			w.start(id, []string{"LEASEHOLD_TEST_CMD=record-slot"}, runConfig(cfg, id, "--holders", "2")...)
		}
		slots := waitSlots(t, w, 2, "pool")
		for id, slot := range slots {
			out, errOut, code := runLeasehold(t, "status", "--config", cfg, "--lease", "pool-"+slot)
			if code != 0 || !strings.Contains(out, "holder:") || !strings.Contains(out, " "+id+"\n") {
				t.Errorf("status --config --lease pool-%s: exit %d, want 0 naming %s\nstdout:\n%s\nstderr:\n%s", slot, code, id, out, errOut)
			}
		}
	})

	// resign --config --to hands the Lease over: the leader's CMD stops, then the named
	// instance's starts, in a larger term.
	t.Run("resign", func(t *testing.T) {
		w := newWorld(t)
		cfg := config(w, "solo")
		env := []string{"LEASEHOLD_TEST_CMD=record"}
		w.start("a", env, runConfig(cfg, "a")...)
		first, _ := w.waitCmd(30*time.Second, "CMD-START", func(ev cmdEvent) bool { return ev.id == "a" })
		p := w.start("b", env, runConfig(cfg, "b")...)
		w.waitLine(30*time.Second, "b observing a", func(l line) bool {
			m, ok := jsonLog(l.text)
			return ok && l.proc == p && m["msg"] == "leasehold: observed leader" && m["holder"] == "a"
		})
		out, errOut, code := runLeasehold(t, "resign", "--config", cfg, "--to", "b")
		if code != 0 || !strings.Contains(out, fmt.Sprintf("asked a (term %d) to step down and hand over to b", first.term)) {
			t.Fatalf("resign --config --to b: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if stop, _ := w.waitCmd(30*time.Second, "CMD-STOP", nil); stop.id != "a" {
			t.Fatalf("CMD-STOP of %s; want a's", stop.id)
		}
		if start, _ := w.waitCmd(30*time.Second, "CMD-START", nil); start.id != "b" || start.term <= first.term {
			t.Fatalf("next CMD-START: %+v; want b's, in a term above %d", start, first.term)
		}
	})
}

// run --partitions over a Kubernetes cluster service: the partitions are the Leases pool-0 to
// pool-3, the roster one Lease per member (which needs list and delete besides), and two
// instances run two partitions each, then one stops and the other runs all four.
func TestPartitionsOverKubernetes(t *testing.T) {
	const k = 4
	kubeconfig := startKube(t, "cmdparts", "list", "delete")
	w := newWorld(t)
	cfg := writeConfig(t, w.dir, "pool.json", `
		"cluster": {"type": "Webda/KubernetesClusterService", "namespace": "cmdparts", "config": "`+kubeconfig+`",
			"leaseName": "pool", "leaseDuration": 2000, "renewInterval": 500}`)
	env := []string{"LEASEHOLD_TEST_CMD=record-partition"}
	procs := map[string]*proc{}
	for _, id := range []string{"a", "b"} {
		procs[id] = w.start(id, env, append([]string{"run", "--config", cfg, "--instance-id", id, "--partitions", strconv.Itoa(k), "--log-format", "json", "--"}, helperCmd()...)...)
	}
	waitPartitions(t, w, k, 60*time.Second, "4 partitions running, 2 per instance", func(running []partitionRun) bool {
		n := countOwners(running)
		return n["a"] == 2 && n["b"] == 2
	})
	if err := procs["a"].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitPartitions(t, w, k, 60*time.Second, "b running all 4 partitions", func(running []partitionRun) bool {
		return countOwners(running)["b"] == k
	})
}
