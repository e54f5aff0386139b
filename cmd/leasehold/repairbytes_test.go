//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/testenv"
	natsstore "github.com/leasehold/leasehold/store/nats"
)

// A record whose bytes are anything (not a JSON object at all) is repaired (C4): written with
// the server's own client, leasehold repair replaces it by a released record at the clock
// floor, and the next leader, a run --try, leads at a term above it. Before the repair, --try
// says the record is unreadable, naming the key and leasehold repair.
func TestRepairAnyBytes(t *testing.T) {
	lease := fmt.Sprintf("rb%d", time.Now().UnixNano())
	key := storeDocs.Key(lease)
	sh := func(t *testing.T, name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	for _, tc := range []struct {
		name   string
		server *testenv.Server
		store  func(t *testing.T, w *world) string // writes the bad bytes, returns the store's URL
		force  bool
	}{
		{"redis garbage", &testenv.Redis, func(t *testing.T, w *world) string {
			sh(t, "redis-cli", "-h", "127.0.0.1", "-p", "6379", "SET", "leasehold:"+key, "garbage{{{")
			t.Cleanup(func() { _ = exec.Command("redis-cli", "-h", "127.0.0.1", "-p", "6379", "DEL", "leasehold:"+key).Run() })
			return "redis://127.0.0.1:6379/0"
		}, false},
		{"postgres JSON string", &testenv.Postgres, func(t *testing.T, w *world) string {
			table := "lh_rb_" + lease
			sh(t, "psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1", "-c",
				`CREATE TABLE `+table+` (id text PRIMARY KEY, doc jsonb NOT NULL); INSERT INTO `+table+` VALUES ('`+key+`', '"a string"')`)
			t.Cleanup(func() {
				_ = exec.Command("psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-c", "DROP TABLE "+table).Run()
			})
			return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&table=" + table
		}, true},
		{"mysql JSON array", &testenv.MySQL, func(t *testing.T, w *world) string {
			table := "lh_rb_" + lease
			sh(t, "mysql", "-h", "127.0.0.1", "-u", "root", "test", "-e",
				`CREATE TABLE `+table+` (id VARBINARY(1024) NOT NULL PRIMARY KEY, doc JSON NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4; INSERT INTO `+table+` VALUES ('`+key+`', '[1, 2]')`)
			t.Cleanup(func() {
				_ = exec.Command("mysql", "-h", "127.0.0.1", "-u", "root", "test", "-e", "DROP TABLE "+table).Run()
			})
			return "mysql://root@127.0.0.1:3306/test?table=" + table
		}, true},
		{"nats not an object", &testenv.NATS, func(t *testing.T, w *world) string {
			bucket := "lh-rb-" + lease
			nc, err := nats.Connect("nats://127.0.0.1:4222")
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Replicas: 1, Storage: jetstream.FileStorage})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(ctx, natsstore.EncodeKey(key), []byte(`"not an object"`)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if nc, err := nats.Connect("nats://127.0.0.1:4222"); err == nil {
					if js, err := jetstream.New(nc); err == nil {
						_ = js.DeleteKeyValue(context.Background(), bucket)
					}
					nc.Close()
				}
			})
			return "nats://127.0.0.1:4222?bucket=" + bucket
		}, true},
		{"truncated file", nil, func(t *testing.T, w *world) string {
			path := strings.TrimPrefix(w.storeURL(), "file://")
			if err := os.WriteFile(path, []byte(`{"`+key+`": {"holder": "web-1", "term": 4`), 0o600); err != nil {
				t.Fatal(err)
			}
			return w.storeURL()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.server != nil {
				tc.server.URL(t) // skips without the server
			}
			w := newWorld(t)
			url := tc.store(t, w)
			common := []string{"--store", url, "--lease", lease, "--lease-duration", testLs}
			if tc.name != "truncated file" { // a corrupt file cannot even be opened by run
				p := w.start("try", []string{"LEASEHOLD_TEST_CMD=record"}, append(append([]string{"run", "--try", "--renew-interval", testRs, "--log-format", "json"}, common...), "--", os.Args[0])...)
				if code := w.waitExit(p, 30*time.Second); code != 1 {
					t.Errorf("run --try over the unreadable record exited %d, want 1", code)
				}
				out := strings.Join(p.output, "\n")
				if !strings.Contains(out, "the lease record is unreadable") || !strings.Contains(out, key) || !strings.Contains(out, "leasehold repair") {
					t.Errorf("run --try over the unreadable record does not say so, naming %q and leasehold repair:\n%s", key, out)
				}
			}
			floor := fencing.Floor(time.Now())
			args := append([]string{"repair"}, common...)
			if tc.force {
				args = append(args, "--force")
			}
			out, errOut, code := runLeasehold(t, args...)
			t.Logf("repair:\n%s%s", out, errOut)
			m := newTermLine.FindStringSubmatch(out)
			if code != 0 || m == nil {
				t.Fatalf("repair: exit %d, want 0 and a new term\n%s%s", code, out, errOut)
			}
			p := w.start("next", []string{"LEASEHOLD_TEST_CMD=record"}, append(append([]string{"run", "--try", "--renew-interval", testRs, "--instance-id", "next", "--log-format", "json"}, common...), "--", os.Args[0])...)
			ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
			if ev.term <= floor {
				t.Errorf("the next leader's term is %d, want above the floor %d", ev.term, floor)
			}
			_ = p.cmd.Process.Signal(os.Interrupt)
			w.waitExit(p, 10*time.Second)
			if tc.name == "truncated file" {
				aside, _ := filepath.Glob(strings.TrimPrefix(url, "file://") + ".corrupt-*")
				if len(aside) != 1 {
					t.Errorf("the damaged file was not kept aside: %v", aside)
				}
			}
		})
	}
}

// run --try over a record whose fields are not a lease record's says the record is
// unreadable, naming its key and leasehold repair, not that the store did not answer.
func TestRunTryUnreadableRecord(t *testing.T) {
	w := newWorld(t)
	putRecord(t, w, "jobs", map[string]any{"holder": 42.0, "term": 3.0, "revision": "r3"})
	p := w.start("try", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "try", "--try")...)
	if code := w.waitExit(p, 30*time.Second); code != 1 {
		t.Errorf("run --try over an unreadable record exited %d, want 1", code)
	}
	out := strings.Join(p.output, "\n")
	if !strings.Contains(out, "the lease record is unreadable") || !strings.Contains(out, "cluster:jobs") || !strings.Contains(out, "leasehold repair") {
		t.Errorf("run --try over an unreadable record does not say so, naming cluster:jobs and leasehold repair:\n%s", out)
	}
}
