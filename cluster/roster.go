package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/store"
)

// Member is one entry of the roster of a partitioned election (D5): an instance, the session
// of the process that wrote it (E12), a counter it increases at each write of its entry, and
// the duration it declares (its L). The roster says who takes part; whether a member is alive
// is its member lease's business (D10). A user reads it to list who takes part in a
// partitioned election (Roster.Members, as leasehold status does); cluster/partition writes it.
type Member struct {
	ID       string
	Session  string
	Beat     uint64
	Duration time.Duration
}

// Roster is implemented by a Lock that keeps the members of a partitioned election (D5): one
// document per election, in which each member writes only its own entry, without a
// compare-and-swap, so that members joining and leaving never race. The store Lock and the
// Kubernetes Lock implement it; a user implements it only for a Lock of their own that should
// carry partitions.
type Roster interface {
	// Beat writes m as its entry in the roster name, creating the roster if needed.
	Beat(ctx context.Context, name string, m Member) error
	// Leave empties the entry of member in the roster name: it has stopped.
	Leave(ctx context.Context, name, member string) error
	// Members returns the entries of the roster name, none (and no error) when it does not
	// exist. Entries emptied by Leave are left out.
	Members(ctx context.Context, name string) ([]Member, error)
}

var _ Roster = storeLock{}

// rosterField is the field of member's entry in a roster document: "m" and the ID in hex, so
// that any instance ID makes a field name every store accepts as it is.
func rosterField(member string) string { return "m" + hex.EncodeToString([]byte(member)) }

// Beat patches the member's own field of the roster document "cluster:NAME": no other writer
// touches it, so no condition is needed; a missing document is created with it.
func (l storeLock) Beat(ctx context.Context, name string, m Member) error {
	if m.ID == "" || strings.Contains(m.Session, ":") {
		return fmt.Errorf("cluster: roster %q: a member needs an ID and a session without ':'", name)
	}
	fields := map[string]any{rosterField(m.ID): m.Session + ":" + strconv.FormatUint(m.Beat, 10) + ":" + strconv.FormatInt(m.Duration.Milliseconds(), 10)}
	key := storeKeyPrefix + name
	for range 3 {
		err := l.s.Patch(ctx, key, fields, nil)
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err = l.s.Create(ctx, key, fields); !errors.Is(err, store.ErrExists) {
			return err
		}
		// Created by another member meanwhile: patch it.
	}
	return fmt.Errorf("cluster: roster %q: created and deleted concurrently", name)
}

// Leave empties the member's field: a roster keeps no history, and an empty entry is no member.
func (l storeLock) Leave(ctx context.Context, name, member string) error {
	err := l.s.Patch(ctx, storeKeyPrefix+name, map[string]any{rosterField(member): ""}, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// Members reads the roster document; a malformed entry is an error naming the roster and the
// member, so that it is reported rather than silently dropped.
func (l storeLock) Members(ctx context.Context, name string) ([]Member, error) {
	doc, err := l.s.Get(ctx, storeKeyPrefix+name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Member
	for f, v := range doc {
		id, err := hex.DecodeString(strings.TrimPrefix(f, "m"))
		if !strings.HasPrefix(f, "m") || err != nil || len(id) == 0 {
			continue // not an entry (a store's own field)
		}
		s, _ := v.(string)
		if s == "" {
			continue // left
		}
		m, err := parseMember(string(id), s)
		if err != nil {
			return nil, fmt.Errorf("cluster: roster %q: member %q: %w", name, id, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMember(id, s string) (Member, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Member{}, fmt.Errorf("entry %q, want SESSION:BEAT:MILLISECONDS", s)
	}
	beat, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return Member{}, fmt.Errorf("entry %q: beat %q is not a counter", s, parts[1])
	}
	ms, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || ms <= 0 {
		return Member{}, fmt.Errorf("entry %q: duration %q is not a positive number of milliseconds", s, parts[2])
	}
	return Member{ID: id, Session: parts[0], Beat: beat, Duration: time.Duration(ms) * time.Millisecond}, nil
}
