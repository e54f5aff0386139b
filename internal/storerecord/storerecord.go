// Package storerecord names what the repository's tools ask of the store Lock
// (cluster.NewStoreLock) beyond the Lock interface: its documents, as it writes and reads them.
// A tool that repairs a record, or a suite that writes one as an older version did, gets them
// from the Lock itself, so that they are the elections' own and cluster exports nothing for
// them:
//
//	codec := cluster.NewStoreLock(st).(storerecord.Codec[cluster.Record])
package storerecord

// Codec is the store Lock's record document codec.
type Codec[R any] interface {
	// Key returns the key of lease's document in the store ("cluster:" + lease, S1).
	Key(lease string) string
	// Encode returns the document the Lock writes for r, r.Revision included.
	Encode(r R) map[string]any
	// Decode reads a document as the Lock does: a malformed one is an error naming the key
	// and the field.
	Decode(key string, doc map[string]any) (R, error)
	// NewRevision returns a revision for a record written outside an election: unique, as
	// the elections' followers need to tell two writes apart (E6).
	NewRevision() string
}
