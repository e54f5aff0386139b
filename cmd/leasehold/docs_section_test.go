package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// docSection returns the section of the Markdown file path (relative to the repository's root)
// whose heading line starts with heading ("## Secure connections"), from that line to the next
// heading of its level or above, outside fenced blocks. It fails t when there is none.
func docSection(t *testing.T, path, heading string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	lines := strings.SplitAfter(string(data), "\n")
	start := -1
	fence := ""
	for i, l := range lines {
		if f, ok := fenceMarker(l); ok {
			if fence == "" {
				fence = f
			} else if closesFence(l, f, fence) {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if start < 0 {
			if strings.HasPrefix(l, heading) {
				start = i
			}
			continue
		}
		if n := headingLevel(l); n > 0 && n <= level {
			return strings.Join(lines[start:i], "")
		}
	}
	if start < 0 {
		t.Fatalf("%s has no section headed %q", path, heading)
	}
	return strings.Join(lines[start:], "")
}

// fenceMarker reports whether line opens or closes a fenced block, and its fence (``` or ~~~,
// as long as written).
func fenceMarker(line string) (string, bool) {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return "", false
	}
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(s, c+c+c) {
			n := len(s) - len(strings.TrimLeft(s, c))
			return strings.Repeat(c, n), true
		}
	}
	return "", false
}

// headingLevel is the level of an ATX heading line (1 for "# x"), 0 for any other line.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n > 6 || len(line) == n || (line[n] != ' ' && line[n] != '\n') {
		return 0
	}
	return n
}

// closesFence reports whether line, whose fence marker is f, closes the block opened by fence:
// the same character, at least as many, and nothing else on the line.
func closesFence(line, f, fence string) bool {
	return f[0] == fence[0] && len(f) >= len(fence) && strings.TrimSpace(line) == f
}
