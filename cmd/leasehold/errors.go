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

// explain adds its likely cause to a store's error whose text says nothing useful by itself,
// as client libraries word them:
//   - EOF from a plain redis:// URL: the server closed the connection at the first command,
//     as a Redis server that serves TLS only does;
//   - a NATS client's exceeded outbound buffer, or no servers available: nats.go buffers
//     nothing while it reconnects, so that is how it says the server cannot be reached.
func explain(msg string) string {
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "redis") && !strings.Contains(lower, "rediss://") && !strings.Contains(lower, "tls") &&
		(strings.HasSuffix(msg, "EOF") || strings.Contains(msg, ": EOF;") || strings.Contains(msg, "EOF (")):
		return msg + " (the server closed the connection: it may expect TLS; use rediss:// or the URL parameter tls=true)"
	case strings.Contains(lower, "nats") && (strings.Contains(lower, "outbound buffer limit exceeded") || strings.Contains(lower, "no servers available")) &&
		!strings.Contains(lower, "unreachable"):
		return msg + " (the NATS server is unreachable: is it running, and is the URL's address right?)"
	}
	return msg
}
