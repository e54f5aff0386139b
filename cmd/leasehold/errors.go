package main

import "strings"

// oneLine joins the lines of an error's text: a failure is one line on stderr, for people and
// for the log collectors that take each line for a record. Client libraries write several
// (pgx gives a line per address it tried, often the same one twice).
func oneLine(s string) string {
	var b strings.Builder
	prev := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == prev {
			continue
		}
		if b.Len() > 0 {
			if strings.HasSuffix(prev, ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
		prev = l
	}
	return b.String()
}
