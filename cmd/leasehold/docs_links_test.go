package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	mdLink     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	headingRef = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// TestDocsLinks: every relative link of the Markdown pages (markdownPages: README.md,
// CONTRIBUTING.md, docs/*.md, examples/*/README.md and any other but those of docs/faults and
// docs/bench) resolves to a file or directory of the repository, and every #anchor to a
// heading of the page it names. Links to other sites are not followed.
func TestDocsLinks(t *testing.T) {
	pages := markdownPages(t)
	n := 0
	for _, page := range pages {
		for _, l := range markdownLinks(t, page) {
			n++
			if err := checkLink(t, page, l.target); err != nil {
				t.Errorf("%s:%d: link %s: %v", page, l.line, l.target, err)
			}
		}
	}
	t.Logf("%d links in %d pages", n, len(pages))
	if n == 0 {
		t.Error("no links found: the test is broken")
	}
}

type mdLinkAt struct {
	line   int
	target string
}

// markdownLinks returns the inline links of a page, outside fenced blocks and code spans.
func markdownLinks(t *testing.T, page string) []mdLinkAt {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, page))
	if err != nil {
		t.Fatal(err)
	}
	var out []mdLinkAt
	fence := ""
	for i, l := range strings.Split(string(data), "\n") {
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
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l, ""), -1) {
			out = append(out, mdLinkAt{i + 1, m[1]})
		}
	}
	return out
}

// checkLink checks a link of page: a relative path that exists, and its anchor a heading of
// the Markdown page it names.
func checkLink(t *testing.T, page, target string) error {
	if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
		return nil // another site, or mailto:
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return fmt.Errorf("an absolute path: GitHub resolves it against the site, not the repository")
		}
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), path)))
		if strings.HasPrefix(file, "../") {
			return fmt.Errorf("outside the repository")
		}
		if _, err := os.Stat(filepath.Join(repoRoot, file)); err != nil {
			return fmt.Errorf("no such file or directory: %s", file)
		}
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Errorf("an anchor in %s, which is not a Markdown page", file)
	}
	anchors, err := headingAnchors(file)
	if err != nil {
		return err
	}
	if !anchors[anchor] {
		return fmt.Errorf("%s has no heading whose anchor is #%s", file, anchor)
	}
	return nil
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown page: the
// heading's text, its links reduced to their text, in lower case, without the characters that
// are not letters, digits, spaces, hyphens or underscores, spaces made hyphens; a repeated
// anchor gets -1, -2...
func headingAnchors(file string) (map[string]bool, error) {
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, l := range strings.Split(string(data), "\n") {
		if f, ok := fenceMarker(l); ok {
			if fence == "" {
				fence = f
			} else if closesFence(l, f, fence) {
				fence = ""
			}
			continue
		}
		if fence != "" || headingLevel(l) == 0 {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		text = headingRef.ReplaceAllString(text, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out, nil
}
