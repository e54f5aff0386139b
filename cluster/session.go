package cluster

// The store document's field of the holder's session (E12): a document written before it has
// none, and its record is nobody's own.
func init() {
	registerStoreFields(stringField("session", func(r *Record) *string { return &r.Session }))
}
