package cluster

// A holderField is what a feature has the holder publish in its record (its value, V1; its
// priority and health, Q1, U2): carry sets it in rec as every write that holds the record
// writes it (an acquisition, a renewal, a takeover), for rec's term; clear empties it in a
// record being released, as every release does, since nobody leads. A feature registers its
// holderField from its own file (registerHolderFields, in an init), and the Elector's writes
// go through them all: the election names no feature.
type holderField struct {
	carry func(e *Elector, rec Record) Record
	clear func(rec *Record)
}

// holderFields are the registered fields, in the order of registration.
var holderFields []holderField

func registerHolderFields(fields ...holderField) { holderFields = append(holderFields, fields...) }

// carry returns rec as a write that holds it carries it: what every feature has this
// instance publish, for the record's term.
func (e *Elector) carry(rec Record) Record {
	for _, f := range holderFields {
		rec = f.carry(e, rec)
	}
	return rec
}

// clearHolderFields empties what the holder published in a record being released.
func clearHolderFields(rec *Record) {
	for _, f := range holderFields {
		f.clear(rec)
	}
}
