package linearize

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// minimizeBudget bounds the search for a smaller illegal history; laterTimeout the check of
// each history after one was found illegal.
const (
	minimizeBudget = 10 * time.Second
	laterTimeout   = 2 * time.Second
)

// check counts a history's operations and checks it with porcupine. The first illegal history
// is reported in full; the others are named.
func (c *checker) check(h *history) {
	for _, o := range h.ops {
		c.res.Ops[o.in.Kind.String()]++
		if o.out.Res == resUnknown {
			c.res.Unknown[o.in.Kind.String()]++
			if o.deadline == 0 && o.violation == "" {
				c.res.Unexplained++
				if len(c.res.Examples) < 3 {
					c.res.Examples = append(c.res.Examples, fmt.Sprintf("%q", o.err))
				}
			}
		}
	}
	ops := operations(h.ops)
	timeout := c.cfg.CheckTimeout
	if c.res.Illegal > 0 {
		// Deciding that a history is illegal takes an exhaustive search, long with many
		// unknown outcomes; once the check has failed, the others need not all be decided.
		timeout = min(timeout, laterTimeout)
	}
	res, linfo, _ := verify(ops, timeout)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		c.res.Undecided++
		c.res.Failures = append(c.res.Failures, fmt.Sprintf("linearize: %s: porcupine could not decide within %v whether the history (%d operations, %d unknown outcomes) is linearizable",
			h.key, timeout, len(ops), unknowns(ops)))
		return
	}
	c.res.Illegal++
	head := fmt.Sprintf("linearize: %s (%s phase, %d clients): the history of %d operations, %d with unknown outcomes, is not linearizable",
		h.key, h.phase, len(c.stores), len(ops), unknowns(ops))
	if c.res.Illegal > 1 {
		c.res.Failures = append(c.res.Failures, head+" (see the first such history)")
		return
	}
	small := minimize(ops, time.Now().Add(minimizeBudget))
	_, sinfo, smallAll := verify(small, c.cfg.CheckTimeout)
	var files []string
	dir, keep := c.artifactDir()
	for _, v := range []struct {
		name string
		info porcupine.LinearizationInfo
	}{{"minimal", sinfo}, {"history", linfo}} {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%d-%s-%s.html", fileName(c.t.Name()), h.phase, h.index, c.prefix[len(c.prefix)-8:], v.name))
		if err := porcupine.VisualizePath(model, v.info, path); err != nil {
			files = append(files, fmt.Sprintf("(%s: %v)", v.name, err))
			continue
		}
		files = append(files, path)
		c.res.Artifacts = append(c.res.Artifacts, path)
	}
	where := "under the test's temporary directory, removed when the test ends; set LEASEHOLD_ARTIFACTS=DIR to keep them"
	if keep {
		where = "kept under $LEASEHOLD_ARTIFACTS"
	}
	var b strings.Builder
	b.WriteString(head + ".\n")
	fmt.Fprintf(&b, "The smallest illegal history found, %d operations (times from the first call; * marks the operations no partial linearization found could include; \"unknown\" returns are at the end of the history):\n",
		len(small))
	b.WriteString(table(smallAll, sinfo))
	fmt.Fprintf(&b, "Visualizations (%s): %s", where, strings.Join(files, ", "))
	c.res.Failures = append(c.res.Failures, b.String())
}

// verify checks a history with porcupine, closed (see closed), which it returns as well: the
// operations' indexes in it are those of the linearization info.
func verify(ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo, []porcupine.Operation) {
	all := closed(ops)
	res, li := porcupine.CheckOperationsVerbose(model, all, timeout)
	return res, li, all
}

// closed returns ops with their end: an operation opEnd after every call and every definite
// answer, and the unknown outcomes returning after it. An unknown outcome is then linearized
// before the end where it took effect, or after it, where it took none (see step).
func closed(ops []porcupine.Operation) []porcupine.Operation {
	var last int64
	client := 0
	for _, o := range ops {
		last = max(last, o.Call)
		if o.Output.(output).Res != resUnknown {
			last = max(last, o.Return)
		}
		client = max(client, o.ClientId+1)
	}
	out := make([]porcupine.Operation, 0, len(ops)+1)
	for _, o := range ops {
		if o.Output.(output).Res == resUnknown {
			o.Return = last + 3
		}
		out = append(out, o)
	}
	return append(out, porcupine.Operation{ClientId: client, Input: input{Kind: opEnd}, Call: last + 1,
		Output: output{}, Return: last + 2, Metadata: info{Client: client}})
}

