package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// markdownPages are the Markdown pages of the repository, relative to its root (README.md
// first), less those of docs/faults and docs/bench, which record campaigns and runs, and
// those of testdata and hidden directories. except names more pages to leave out.
func markdownPages(t *testing.T, except ...string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "docs/faults" || rel == "docs/bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".md") && !slices.Contains(except, rel) {
			pages = append(pages, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pages, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "README.md":
			return -1
		case b == "README.md":
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(pages) == 0 || pages[0] != "README.md" {
		t.Fatalf("Markdown pages %v: no README.md", pages)
	}
	return pages
}

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
