package main

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// latencySVG draws the latency distributions: one row per system, crash takeover on the
// left, clean handover on the right; each trial is a dot, the bar spans p50 to p90, the tick
// marks p99 and the diamond the maximum. Dashed lines mark L and L + R (crash) and R
// (handover).
func latencySVG(rep *report) string {
	const (
		labelW = 170
		panelW = 380
		gap    = 40
		rowH   = 26
		top    = 56
		bottom = 58
	)
	rows := len(rep.Systems)
	width := labelW + 2*panelW + gap + 20
	height := top + rows*rowH + bottom
	var crashMax, handMax time.Duration
	for _, s := range rep.Systems {
		crashMax, handMax = max(crashMax, s.Crash.Max), max(handMax, s.Handover.Max)
	}
	crashMax = max(crashMax, rep.Options.L+rep.Options.R)
	handMax = max(handMax, rep.Options.R)
	crashScale, handScale := niceMax(crashMax), niceMax(handMax)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">Takeover latency, %d trials per system (L = %v, R = %v)</text>`+"\n", labelW, rep.Options.Trials, rep.Options.L, rep.Options.R)
	panels := []struct {
		title string
		x0    int
		scale time.Duration
		marks []struct {
			at   time.Duration
			name string
		}
		dist func(sysResult) Dist
	}{
		{"crash: SIGKILL → new leader's callback (ms)", labelW, crashScale,
			[]struct {
				at   time.Duration
				name string
			}{{rep.Options.L, "L"}, {rep.Options.L + rep.Options.R, "L+R"}},
			func(s sysResult) Dist { return s.Crash }},
		{"handover: SIGTERM → new leader's callback (ms)", labelW + panelW + gap, handScale,
			[]struct {
				at   time.Duration
				name string
			}{{rep.Options.R, "R"}},
			func(s sysResult) Dist { return s.Handover }},
	}
	for _, p := range panels {
		x := func(d time.Duration) float64 { return float64(p.x0) + float64(panelW)*float64(d)/float64(p.scale) }
		fmt.Fprintf(&b, `<text x="%d" y="40">%s</text>`+"\n", p.x0, html.EscapeString(p.title))
		yAxis := top + rows*rowH
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", p.x0, yAxis, p.x0+panelW, yAxis)
		step := tickStep(p.scale)
		for t := time.Duration(0); t <= p.scale; t += step {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(t), top-4, x(t), yAxis)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(t), yAxis+16, t.Milliseconds())
		}
		for _, m := range p.marks {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#c00" stroke-dasharray="4 3"/>`+"\n", x(m.at), top-4, x(m.at), yAxis)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#c00" text-anchor="middle">%s</text>`+"\n", x(m.at), yAxis+32, m.name)
		}
		for i, s := range rep.Systems {
			d := p.dist(s)
			y := float64(top + i*rowH + rowH/2)
			color := "#1f77b4"
			if s.System.Anchor {
				color = "#ff7f0e"
			}
			if d.N == 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="10" fill="%s" fill-opacity="0.25" stroke="%s"/>`+"\n", x(d.P50), y-5, math.Max(1, x(d.P90)-x(d.P50)), color, color)
			for _, v := range d.Samples {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s" fill-opacity="0.6"/>`+"\n", x(v), y, color)
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", x(d.P99), y-7, x(d.P99), y+7)
			fmt.Fprintf(&b, `<path d="M %.1f %.1f l 4 4 l -4 4 l -4 -4 z" fill="black"/>`+"\n", x(d.Max), y-4)
		}
	}
	for i, s := range rep.Systems {
		y := top + i*rowH + rowH/2 + 4
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-10, y, html.EscapeString(s.System.Name))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">dots: trials; bar: p50–p90; tick: p99; diamond: max. Blue: leasehold; orange: anchors.</text>`+"\n", labelW, height-4)
	b.WriteString("</svg>\n")
	return b.String()
}

// niceMax rounds d up to a whole number of tick steps.
func niceMax(d time.Duration) time.Duration {
	s := tickStep(d)
	return (d + s - 1) / s * s
}

// tickStep is a round step giving 4 to 10 ticks up to d.
func tickStep(d time.Duration) time.Duration {
	for _, s := range []time.Duration{10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000} {
		if step := s * time.Millisecond; d/step <= 8 {
			return step
		}
	}
	return 10 * time.Second
}
