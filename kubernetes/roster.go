package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/leasehold/leasehold/cluster"
)

// The roster of a partitioned election (D5) on Kubernetes is one Lease per member, so that
// members never write the same object: a member's beat is an update of its own Lease, which no
// other member's write can conflict with. The Leases of a roster carry its label, and one List
// with a label selector reads them all.
const (
	// LabelRoster labels each member Lease with its roster: the roster's name when it is a
	// valid label value, otherwise (rosterLabel) a label-safe prefix of it and a hash of it.
	LabelRoster = "leasehold.dev/roster"
	// AnnotationRoster is the roster's name as it is, which tells the members of two rosters
	// apart even if their labels were ever to collide.
	AnnotationRoster = "leasehold.dev/roster"
	// AnnotationBeat is the member's beat counter (cluster.Member.Beat), in decimal. The
	// member's session (cluster.Member.Session) is AnnotationSession.
	AnnotationBeat = "leasehold.dev/beat"
	// AnnotationDurationMillis is the duration the member declares (cluster.Member.Duration),
	// in milliseconds; spec.leaseDurationSeconds is the same rounded up to whole seconds, for
	// Kubernetes tools.
	AnnotationDurationMillis = "leasehold.dev/duration-ms"
)

var _ cluster.Roster = (*leaseLock)(nil)

// rosterHashLen is the number of hex digits of the hashes in member Lease names and in
// roster labels: 64 bits.
const rosterHashLen = 16

// maxRosterPrefix is the longest roster name a member Lease's name starts with: the name is
// PREFIX-HASH, within the 253 characters of a DNS subdomain.
const maxRosterPrefix = validation.DNS1123SubdomainMaxLength - 1 - rosterHashLen

// MemberLeaseName names the Lease of member in roster (D5): PREFIX-HASH, where PREFIX is the
// roster's name when it is a valid Lease name of up to 236 characters (partition.RosterName
// gives NAME.members, which is one for a valid Lease NAME of up to 228), otherwise the name
// lowercased, each run of other characters than a-z and 0-9 made one "-", cut to 236; and HASH
// is 16 hex digits of the SHA-256 of the roster's name, a NUL byte and the member's ID. So any
// ID (uppercase, "/", unicode, any length) makes a valid Lease name of at most 253 characters,
// and the members of two rosters whose names map to the same PREFIX still have Leases of
// their own.
func MemberLeaseName(roster, member string) string {
	prefix := roster
	if len(prefix) > maxRosterPrefix || len(validation.IsDNS1123Subdomain(prefix)) > 0 {
		prefix = sanitize(strings.ToLower(roster), func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }, maxRosterPrefix)
	}
	if prefix == "" {
		prefix = "roster"
	}
	return prefix + "-" + shortHash(roster+"\x00"+member)
}

// rosterLabel is the value of LabelRoster for roster: its name when it is a valid label value
// (63 characters at most, alphanumerics, "-", "_" and ".", alphanumeric at both ends),
// otherwise a label-safe prefix of it, "-" and 16 hex digits of the SHA-256 of the name.
func rosterLabel(roster string) string {
	if len(validation.IsValidLabelValue(roster)) == 0 && roster != "" {
		return roster
	}
	keep := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.'
	}
	prefix := sanitize(roster, keep, validation.LabelValueMaxLength-1-rosterHashLen)
	prefix = strings.Trim(prefix, "-_.") // alphanumeric at both ends
	if prefix == "" {
		return "r-" + shortHash(roster)
	}
	return prefix + "-" + shortHash(roster)
}

// sanitize keeps the runes of s that keep accepts, makes each run of others one "-", trims
// "-" at both ends and cuts the result to max bytes (then trims again).
func sanitize(s string, keep func(rune) bool, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		if keep(r) {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > max {
		out = strings.Trim(out[:max], "-")
	}
	return out
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:rosterHashLen]
}

// Beat writes m as its member Lease of the roster name (MemberLeaseName), creating it if
// needed: spec.holderIdentity is the ID, spec.leaseDurationSeconds the duration rounded up,
// spec.renewTime the time of the beat, and the session, the beat and the duration in
// milliseconds are annotations (AnnotationSession, AnnotationBeat, AnnotationDurationMillis),
// beside the roster's label and name (LabelRoster, AnnotationRoster). The Lease is the
// member's alone: a 409 Conflict (another writer changed it, a label added by hand, a restarted
// process of the same ID) is answered by reading it again and writing again, keeping the
// labels and annotations others put on it.
func (l *leaseLock) Beat(ctx context.Context, name string, m cluster.Member) error {
	if m.ID == "" {
		return fmt.Errorf("kubernetes: roster %q: a member needs an ID", name)
	}
	if m.Duration < time.Millisecond {
		return fmt.Errorf("kubernetes: roster %q: member %q: duration %v, want at least 1ms", name, m.ID, m.Duration)
	}
	lname := MemberLeaseName(name, m.ID)
	var cur *coordinationv1.Lease
	l.mu.Lock()
	if prev := l.last[lname]; prev != nil {
		cur = prev.DeepCopy()
	}
	l.mu.Unlock()
	for range 5 {
		if cur == nil {
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lname, Namespace: l.namespace}}
			setMember(lease, name, m)
			created, err := l.createLease(ctx, lease)
			if err == nil {
				l.remember(created)
				return nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return l.rosterFail("create", name, lname, err)
			}
		} else {
			setMember(cur, name, m)
			updated, err := l.updateLease(ctx, cur)
			if err == nil {
				l.remember(updated)
				return nil
			}
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return l.rosterFail("update", name, lname, err)
			}
		}
		// Created, changed or deleted by another writer meanwhile: read it again.
		got, err := l.getLease(ctx, lname)
		switch {
		case apierrors.IsNotFound(err):
			cur = nil
			l.forget(lname)
		case err != nil:
			return l.rosterFail("get", name, lname, err)
		default:
			cur = got.DeepCopy()
		}
	}
	return fmt.Errorf("kubernetes: roster %q: Lease %s/%s of member %q changed at each of 5 writes", name, l.namespace, lname, m.ID)
}

