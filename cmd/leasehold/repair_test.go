//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// putRecord writes doc as the document of lease in the file store of w, as a hand edit or a
// faulty program would, with nobody running.
func putRecord(t *testing.T, w *world, lease string, doc map[string]any) {
	t.Helper()
	data, err := json.Marshal(map[string]any{storeDocs.Key(lease): doc})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimPrefix(w.storeURL(), "file://"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// readRecord reads the document of lease in the file store of w.
func readRecord(t *testing.T, w *world, lease string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(strings.TrimPrefix(w.storeURL(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	var docs map[string]map[string]any
	if err := json.Unmarshal(data, &docs); err != nil {
		t.Fatal(err)
	}
	return docs[storeDocs.Key(lease)]
}

var newTermLine = regexp.MustCompile(`(?m)^new term:\s+(\d+)`)

// repair runs leasehold repair on the lease jobs of w's store and returns its output, status,
// the new term it printed (0 when none) and how long it took.
func repair(t *testing.T, w *world, extra ...string) (out, errOut string, code int, term uint64, took time.Duration) {
	t.Helper()
	args := append([]string{"repair", "--store", w.storeURL(), "--lease", "jobs", "--lease-duration", testLs}, extra...)
	start := time.Now()
	out, errOut, code = runLeasehold(t, args...)
	took = time.Since(start)
	if m := newTermLine.FindStringSubmatch(out); m != nil {
		term, _ = strconv.ParseUint(m[1], 10, 64)
	}
	return out, errOut, code, term, took
}

// nextLeaderTerm starts an instance on the lease jobs of w's store and returns the term its CMD
// got, then stops it.
func nextLeaderTerm(t *testing.T, w *world) uint64 {
	t.Helper()
	p := w.start("next", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "next")...)
	ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.waitExit(p, 10*time.Second)
	return ev.term
}

// A corrupt record is replaced, after repair watched it for L, by a released record at the
// term above its own; the next leader's term is above that (W8: the fencing term never goes
// backwards). --min-term raises the term, never lowers it.
func TestRepairCorruptRecord(t *testing.T) {
	for _, tc := range []struct {
		name     string
		doc      map[string]any
		args     []string
		wantTerm uint64
	}{
		{"garbage fields", map[string]any{"holder": 42.0, "term": 41.0, "revision": "r1", "renewedAt": "yesterday", "junk": []any{1.0}}, nil, 42},
		{"term as a string", map[string]any{"holder": "web-1", "term": "41", "revision": 7.0}, nil, 42},
		{"min-term above", map[string]any{"holder": 42.0, "term": 41.0, "revision": "r1"}, []string{"--min-term", "100"}, 100},
		{"min-term below", map[string]any{"holder": 42.0, "term": 41.0, "revision": "r1"}, []string{"--min-term", "10"}, 42},
		// wantTerm 0: the clock floor, the term it held being unknown.
		{"unreadable term", map[string]any{"holder": "web-1", "term": "forty", "revision": "r1"}, nil, 0},
		{"unreadable term, min-term", map[string]any{"term": map[string]any{}, "leaseDuration": "long"}, []string{"--min-term", "7"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			putRecord(t, w, "jobs", tc.doc)
			floor := fencing.Floor(time.Now())
			out, errOut, code, term, took := repair(t, w, tc.args...)
			if tc.wantTerm == 0 && term >= floor && term <= fencing.Floor(time.Now()) {
				tc.wantTerm = term
			}
			if code != 0 || term != tc.wantTerm {
				t.Fatalf("repair: exit %d, new term %d; want 0 and %d\nstdout:\n%s\nstderr:\n%s", code, term, tc.wantTerm, out, errOut)
			}
			if took < testL {
				t.Errorf("repair replaced the corrupt record after %v, before watching it for L = %v", took, testL)
			}
			t.Logf("repair of a corrupt record:\n%s", out)
			if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" || st.Term != tc.wantTerm {
				t.Errorf("status after repair: %+v; want released at term %d", st, tc.wantTerm)
			}
			if got := nextLeaderTerm(t, w); got <= tc.wantTerm {
				t.Errorf("the next leader's term is %d, want above %d", got, tc.wantTerm)
			}
		})
	}
}

// --force replaces a corrupt record at once; a record held by an instance is watched anyway.
func TestRepairForce(t *testing.T) {
	w := newWorld(t)
	putRecord(t, w, "jobs", map[string]any{"holder": "web-1", "term": 5.0, "revision": ""})
	out, errOut, code, term, took := repair(t, w, "--force")
	if code != 0 || term != 6 || took >= testL {
		t.Fatalf("repair --force: exit %d, term %d after %v; want 0, 6, at once\nstdout:\n%s\nstderr:\n%s", code, term, took, out, errOut)
	}
}

// A well-formed record needs no repair and is left as it is: released, or held by an instance
// that stopped renewing it (expired, after a watch of L); --min-term above its term raises it.
func TestRepairWellFormed(t *testing.T) {
	w := newWorld(t)
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	putRecord(t, w, "jobs", map[string]any{"holder": "gone", "term": 8.0, "revision": "r8",
		"acquiredAt": old, "renewedAt": old, "leaseDuration": 1000.0})
	path := strings.TrimPrefix(w.storeURL(), "file://")
	before, _ := os.ReadFile(path)
	out, errOut, code, term, took := repair(t, w)
	if code != 0 || term != 0 || !strings.Contains(out, "nothing to repair") || took < testL {
		t.Fatalf("repair of an expired record: exit %d, new term %d, after %v; want 0, no write, after L\nstdout:\n%s\nstderr:\n%s", code, term, took, out, errOut)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("repair of an expired record changed the store:\n%s\nwas:\n%s", after, before)
	}

	out, errOut, code, term, _ = repair(t, w, "--min-term", "30")
	if code != 0 || term != 30 {
		t.Fatalf("repair --min-term 30 of an expired record at term 8: exit %d, term %d; want 0, 30\nstdout:\n%s\nstderr:\n%s", code, term, out, errOut)
	}
	before, _ = os.ReadFile(path)
	out, errOut, code, term, took = repair(t, w, "--min-term", "20")
	if code != 0 || term != 0 || !strings.Contains(out, "nothing to repair") || took >= testL {
		t.Fatalf("repair --min-term 20 of a released record at term 30: exit %d, new term %d after %v; want 0, no write, at once\nstdout:\n%s\nstderr:\n%s", code, term, took, out, errOut)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("repair of a released record changed the store")
	}
	if got := nextLeaderTerm(t, w); got <= 30 {
		t.Errorf("the next leader's term is %d, want above 30", got)
	}
}

// A missing record needs no repair and nothing is created; with --min-term, repair creates a
// released record at that term, and the next leader gets the term above.
func TestRepairMissingRecord(t *testing.T) {
	w := newWorld(t)
	out, errOut, code, term, _ := repair(t, w)
	if code != 0 || term != 0 || !strings.Contains(out, "nothing to repair") {
		t.Fatalf("repair of a missing record: exit %d, term %d; want 0, no write\nstdout:\n%s\nstderr:\n%s", code, term, out, errOut)
	}
	if names := dirNames(t, w.dir); len(names) != 0 {
		t.Errorf("repair of a missing record created %v", names)
	}
	out, errOut, code, term, _ = repair(t, w, "--min-term", "50")
	if code != 0 || term != 50 {
		t.Fatalf("repair --min-term 50 of a missing record: exit %d, term %d; want 0, 50\nstdout:\n%s\nstderr:\n%s", code, term, out, errOut)
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" || st.Term != 50 {
		t.Errorf("status after repair: %+v; want released at term 50", st)
	}
	if got := nextLeaderTerm(t, w); got <= 50 {
		t.Errorf("the next leader's term is %d, want above 50", got)
	}
}

// A record a live leader renews is never replaced, even with --force or --min-term: repair
// exits 1 naming the holder and when its lease expires.
func TestRepairRefusesLiveLeader(t *testing.T) {
	w := newWorld(t)
	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"}, runArgs(w, "leader-1")...)
	led, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	for _, extra := range [][]string{nil, {"--force", "--min-term", "99"}} {
		out, errOut, code, term, took := repair(t, w, extra...)
		if code != 1 || term != 0 || !strings.Contains(errOut, `held by "leader-1"`) || !strings.Contains(errOut, "expires") {
			t.Errorf("repair %v of a live leader's record: exit %d, term %d; want exit 1 naming leader-1 and when it expires\nstdout:\n%s\nstderr:\n%s", extra, code, term, out, errOut)
		}
		if took > testL {
			t.Errorf("repair %v took %v to see a leader that renews every %v", extra, took, testR)
		}
		t.Logf("repair %v of a live leader's record:\n%s%s", extra, out, errOut)
	}
	if doc := readRecord(t, w, "jobs"); doc["holder"] != "leader-1" || doc["term"] != float64(led.term) {
		t.Errorf("the live leader's record after repair: %v; want it held by leader-1 at term %d", doc, led.term)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w.waitExit(p, 10*time.Second)
}

// repair --config mends the lease of the configuration's cluster service, in its Registry.
func TestRepairConfig(t *testing.T) {
	w := newWorld(t)
	cfg := writeConfig(t, w.dir, "app.json", `
		"poller": {"type": "MyApp/Poller"},
		"Registry": {"type": "Webda/FileStore", "path": "`+strings.TrimPrefix(w.storeURL(), "file://")+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseName": "jobs", "leaseDuration": 2000, "renewInterval": 500}`)
	putRecord(t, w, "jobs", map[string]any{"holder": "web-1", "term": 12.0})
	out, errOut, code := runLeasehold(t, "repair", "--config", cfg, "--force")
	if code != 0 || !strings.Contains(out, "new term:  13") {
		t.Fatalf("repair --config: exit %d; want 0 and the new term 13\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	kube := writeConfig(t, w.dir, "kube.json", `"cluster": {"type": "Webda/KubernetesClusterService"}`)
	noRegistry := writeConfig(t, w.dir, "noregistry.json", `"cluster": {"type": "Webda/StoreClusterService"}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"kubernetes", []string{"repair", "--config", kube}, "kubectl"},
		{"no registry", []string{"repair", "--config", noRegistry}, "no Registry"},
		{"store and config", []string{"repair", "--config", cfg, "--store", w.storeURL()}, "--store and --config"},
		{"negative min-term", []string{"repair", "--store", w.storeURL(), "--min-term", "-1"}, "--min-term"},
		{"argument", []string{"repair", "--store", w.storeURL(), "extra"}, "no arguments"},
	} {
		_, stderr, code := runLeasehold(t, tc.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || !strings.Contains(first, tc.want) || !isUsageError(stderr, "leasehold repair") {
			t.Errorf("%s: exit %d, first line %q; want 2, %q and a pointer to --help", tc.name, code, first, tc.want)
		}
	}
}

// interferingStore makes another writer change the record just before each write of repair:
// the write, conditional on the record as repair read it, must lose.
type interferingStore struct {
	store.Store
	t   *testing.T
	key string
}

func (s interferingStore) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := s.Store.Create(ctx, key, map[string]any{"holder": "other", "term": 1.0, "revision": "theirs"}); err != nil {
		s.t.Fatal(err)
	}
	return s.Store.Create(ctx, key, doc)
}

func (s interferingStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := s.Store.Patch(ctx, key, map[string]any{"holder": "other", "revision": "theirs"}, nil); err != nil {
		s.t.Fatal(err)
	}
	return s.Store.Patch(ctx, key, fields, cond)
}

// A record that changed between repair's read and its write is not overwritten: the write is
// a compare-and-swap on the record as read (T2), and repair fails saying so.
func TestRepairDoesNotOverwriteAChange(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		doc     map[string]any // nil: no record
		minTerm uint64
	}{
		{"corrupt", map[string]any{"holder": 42.0, "term": 3.0, "revision": "r3"}, 0},
		{"corrupt without a revision", map[string]any{"holder": 42.0, "term": 3.0}, 0},
		{"released, min-term above", map[string]any{"holder": "", "term": 3.0, "revision": "r3", "acquiredAt": "", "renewedAt": "", "leaseDuration": 0.0}, 10},
		{"missing, min-term", nil, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.New()
			key := storeDocs.Key("jobs")
			if tc.doc != nil {
				if err := mem.Create(ctx, key, tc.doc); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			r := &repairer{st: interferingStore{mem, t, key}, lease: "jobs", where: "mem://", l: 10 * time.Millisecond,
				minTerm: tc.minTerm, force: true, timeout: time.Second, out: &out}
			_, err := r.run(ctx)
			if err == nil || !strings.Contains(err.Error(), "not overwritten") {
				t.Fatalf("repair over a record that changed before its write: %v; want an error saying it was not overwritten\n%s", err, out.String())
			}
			doc, err := mem.Get(ctx, key)
			if err != nil || doc["holder"] != "other" || doc["revision"] != "theirs" {
				t.Fatalf("the record after repair: %v, %v; want the other writer's", doc, err)
			}
		})
	}
}

// A corrupt record that something rewrites while repair watches it is left to that writer.
func TestRepairWatchSeesAWriter(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	key := storeDocs.Key("jobs")
	if err := mem.Create(ctx, key, map[string]any{"holder": 42.0, "term": 3.0, "revision": "r3"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := &repairer{st: mem, lease: "jobs", where: "mem://", l: 2 * time.Second, timeout: time.Second, out: &out}
	written := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		written <- mem.Patch(ctx, key, map[string]any{"note": "fixing it by hand"}, nil)
	}()
	start := time.Now()
	_, err := r.run(ctx)
	if werr := <-written; werr != nil {
		t.Fatal(werr)
	}
	if err == nil || !strings.Contains(err.Error(), "rewritten while repair watched it") {
		t.Fatalf("repair of a record rewritten during the watch: %v; want a refusal\n%s", err, out.String())
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("repair saw the change after %v; it polls every %v", took, r.l/20)
	}
	if doc, _ := mem.Get(ctx, key); doc["revision"] != "r3" || doc["note"] != "fixing it by hand" {
		t.Fatalf("the record after repair: %v; want the writer's", doc)
	}
}

// A file store whose whole file is corrupt cannot be opened: repair moves it aside, keeping
// its bytes, and writes a new file holding a released record at the clock floor; --help
// documents the command.
func TestRepairCorruptFile(t *testing.T) {
	w := newWorld(t)
	path := strings.TrimPrefix(w.storeURL(), "file://")
	garbage := []byte(`{"cluster:jobs": {"term": 4`)
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	floor := fencing.Floor(time.Now())
	out, errOut, code, term, _ := repair(t, w, "--min-term", "5", "--force")
	if code != 0 || term < floor || !strings.Contains(out, "moved:") {
		t.Errorf("repair over a corrupt file: exit %d, term %d; want 0, at least the floor %d, the file moved aside\n%s%s", code, term, floor, out, errOut)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("the damaged file was not kept aside: %v", aside)
	}
	if data, _ := os.ReadFile(aside[0]); !bytes.Equal(data, garbage) {
		t.Errorf("repair changed the damaged file's bytes: %s", data)
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" || st.Term != term {
		t.Errorf("status after repair: %+v; want released at term %d", st, term)
	}
	out, _, code = runLeasehold(t, "repair", "--help")
	if code != 0 || !strings.Contains(out, "Usage: leasehold repair") || !strings.Contains(out, "--min-term") {
		t.Errorf("repair --help: exit %d\n%s", code, out)
	}
}
