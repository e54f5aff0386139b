package linearize

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// kind is an operation on the register.
type kind uint8

const (
	opGet kind = iota
	opCreate
	opPatch  // conditioned on the value read last
	opDelete // conditioned on the value read last
	numKinds
	// opEnd is no call: the end of a history, after every definite answer (see closed). The
	// unknown outcomes linearized after it are those that took no effect.
	opEnd = numKinds
)

// ended is the state after opEnd.
const ended int64 = -1

func (k kind) String() string {
	return [...]string{"get", "create", "patch", "delete", "end"}[k]
}

// result is an operation's answer, as the model sees it.
type result uint8

const (
	resOK result = iota
	resNotFound
	resExists
	resConditionFailed
	// resUnknown: the call ended without a definite answer (a deadline, a lost connection):
	// the operation may or may not have taken effect, at any moment after its call.
	resUnknown
)

func (r result) String() string {
	return [...]string{"ok", "not found", "exists", "condition failed", "unknown"}[r]
}

// input is what a client asked for. Every value written is new (a counter), so that a value
// read names the one write that made it. The register holds the value of its document's field
// "v"; 0 stands for no document.
type input struct {
	Kind kind
	Cond int64 // the value a Patch or Delete is conditioned on
	Val  int64 // the value a Create or Patch writes
}

type output struct {
	Res result
	Val int64 // the value a successful Get read
}

// info is an operation's metadata, shown by the visualization and the failure report.
type info struct {
	Client   int
	Deadline time.Duration // 0: the generous one
	Err      string
	Cut      string // the answer of a call in flight where a history was cut short
}

// step is the sequential specification of the register: a compare-and-swap register with an
// absent state, as store.Store promises it for one key (T1, T2).
func step(state int64, in input, out output) (bool, int64) {
	if in.Kind == opEnd {
		return state != ended, ended
	}
	if state == ended {
		// Only the unknown outcomes follow the end: they took no effect.
		return out.Res == resUnknown, ended
	}
	if out.Res == resUnknown {
		// Linearized before the end, the operation took effect there: only where it could.
		// Where it could not, it would change nothing, as it does after the end: leaving that
		// to the end spares the search as many branches that lead to the same states.
		switch in.Kind {
		case opCreate:
			return state == 0, in.Val
		case opPatch:
			return state != 0 && state == in.Cond, in.Val
		case opDelete:
			return state != 0 && state == in.Cond, 0
		}
		return false, state
	}
	switch in.Kind {
	case opGet:
		switch out.Res {
		case resOK:
			return state != 0 && state == out.Val, state
		case resNotFound:
			return state == 0, state
		}
	case opCreate:
		switch out.Res {
		case resOK:
			return state == 0, in.Val
		case resExists:
			return state != 0, state
		}
	case opPatch, opDelete:
		next := in.Val
		if in.Kind == opDelete {
			next = 0
		}
		switch out.Res {
		case resOK:
			return state != 0 && state == in.Cond, next
		case resNotFound:
			return state == 0, state
		case resConditionFailed:
			return state != 0 && state != in.Cond, state
		}
	}
	return false, state
}

// model is the register for porcupine. Histories are checked one at a time (one per key), so
// it has no partition function.
var model = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, in, out any) (bool, any) {
		return step(state.(int64), in.(input), out.(output))
	},
	DescribeOperation: func(in, out any) string { return describe(in.(input), out.(output)) },
	DescribeState: func(state any) string {
		switch state.(int64) {
		case 0:
			return "absent"
		case ended:
			return "ended"
		}
		return fmt.Sprintf("v=%d", state.(int64))
	},
	DescribeOperationMetadata: func(m any) string {
		i, ok := m.(info)
		if !ok {
			return ""
		}
		s := "deadline: generous"
		if i.Deadline > 0 {
			s = "deadline: " + i.Deadline.String()
		}
		if i.Err != "" {
			s += "\nerror: " + i.Err
		}
		if i.Cut != "" {
			s += "\nin flight where the history was cut short; it answered " + i.Cut
		}
		return s
	},
}

// describe writes an operation the way the report and the visualization show it.
func describe(in input, out output) string {
	var op string
	switch in.Kind {
	case opGet:
		op = "get"
	case opCreate:
		op = fmt.Sprintf("create v=%d", in.Val)
	case opPatch:
		op = fmt.Sprintf("patch if v=%d: v=%d", in.Cond, in.Val)
	case opDelete:
		op = fmt.Sprintf("delete if v=%d", in.Cond)
	case opEnd:
		return "end of the history (the unknown outcomes after it took no effect)"
	}
	if in.Kind == opGet && out.Res == resOK {
		return fmt.Sprintf("%s -> v=%d", op, out.Val)
	}
	return op + " -> " + out.Res.String()
}

// hasEffect reports whether an operation may have changed the register: a write that succeeded
// or whose outcome is unknown. The others leave the state as it was, so leaving them out of a
// history never makes a legal history illegal: what stays illegal without them is evidence
// against the whole history.
func hasEffect(in input, out output) bool {
	return in.Kind != opGet && (out.Res == resOK || out.Res == resUnknown)
}
