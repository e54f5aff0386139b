package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/partition"
)

// rosterVerbs are the verbs a partitioned election's roster needs beside an election's.
var rosterVerbs = []string{"get", "create", "update", "list", "delete"}

// oddIDs are member IDs that are not Lease names: uppercase, slashes, unicode, long.
var oddIDs = []string{
	"web-1",
	"Pod-A/Zone B",
	"Ünïcode / 2 ☃",
	strings.Repeat("Long/ID-", 80), // 640 characters
}

func rosterOf(t *testing.T, lock cluster.Lock) cluster.Roster {
	t.Helper()
	r, ok := lock.(cluster.Roster)
	if !ok {
		t.Fatalf("%T is not a cluster.Roster", lock)
	}
	return r
}

func sortedMembers(ms []cluster.Member) []cluster.Member {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b cluster.Member) int { return strings.Compare(a.ID, b.ID) })
	return ms
}

// TestRosterNames: a member Lease's name is a valid Lease name (a DNS subdomain of at most
// 253 characters) for any roster name and member ID, one per roster and member; a roster's
// label is a valid label value, the roster's name itself when it is one.
func TestRosterNames(t *testing.T) {
	rosters := []string{partition.RosterName("jobs"), partition.RosterName(strings.Repeat("a", 250)), "Jobs/Ünï.members", "", "-.-", strings.Repeat("x.", 200)}
	seen := map[string]string{}
	labels := map[string]string{}
	for _, r := range rosters {
		for _, id := range append(slices.Clone(oddIDs), "") {
			name := MemberLeaseName(r, id)
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				t.Errorf("member %q of roster %q: Lease name %q: %v", id, r, name, errs)
			}
			key := r + "\x00" + id
			if prev, ok := seen[name]; ok && prev != key {
				t.Errorf("Lease name %q for both %q and %q", name, prev, key)
			}
			seen[name] = key
		}
		l := rosterLabel(r)
		if errs := validation.IsValidLabelValue(l); len(errs) > 0 || l == "" {
			t.Errorf("roster %q: label %q: %v", r, l, errs)
		}
		if prev, ok := labels[l]; ok && prev != r {
			t.Errorf("label %q for both rosters %q and %q", l, prev, r)
		}
		labels[l] = r
	}
	if got := rosterLabel("jobs.members"); got != "jobs.members" {
		t.Errorf("label of jobs.members: %q", got)
	}
	if got := MemberLeaseName("jobs.members", "web-1"); !strings.HasPrefix(got, "jobs.members-") || len(got) != len("jobs.members-")+rosterHashLen {
		t.Errorf("Lease of web-1 in jobs.members: %q, want jobs.members-HASH", got)
	}
}

