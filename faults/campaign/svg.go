package campaign

import (
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"time"
)

// Colours of the timeline.
var kindColour = map[Kind]string{
	KillLeader: "#d62728", KillFollower: "#ff9896", PauseLeader: "#9467bd", PauseFollower: "#c5b0d5",
	StopLeader: "#2ca02c", Latency: "#bcbd22", Reset: "#17becf", PartitionLeader: "#8c564b",
	PartitionFollower: "#c49c94", Outage: "#7f7f7f",
	DropWatch: "#aec7e8", DelayWatch: "#ffbb78", DupWatch: "#98df8a", ReorderWatch: "#e377c2", CutWatch: "#393b79",
	ClockJump:        "#f7b6d2",
	MemberKillLeader: "#e6550d", MemberKillFollower: "#fdae6b", MemberKillUsed: "#a63603", MemberPauseLeader: "#756bb1",
	MemberPauseFollower: "#bcbddc", MemberCut: "#636363", MemberFailover: "#31a354", MemberFailoverLossy: "#a1d99b",
	ClusterRestart: "#000000",
	HealthLeader:   "#ff7f0e", Preempt: "#1f77b4", HealthFollower: "#dbdb8d", HealthAll: "#8c6d31",
}

// slotOf returns the slot number of an instance ID "w<slot>.<generation>".
func slotOf(id string) int {
	s, _, _ := strings.Cut(strings.TrimPrefix(id, "w"), ".")
	n, _ := strconv.Atoi(s)
	return n
}

// WriteSVG draws the campaign's timeline: one row per instance slot, a bar for each
// leadership (labelled with its term; a hatched end when the worker died leading), the
// faults as shaded windows on the row they hit (every row for an outage) with a marker at
// their start, and a row at the bottom showing whether anyone led.
func WriteSVG(w io.Writer, r *Report) error {
	const (
		left, top, rowH, barH = 80, 40, 34, 18
	)
	span := float64(r.End - r.Start)
	if span <= 0 {
		span = 1
	}
	secs := span / 1e9
	width := max(1600.0, min(secs*8, 20000))
	x := func(t int64) float64 { return left + (float64(t-r.Start)/span)*width }
	rows := r.Instances
	kinds := kindsOf(r.Network, r.Cluster != nil, r.Ranked)
	perLine := max(1, int(width)/130)
	height := top + (rows+1)*rowH + 70 + 22*((len(kinds)-1)/perLine)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%d" font-family="sans-serif" font-size="11">`+"\n", width+left+20, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#1f77b4"/></pattern></defs>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="14">%s: %d instances, L=%v R=%v, %d faults, seed %d</text>`+"\n",
		left, html.EscapeString(r.Name()), r.Instances, r.LeaseDuration, r.RenewInterval, len(r.Faults), r.Seed)
	// Time axis.
	step := niceStep(secs)
	for s := 0.0; s <= secs; s += step {
		tx := x(r.Start + int64(s*1e9))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", tx, top-6, tx, top+(rows+1)*rowH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#666" text-anchor="middle">%gs</text>`+"\n", tx, top-10, s)
	}
	rowY := func(slot int) int { return top + (slot-1)*rowH }
	for s := 1; s <= rows; s++ {
		fmt.Fprintf(&b, `<text x="8" y="%d">instance %d</text>`+"\n", rowY(s)+rowH/2+4, s)
	}
	fmt.Fprintf(&b, `<text x="8" y="%d">any leader</text>`+"\n", rowY(rows+1)+rowH/2+4)
	// Fault windows, under the bars.
	for _, f := range r.Faults {
		c := kindColour[f.Kind]
		x0, x1 := x(f.Start), x(max(f.End, f.Start))
		if x1-x0 < 2 {
			x1 = x0 + 2
		}
		y0, h := rowY(f.Slot), rowH
		if f.Kind == Outage || f.Slot == 0 {
			y0, h = top, rows*rowH
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.35"><title>fault %d: %s %s</title></rect>`+"\n",
			x0, y0, x1-x0, h, c, f.N, f.Kind, html.EscapeString(f.Target))
		fmt.Fprintf(&b, `<path d="M%.1f %d l-4 -7 h8 z" fill="%s"><title>fault %d: %s %s%s</title></path>`+"\n",
			x0, y0+2, c, f.N, f.Kind, html.EscapeString(f.Target), html.EscapeString(describeTakeover(f.Takeover)))
	}
	// Leadership bars.
	for _, iv := range r.Intervals {
		s := slotOf(iv.Instance)
		if s < 1 || s > rows {
			continue
		}
		x0, x1 := x(iv.Start), x(iv.End)
		fill := "#1f77b4"
		if iv.Open {
			fill = "url(#hatch)"
		}
		y := rowY(s) + (rowH-barH)/2
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" stroke="#0b3d66" stroke-width="0.5"><title>%s term %d, %v</title></rect>`+"\n",
			x0, y, max(x1-x0, 0.5), barH, fill, html.EscapeString(iv.Instance), iv.Term, time.Duration(iv.End-iv.Start).Round(time.Millisecond))
		if x1-x0 > 24 {
			colour := "white"
			if iv.Open {
				colour = "black" // on the hatch
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="%s" font-weight="bold">%d</text>`+"\n", x0+3, y+13, colour, iv.Term)
		}
		ya := rowY(rows+1) + (rowH-barH)/2
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#2ca02c"/>`+"\n", x0, ya, max(x1-x0, 0.5), barH)
	}
	for _, o := range r.Overlaps {
		fill := "red"
		if o.InPause {
			fill = "orange"
		}
		ya := rowY(rows+1) + (rowH-barH)/2
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>two leaders for %v</title></rect>`+"\n",
			x(o.B.Start), ya, max(x(o.B.Start+int64(o.Length))-x(o.B.Start), 1), barH, fill, o.Length)
	}
	// Legend.
	ly := top + (rows+1)*rowH + 24
	lx := float64(left)
	for i, k := range kinds {
		if i > 0 && i%perLine == 0 {
			lx, ly = float64(left), ly+22
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="12" height="12" fill="%s" fill-opacity="0.6"/><text x="%.0f" y="%d">%s</text>`+"\n", lx, ly, kindColour[k], lx+16, ly+10, k)
		lx += 130
	}
	ly += 22
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#1f77b4"/><text x="%d" y="%d">leading (term)</text>`, left, ly, left+16, ly+10)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="url(#hatch)"/><text x="%d" y="%d">leading until the deadline of a worker that died leading</text>`+"\n", left+130, ly, left+146, ly+10)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep returns a tick step, in seconds, giving at most about 30 ticks over secs.
func niceStep(secs float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600} {
		if secs/s <= 30 {
			return s
		}
	}
	return 7200
}
