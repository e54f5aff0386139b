package locker

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/cluster"
)

// sessionLeaseName names the session lease of the Locker of instance id whose session token is
// token (P7): a hash of both, so that two Lockers given one ID (two in a process, or a process
// restarted) never share one, and so that any ID makes a name every Lock accepts (a Kubernetes
// Lease's name is a DNS subdomain).
func sessionLeaseName(id, token string) string {
	sum := sha256.Sum256([]byte(id + "\x00" + token))
	return "locker.session-" + hex.EncodeToString(sum[:8])
}

// keySession is the Session a Locker writes in the record of a key it takes: its session
// token and the epoch (the session lease's term) the key is held under (P8), as partitions
// name their member lease's (D10). A later epoch, even of the same Locker, has another term.
func keySession(token string, epoch uint64) string {
	return token + "." + strconv.FormatUint(epoch, 10)
}

// keyEpoch returns the session token and the epoch a key record's Session names, false when it
// names none: a record written otherwise (by an Elector of its own on the key), which is judged
// by its own revisions (E6).
func keyEpoch(session string) (token string, epoch uint64, ok bool) {
	i := strings.LastIndexByte(session, '.')
	if i <= 0 {
		return "", 0, false
	}
	e, err := strconv.ParseUint(session[i+1:], 10, 64)
	if err != nil || e == 0 {
		return "", 0, false
	}
	return session[:i], e, true
}

// SessionOf returns, for a key's record rec, the name of the session lease it is held under and
// that lease's term (its epoch, P8); ok is false when rec is released or names no session
// lease. The key is held while that lease's record names rec.Holder at that term and has not
// expired: how a tool that does not take keys tells a held key from one whose holder is gone,
// as a key's record is written only when it is taken or released.
func SessionOf(rec cluster.Record) (sessionLease string, epoch uint64, ok bool) {
	if rec.Holder == "" {
		return "", 0, false
	}
	token, epoch, ok := keyEpoch(rec.Session)
	if !ok {
		return "", 0, false
	}
	return sessionLeaseName(rec.Holder, token), epoch, true
}