// operations turns a history into porcupine's operations. An unknown outcome returns at the end
// of the history: it may have taken effect at any moment after its call. A Get whose outcome is
// unknown says nothing and changes nothing: it is left out.
func operations(ops []op) []porcupine.Operation {
	var end int64
	for _, o := range ops {
		end = max(end, o.ret)
	}
	var out []porcupine.Operation
	for _, o := range ops {
		if o.out.Res == resUnknown && o.in.Kind == opGet {
			continue
		}
		ret := o.ret
		if o.out.Res == resUnknown {
			ret = end + 1
		}
		i := info{Client: o.client, Deadline: o.deadline}
		if o.err != nil {
			i.Err = o.err.Error()
		}
		out = append(out, porcupine.Operation{ClientId: o.client, Input: o.in, Call: o.call, Output: o.out, Return: ret, Metadata: i})
	}
	slices.SortStableFunc(out, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

func unknowns(ops []porcupine.Operation) int {
	n := 0
	for _, o := range ops {
		if o.Output.(output).Res == resUnknown {
			n++
		}
	}
	return n
}

// minimize returns a smaller history whose illegality proves that of ops (sorted by call),
// found until deadline.
//
// First the history is cut short: the calls after some instant T are left out, and those in
// flight at T become unknown outcomes. That is sound: a linearization of the whole history puts
// every call that returned by T before every call made after T, so restricted to the calls made
// by T it is a linearization of the shorter history, where the calls still in flight at T may
// come last, accepting any answer. For the same reason, a history that is legal cut at T is
// legal cut earlier: the earliest T that leaves it illegal is found by bisection. Then the
// operations that cannot have changed the register are removed, in ever smaller chunks, as
// long as what remains is illegal (see hasEffect).
func minimize(ops []porcupine.Operation, deadline time.Time) []porcupine.Operation {
	illegal := func(h []porcupine.Operation) bool {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		return porcupine.CheckOperationsTimeout(model, closed(h), min(left, 2*time.Second)) == porcupine.Illegal
	}
	// The history cut after its first n calls; n = len(ops) is the whole of it.
	lo, hi := 1, len(ops)
	for lo < hi && time.Now().Before(deadline) {
		mid := (lo + hi) / 2
		if illegal(cut(ops, mid)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	cur := cut(ops, hi)
	for chunk := len(cur) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(cur) && time.Now().Before(deadline); {
			// The chunk of removable operations starting at i, up to chunk of them.
			var rm []int
			for j := i; j < len(cur) && len(rm) < chunk; j++ {
				if !hasEffect(cur[j].Input.(input), cur[j].Output.(output)) {
					rm = append(rm, j)
				}
			}
			if len(rm) == 0 {
				break
			}
			cand := make([]porcupine.Operation, 0, len(cur)-len(rm))
			for j, o := range cur {
				if !slices.Contains(rm, j) {
					cand = append(cand, o)
				}
			}
			if illegal(cand) {
				cur = cand // the same i now starts the operations after the chunk
				continue
			}
			i = rm[len(rm)-1] + 1
		}
	}
	return cur
}

// cut returns the first n operations of ops (sorted by call), ending at the nth call: the
// operations in flight then become unknown outcomes returning at that end (a Get among them,
// saying nothing, is left out), marked as cut.
func cut(ops []porcupine.Operation, n int) []porcupine.Operation {
	if n >= len(ops) {
		return ops
	}
	t := ops[n-1].Call
	out := make([]porcupine.Operation, 0, n)
	for _, o := range ops[:n] {
		if o.Return > t {
			res := o.Output.(output).Res
			if res != resUnknown && o.Input.(input).Kind == opGet {
				continue
			}
			m := o.Metadata.(info)
			if res != resUnknown {
				m.Cut = res.String()
			}
			o.Output, o.Return, o.Metadata = output{Res: resUnknown}, t+1, m
		}
		out = append(out, o)
	}
	return out
}

// table shows a history, one operation a line, marking those outside the largest partial
// linearization porcupine found.
func table(ops []porcupine.Operation, linfo porcupine.LinearizationInfo) string {
	in := map[int]bool{}
	if parts := linfo.PartialLinearizations(); len(parts) > 0 {
		var best []int
		for _, l := range parts[0] {
			if len(l) > len(best) {
				best = l
			}
		}
		for _, id := range best {
			in[id] = true
		}
	}
	var t0, end int64
	if len(ops) > 0 {
		t0 = ops[0].Call
	}
	for _, o := range ops {
		end = max(end, o.Return)
	}
	ms := func(t int64) string { return fmt.Sprintf("%+.3fms", float64(t-t0)/1e6) }
	var b strings.Builder
	fmt.Fprintf(&b, "      %-7s %-11s %-11s %s\n", "client", "call", "return", "operation")
	for id, o := range ops {
		mark := " "
		if !in[id] {
			mark = "*"
		}
		ret := ms(o.Return)
		out := o.Output.(output)
		if out.Res == resUnknown && o.Return == end {
			ret = "unknown"
		}
		m := o.Metadata.(info)
		line := describe(o.Input.(input), out)
		if m.Deadline > 0 {
			line += fmt.Sprintf(" [deadline %v]", m.Deadline)
		}
		switch {
		case m.Cut != "":
			line += " (cut short: it answered " + m.Cut + " later)"
		case m.Err != "" && out.Res == resUnknown:
			line += ": " + m.Err
		}
		fmt.Fprintf(&b, "    %s %-7d %-11s %-11s %s\n", mark, o.ClientId, ms(o.Call), ret, line)
	}
	return b.String()
}

// artifactDir returns where the visualizations go, and whether they are kept there.
func (c *checker) artifactDir() (string, bool) {
	if dir := os.Getenv("LEASEHOLD_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir, true
		}
	}
	return c.t.TempDir(), false
}

// fileName makes a test's name a file name.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