// setMember writes m as the member Lease of roster into lease, keeping what else is on it.
func setMember(lease *coordinationv1.Lease, roster string, m cluster.Member) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[LabelRoster] = rosterLabel(roster)
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[AnnotationRoster] = roster
	lease.Annotations[AnnotationSession] = m.Session
	lease.Annotations[AnnotationBeat] = strconv.FormatUint(m.Beat, 10)
	lease.Annotations[AnnotationDurationMillis] = strconv.FormatInt(m.Duration.Milliseconds(), 10)
	id := m.ID
	secs := leaseSeconds(m.Duration)
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.HolderIdentity = &id
	lease.Spec.LeaseDurationSeconds = &secs
	lease.Spec.RenewTime = &now
	if lease.Spec.AcquireTime == nil {
		lease.Spec.AcquireTime = &now
	}
}

// Leave deletes the member Lease of member in the roster name; a Lease already gone is fine.
func (l *leaseLock) Leave(ctx context.Context, name, member string) error {
	lname := MemberLeaseName(name, member)
	bctx, cancel := l.bound(ctx)
	defer cancel()
	err := l.client.Delete(bctx, lname, metav1.DeleteOptions{})
	l.forget(lname)
	if err != nil && !apierrors.IsNotFound(err) {
		return l.rosterFail("delete", name, lname, err)
	}
	return nil
}

// Members lists the Leases labelled with the roster name (one List, LabelRoster) and decodes
// them; none, and no error, when there are none. A Lease of another roster whose label is the
// same (AnnotationRoster differs) is left out, as is one without a holderIdentity (no member).
// A missing or malformed annotation is an error naming the Lease and the annotation.
func (l *leaseLock) Members(ctx context.Context, name string) ([]cluster.Member, error) {
	bctx, cancel := l.bound(ctx)
	defer cancel()
	list, err := l.client.List(bctx, metav1.ListOptions{LabelSelector: LabelRoster + "=" + rosterLabel(name)})
	if err != nil {
		return nil, l.rosterFail("list", name, "", err)
	}
	var out []cluster.Member
	for i := range list.Items {
		lease := &list.Items[i]
		m, ok, err := readMember(lease, name)
		if err != nil {
			return nil, fmt.Errorf("kubernetes: roster %q: Lease %s/%s: %w", name, l.namespace, lease.Name, err)
		}
		if ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// readMember decodes a member Lease of roster; ok is false for a Lease that is not one of its
// members.
func readMember(lease *coordinationv1.Lease, roster string) (m cluster.Member, ok bool, err error) {
	a := lease.Annotations
	r, has := a[AnnotationRoster]
	if !has {
		return m, false, fmt.Errorf("annotation %s is missing", AnnotationRoster)
	}
	if r != roster {
		return m, false, nil // another roster's, whose label is the same
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return m, false, nil
	}
	m.ID = *lease.Spec.HolderIdentity
	if m.Session, has = a[AnnotationSession]; !has {
		return m, false, fmt.Errorf("annotation %s is missing", AnnotationSession)
	}
	s, has := a[AnnotationBeat]
	if m.Beat, err = strconv.ParseUint(s, 10, 64); !has || err != nil {
		return m, false, fmt.Errorf("annotation %s is %q, want a beat counter", AnnotationBeat, s)
	}
	s, has = a[AnnotationDurationMillis]
	ms, err := strconv.ParseInt(s, 10, 64)
	if !has || err != nil || ms <= 0 {
		return m, false, fmt.Errorf("annotation %s is %q, want a positive number of milliseconds", AnnotationDurationMillis, s)
	}
	m.Duration = time.Duration(ms) * time.Millisecond
	return m, true, nil
}

func (l *leaseLock) getLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	return l.client.Get(ctx, name, metav1.GetOptions{})
}

func (l *leaseLock) createLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	return l.client.Create(ctx, lease, metav1.CreateOptions{})
}

func (l *leaseLock) updateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	return l.client.Update(ctx, lease, metav1.UpdateOptions{})
}

// forget drops the Lease name from those remembered (it was deleted).
func (l *leaseLock) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, name)
}

// rosterFail names the roster and the Lease of a failed request; a Forbidden answer says which
// permissions a roster needs.
func (l *leaseLock) rosterFail(op, roster, lease string, err error) error {
	if apierrors.IsForbidden(err) {
		err = fmt.Errorf("%w (a partitioned election's roster needs get, create, update, list and delete on leases.coordination.k8s.io in namespace %q)", err, l.namespace)
	}
	if lease == "" {
		return fmt.Errorf("kubernetes: roster %q: %s Leases in %s: %w", roster, op, l.namespace, err)
	}
	return fmt.Errorf("kubernetes: roster %q: %s Lease %s/%s: %w", roster, op, l.namespace, lease, err)
}