// TestRosterRoundTrip: Beat, Members and Leave over the API server (D5) with odd member IDs:
// each member's own Lease, named MemberLeaseName, holds the ID as holderIdentity, the duration
// rounded up as leaseDurationSeconds, the roster's label, and the session, beat and duration
// as annotations; a second beat updates it; Leave deletes it (twice is fine); Members reads
// back exactly the members left; a malformed annotation is an error naming the Lease and the
// annotation.
func TestRosterRoundTrip(t *testing.T) {
	s := api(t)
	ns := grant(t, s, rosterVerbs...)
	lock, admin := newLock(t, ns)
	r := rosterOf(t, lock)
	ctx := t.Context()
	name := partition.RosterName("jobs")

	if ms, err := r.Members(ctx, name); err != nil || len(ms) != 0 {
		t.Fatalf("Members of a roster with no Lease: %+v, %v; want none, no error", ms, err)
	}
	want := make([]cluster.Member, len(oddIDs))
	for i, id := range oddIDs {
		want[i] = cluster.Member{ID: id, Session: fmt.Sprintf("%016x", i+1), Beat: uint64(i + 1), Duration: 1500 * time.Millisecond}
		if err := r.Beat(ctx, name, want[i]); err != nil {
			t.Fatalf("Beat(%q): %v", id, err)
		}
	}
	want[1].Beat, want[1].Duration = 7, 2*time.Second
	if err := r.Beat(ctx, name, want[1]); err != nil {
		t.Fatal(err)
	}
	got, err := r.Members(ctx, name)
	if err != nil || !slices.Equal(sortedMembers(got), sortedMembers(want)) {
		t.Fatalf("Members = %+v, %v; want %+v", got, err, want)
	}

	leases := admin.CoordinationV1().Leases(ns)
	for _, m := range want {
		ln := MemberLeaseName(name, m.ID)
		lease, err := leases.Get(ctx, ln, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("member %q: %v", m.ID, err)
		}
		secs := int32((m.Duration + time.Second - 1) / time.Second)
		switch {
		case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != m.ID:
			t.Errorf("Lease %s: holderIdentity %v, want %q", ln, lease.Spec.HolderIdentity, m.ID)
		case lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != secs:
			t.Errorf("Lease %s: leaseDurationSeconds %v, want %d", ln, lease.Spec.LeaseDurationSeconds, secs)
		case lease.Labels[LabelRoster] != name || lease.Annotations[AnnotationRoster] != name:
			t.Errorf("Lease %s: label %q, roster annotation %q, want %q", ln, lease.Labels[LabelRoster], lease.Annotations[AnnotationRoster], name)
		case lease.Annotations[AnnotationSession] != m.Session || lease.Annotations[AnnotationBeat] != fmt.Sprint(m.Beat) ||
			lease.Annotations[AnnotationDurationMillis] != fmt.Sprint(m.Duration.Milliseconds()):
			t.Errorf("Lease %s: annotations %v, want member %+v", ln, lease.Annotations, m)
		}
	}
	kubectlGetLease(t, s, ns, MemberLeaseName(name, oddIDs[0]))

	// Another writer adds a label to a member's Lease: its next beat re-reads and keeps it.
	ln := MemberLeaseName(name, want[0].ID)
	lease, err := leases.Get(ctx, ln, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Labels["team"] = "blue"
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want[0].Beat++
	if err := r.Beat(ctx, name, want[0]); err != nil {
		t.Fatalf("Beat after another writer's update: %v", err)
	}
	if lease, err = leases.Get(ctx, ln, metav1.GetOptions{}); err != nil || lease.Labels["team"] != "blue" || lease.Annotations[AnnotationBeat] != fmt.Sprint(want[0].Beat) {
		t.Fatalf("Lease %s after the beat: %v, %v", ln, lease.ObjectMeta, err)
	}

	for range 2 {
		if err := r.Leave(ctx, name, want[3].ID); err != nil {
			t.Fatalf("Leave: %v", err)
		}
	}
	if _, err := leases.Get(ctx, MemberLeaseName(name, want[3].ID), metav1.GetOptions{}); err == nil {
		t.Fatal("the Lease of a member that left is still there")
	}
	want = want[:3]
	got, err = r.Members(ctx, name)
	if err != nil || !slices.Equal(sortedMembers(got), sortedMembers(want)) {
		t.Fatalf("Members after Leave = %+v, %v; want %+v", got, err, want)
	}

	// A member that left beats again: its Lease is created again.
	want = append(want, cluster.Member{ID: oddIDs[3], Session: "ffffffffffffffff", Beat: 1, Duration: time.Second})
	if err := r.Beat(ctx, name, want[3]); err != nil {
		t.Fatal(err)
	}
	if got, err = r.Members(ctx, name); err != nil || !slices.Equal(sortedMembers(got), sortedMembers(want)) {
		t.Fatalf("Members after a rejoin = %+v, %v; want %+v", got, err, want)
	}

	// A malformed beat is an error naming the Lease and the annotation.
	ln = MemberLeaseName(name, want[2].ID)
	if lease, err = leases.Get(ctx, ln, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	lease.Annotations[AnnotationBeat] = "many"
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Members(ctx, name); err == nil || !strings.Contains(err.Error(), ln) || !strings.Contains(err.Error(), AnnotationBeat) {
		t.Fatalf("Members with a malformed beat: %v; want an error naming %s and %s", err, ln, AnnotationBeat)
	}
}

// TestRosterSeparate: two rosters in one namespace, with a member of the same ID in both, and
// a roster whose name is no label value (its label is hashed), never see each other's members;
// a member leaving one stays in the other.
func TestRosterSeparate(t *testing.T) {
	s := api(t)
	ns := grant(t, s, rosterVerbs...)
	lock, _ := newLock(t, ns)
	r := rosterOf(t, lock)
	ctx := t.Context()
	long := partition.RosterName(strings.Repeat("very-long-lease-name.", 5))
	rosters := []string{partition.RosterName("a"), partition.RosterName("b"), long}
	want := map[string][]cluster.Member{}
	for i, name := range rosters {
		for j, id := range []string{"shared", fmt.Sprintf("only-%d", i)} {
			m := cluster.Member{ID: id, Session: fmt.Sprintf("s%d%d", i, j), Beat: uint64(10*i + j + 1), Duration: 2 * time.Second}
			if err := r.Beat(ctx, name, m); err != nil {
				t.Fatal(err)
			}
			want[name] = append(want[name], m)
		}
	}
	if err := r.Leave(ctx, rosters[0], "shared"); err != nil {
		t.Fatal(err)
	}
	want[rosters[0]] = want[rosters[0]][1:]
	for _, name := range rosters {
		got, err := r.Members(ctx, name)
		if err != nil || !slices.Equal(sortedMembers(got), sortedMembers(want[name])) {
			t.Errorf("Members(%q) = %+v, %v; want %+v", name, got, err, want[name])
		}
	}
	if ms, err := r.Members(ctx, partition.RosterName("c")); err != nil || len(ms) != 0 {
		t.Errorf("Members of a roster no one beat: %+v, %v", ms, err)
	}
}

// TestRosterForbiddenNamesVerbs: under a Role of an election's three verbs only, Members is
// refused, and its error says which permissions a roster needs.
func TestRosterForbiddenNamesVerbs(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	lock, _ := newLock(t, ns)
	_, err := rosterOf(t, lock).Members(t.Context(), partition.RosterName("jobs"))
	if err == nil || !strings.Contains(err.Error(), "list and delete on leases.coordination.k8s.io") {
		t.Fatalf("Members without list: %v; want an error naming the verbs", err)
	}
}

// TestPartitionsOnKubernetes: three partition.Partitions over the Lease lock (D5–D8), K = 6, the
// tests' L and R, each instance as the restricted user with the roster's verbs and watch.
// Sampled all along, no partition ever has two owners; the partitions settle at 2 each, all
// owned; once one instance stops, the other two own all 6, 3 each, and the roster lists them
// alone.
func TestPartitionsOnKubernetes(t *testing.T) {
	s := api(t)
	ns := grant(t, s, append(slices.Clone(rosterVerbs), "watch")...)
	const k = 6
	ev := newEvents()
	ids := []string{"pod-a", "pod-b", "pod-c"}
	ps := map[string]*partition.Partitions{}
	var logs syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	var lock cluster.Lock
	for _, id := range ids {
		user, err := k8s.NewForConfig(s.Config(s.UserToken))
		if err != nil {
			t.Fatal(err)
		}
		lock = NewLeaseLock(user.CoordinationV1(), ns, testL-testR)
		p, err := partition.New(partition.Config{
			Lock: lock, LeaseName: "jobs", Partitions: k, LeaseDuration: testL, RenewInterval: testR, InstanceID: id,
			Observer: ev.observe, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("instance", id),
		})
		if err != nil {
			t.Fatalf("partition.New over the Lease lock: %v", err)
		}
		ps[id] = p
	}
	start := time.Now()
	for _, id := range ids {
		p := ps[id]
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Stop(ctx); err != nil {
				t.Errorf("Stop %s: %v", id, err)
			}
		})
	}

	// The sampler: owners of each partition, all instances read in turn, then the first
	// instance of a pair read again, so that a handover between two reads is not taken for two
	// owners: X owning p before and after Y's read that says Y owns it is two owners.
	var (
		mu       sync.Mutex
		running  = map[string]bool{"pod-a": true, "pod-b": true, "pod-c": true}
		twice    []string
		samples  int
		stopSamp = make(chan struct{})
		sampled  = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSamp:
				return
			case <-time.After(10 * time.Millisecond):
			}
			first := map[string][]int{}
			for _, id := range ids {
				first[id] = ps[id].Owned()
			}
			again := map[string][]int{}
			for _, id := range ids {
				again[id] = ps[id].Owned()
			}
			mu.Lock()
			samples++
			for i, x := range ids {
				for _, y := range ids[i+1:] {
					for _, p := range first[y] {
						if slices.Contains(first[x], p) && slices.Contains(again[x], p) {
							twice = append(twice, fmt.Sprintf("partition %d owned by %s and %s at %v", p, x, y, time.Since(start)))
						}
					}
				}
			}
			mu.Unlock()
		}
	}()
	stopSampler := func() {
		select {
		case <-stopSamp:
		default:
			close(stopSamp)
		}
		<-sampled
	}
	t.Cleanup(stopSampler)
	checkOwners := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(twice) > 0 {
			t.Fatalf("two owners at once (%d times in %d samples): %s", len(twice), samples, strings.Join(twice[:min(5, len(twice))], "; "))
		}
	}

	// counts returns each running instance's number of partitions and whether all K are owned.
	counts := func() (map[string]int, bool) {
		mu.Lock()
		defer mu.Unlock()
		c := map[string]int{}
		owned := map[int]bool{}
		for _, id := range ids {
			if !running[id] {
				continue
			}
			for _, p := range ps[id].Owned() {
				owned[p] = true
				c[id]++
			}
		}
		return c, len(owned) == k
	}
	// settle waits, on the instances' events, until every running instance owns share
	// partitions and all K are owned.
	settle := func(share int, timeout time.Duration, what string) time.Duration {
		t.Helper()
		begin := time.Now()
		deadline := time.After(timeout)
		for {
			ev.mu.Lock()
			changed := ev.changed
			ev.mu.Unlock()
			c, all := counts()
			even := all
			for id, r := range running {
				if r && c[id] != share {
					even = false
				}
			}
			if even {
				return time.Since(begin)
			}
			checkOwners()
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("%s: not settled within %v: owned %v, all owned %v", what, timeout, c, all)
			}
		}
	}

	took := settle(2, 30*time.Second, "three members")
	t.Logf("three members: 2 partitions each %v after the start", took)
	for _, id := range ids {
		t.Logf("%s owns %v", id, ps[id].Owned())
	}
	r := rosterOf(t, lock)
	ms, err := r.Members(t.Context(), partition.RosterName("jobs"))
	if err != nil || len(ms) != 3 {
		t.Fatalf("roster of three members: %+v, %v", ms, err)
	}

	leaving := "pod-b"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped := time.Now()
	mu.Lock()
	running[leaving] = false
	mu.Unlock()
	if err := ps[leaving].Stop(ctx); err != nil {
		t.Fatalf("Stop %s: %v", leaving, err)
	}
	if owned := ps[leaving].Owned(); len(owned) != 0 {
		t.Fatalf("%s owns %v once stopped", leaving, owned)
	}
	took = settle(3, 30*time.Second, "two members after a Stop")
	t.Logf("two members: 3 partitions each %v after %s's Stop returned (%v after it began)", took, leaving, time.Since(stopped))
	for _, id := range ids {
		t.Logf("%s owns %v", id, ps[id].Owned())
	}
	ms, err = r.Members(t.Context(), partition.RosterName("jobs"))
	gotIDs := []string{}
	for _, m := range ms {
		gotIDs = append(gotIDs, m.ID)
	}
	slices.Sort(gotIDs)
	if err != nil || !slices.Equal(gotIDs, []string{"pod-a", "pod-c"}) {
		t.Fatalf("roster after %s left: %v, %v; want pod-a and pod-c", leaving, gotIDs, err)
	}
	stopSampler()
	checkOwners()
	mu.Lock()
	t.Logf("%d samples of the owners, never two owners of a partition", samples)
	mu.Unlock()
}
