package kubelock_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"

	"github.com/leasehold/leasehold/adapters/kubelock"
	"github.com/leasehold/leasehold/store"
	_ "github.com/leasehold/leasehold/store/file"
)

// The environment of a worker process: the store's URL, the lock's name, the identity.
const (
	workerURL  = "KUBELOCK_TEST_WORKER_URL"
	workerName = "KUBELOCK_TEST_WORKER_NAME"
	workerID   = "KUBELOCK_TEST_WORKER_ID"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerURL) != "" {
		os.Exit(runWorker())
	}
	os.Exit(m.Run())
}

// runWorker is the test binary run as one candidate: it elects with client-go over the store,
// writes "leading UNIXNANO TERM" when it starts leading, and exits when its standard input
// closes (its driver went away) or when it stops leading.
func runWorker() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	st, err := store.Open(ctx, os.Getenv(workerURL))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lock, err := kubelock.New(st, os.Getenv(workerName), os.Getenv(workerID))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: testL, RenewDeadline: testRD, RetryPeriod: testRP,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				n, _ := lock.Term()
				fmt.Printf("leading %d %d\n", time.Now().UnixNano(), n)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	le.Run(ctx)
	return 0
}

// worker is a candidate process.
type worker struct {
	id    string
	cmd   *exec.Cmd
	stdin io.Closer
}

// lead is a "leading" line of a worker.
type lead struct {
	id   string
	at   time.Time
	term int
}

// startWorkers runs one process per id, electing over the store at url; their "leading" lines
// come on the returned channel. They are killed at the end of the test.
func startWorkers(t *testing.T, url, name string, ids ...string) (map[string]*worker, <-chan lead) {
	t.Helper()
	leads := make(chan lead, 16)
	ws := map[string]*worker{}
	for _, id := range ids {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), workerURL+"="+url, workerName+"="+name, workerID+"="+id)
		cmd.Stderr = &tail{}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w := &worker{id: id, cmd: cmd, stdin: stdin}
		ws[id] = w
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("stderr of %s: %s", id, cmd.Stderr)
			}
		})
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) == 3 && f[0] == "leading" {
					ns, _ := strconv.ParseInt(f[1], 10, 64)
					n, _ := strconv.Atoi(f[2])
					leads <- lead{id: id, at: time.Unix(0, ns), term: n}
				}
			}
		}()
	}
	return ws, leads
}

func waitLead(t *testing.T, leads <-chan lead) lead {
	t.Helper()
	select {
	case l := <-leads:
		return l
	case <-time.After(60 * time.Second):
		t.Fatal("no worker leads within 60s")
		return lead{}
	}
}

// Three candidate processes: the leader is killed with SIGKILL, and another leads, no sooner
// than LeaseDuration after the killed one's last renewal; then again with the new leader.
func TestProcessesTakeOverKilledLeader(t *testing.T) {
	for _, c := range []struct {
		name string
		url  func(*testing.T) (string, store.Store)
	}{
		{"file", func(t *testing.T) (string, store.Store) {
			path := filepath.Join(t.TempDir(), "store.json")
			st, err := store.Open(t.Context(), "file://"+path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if c, ok := st.(io.Closer); ok {
					c.Close()
				}
			})
			return "file://" + path, st
		}},
		{"postgres", func(t *testing.T) (string, store.Store) {
			return postgresURL(t), openPostgres(t)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, st := c.url(t)
			name := uniqueName(t, st)
			ws, leads := startWorkers(t, url, name, "p1", "p2", "p3")
			cur := waitLead(t, leads)
			for range 2 {
				if err := ws[cur.id].cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				_ = ws[cur.id].cmd.Wait()
				killed := time.Now()
				last := readRecord(t, st, name)
				if last.HolderIdentity != cur.id {
					t.Fatalf("record names %q right after %s was killed, want %s", last.HolderIdentity, cur.id, cur.id)
				}
				next := waitLead(t, leads)
				if next.id == cur.id {
					t.Fatalf("%s leads again after it was killed", next.id)
				}
				if next.at.Before(killed) {
					t.Errorf("%s led at %v, before %s was killed at %v", next.id, next.at, cur.id, killed)
				}
				if early := last.RenewTime.Add(testL).Sub(next.at); early > 0 {
					t.Errorf("%s took over %v before LeaseDuration had passed since %s's last renewal", next.id, early, cur.id)
				}
				if next.term <= cur.term {
					t.Errorf("%s leads with term %d after %s's term %d: want a higher term", next.id, next.term, cur.id, cur.term)
				}
				t.Logf("%s killed (term %d); %s leads (term %d) %v later, %v after the last renewal",
					cur.id, cur.term, next.id, next.term, next.at.Sub(killed).Round(time.Millisecond),
					next.at.Sub(last.RenewTime.Time).Round(time.Millisecond))
				cur = next
			}
		})
	}
}

// tail keeps the end of a worker's stderr for failure messages.
type tail struct{ b []byte }

func (w *tail) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	if len(w.b) > 4096 {
		w.b = w.b[len(w.b)-4096:]
	}
	return len(p), nil
}

func (w *tail) String() string { return string(w.b) }
