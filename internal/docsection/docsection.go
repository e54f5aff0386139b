// Package docsection finds a section of a Markdown document by its heading, and the fenced
// code blocks in it, so that a test can check what the documentation says against the code.
// Errors and blocks carry the file and line numbers, for the messages of the test.
package docsection

import (
	"fmt"
	"os"
	"strings"
)

// Section is the part of a document under one heading, up to the next heading of the same
// or a higher level (fewer '#'), or the end of the document.
type Section struct {
	File    string // the document's file, as given to Read
	Heading string // the heading line, such as "### S3"
	Line    int    // the heading's line number, from 1
	lines   []string
}

// Block is a fenced code block.
type Block struct {
	File string
	Line int    // the line number of its opening fence, from 1
	Text string // its lines, each ended by "\n"
}

// Pos returns "FILE:LINE" of the block's opening fence.
func (b Block) Pos() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// Read reads the Markdown file and returns the section under the last of headings, each of
// which is looked for in the section of the one before it: Read(file, "## Cloud stores",
// "### S3") returns the section "### S3" of the section "## Cloud stores". A heading is
// given whole, its '#'s included, and matches a line of the document equal to it, outside
// fenced blocks.
func Read(file string, headings ...string) (*Section, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Find(file, string(b), headings...)
}

// ReadBlock returns the first fenced block of info, such as "json", in the section of file
// that Read(file, headings...) returns.
func ReadBlock(file, info string, headings ...string) (Block, error) {
	s, err := Read(file, headings...)
	if err != nil {
		return Block{}, err
	}
	return s.Block(info)
}

// Find is Read on the text of the document, named file in errors.
func Find(file, text string, headings ...string) (*Section, error) {
	s := &Section{File: file, lines: strings.SplitAfter(text, "\n")}
	for i, h := range headings {
		sub, ok := s.find(h)
		if !ok {
			if i == 0 {
				return nil, fmt.Errorf("%s has no section %q", file, h)
			}
			return nil, fmt.Errorf("%s has no section %q under %q (line %d)", file, h, s.Heading, s.Line)
		}
		s = sub
	}
	return s, nil
}

// find returns the first section of s under heading h.
func (s *Section) find(h string) (*Section, bool) {
	level := headingLevel(h)
	if level == 0 {
		return nil, false
	}
	var fence string
	start := -1
	for i, l := range s.lines {
		line := strings.TrimRight(l, "\r\n")
		if fence != "" || isFence(line) {
			fence = nextFence(fence, line)
			continue
		}
		if start < 0 {
			if line == h {
				start = i
			}
			continue
		}
		if n := headingLevel(line); n > 0 && n <= level {
			return s.sub(h, start, i), true
		}
	}
	if start < 0 {
		return nil, false
	}
	return s.sub(h, start, len(s.lines)), true
}

func (s *Section) sub(h string, start, end int) *Section {
	return &Section{File: s.File, Heading: h, Line: s.Line + start + 1, lines: s.lines[start+1 : end]}
}

// Blocks returns, in their order, the fenced blocks of the section whose info string starts
// with the word info, such as "json".
func (s *Section) Blocks(info string) []Block {
	var out []Block
	var fence string
	var cur *Block
	for i, l := range s.lines {
		line := strings.TrimRight(l, "\r\n")
		if fence == "" {
			if !isFence(line) {
				continue
			}
			fence = nextFence(fence, line)
			if infoWord(line) == info {
				cur = &Block{File: s.File, Line: s.Line + 1 + i}
			}
			continue
		}
		if fence = nextFence(fence, line); fence == "" {
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.Text += strings.TrimRight(l, "\r\n") + "\n"
		}
	}
	if cur != nil { // a block left open runs to the end of the section
		out = append(out, *cur)
	}
	return out
}

// Block returns the first of Blocks(info), or an error
// that gives the section's heading and line.
func (s *Section) Block(info string) (Block, error) {
	bs := s.Blocks(info)
	if len(bs) == 0 {
		return Block{}, fmt.Errorf("%s:%d: section %q has no %s block", s.File, s.Line, s.Heading, info)
	}
	return bs[0], nil
}

// infoWord returns the first word of the info string of the opening fence line.
func infoWord(line string) string {
	line = strings.TrimLeft(line, " ")
	f := strings.Fields(strings.TrimLeft(line, line[:1]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// headingLevel returns the number of '#' that open an ATX heading on line, 0 when it is not one.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n > 6 || (n < len(line) && line[n] != ' ' && line[n] != '\t') {
		return 0
	}
	return n
}

// isFence reports whether line opens or closes a fenced block: three or more '`' or '~'.
func isFence(line string) bool {
	line = strings.TrimLeft(line, " ")
	return strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")
}

// nextFence returns the fence open after line, given the one open before it ("" for none).
// A block opened by a fence closes on a line of at least as many of its characters and
// nothing else.
func nextFence(open, line string) string {
	line = strings.TrimLeft(line, " ")
	if open == "" {
		if !isFence(line) {
			return ""
		}
		return line[:len(line)-len(strings.TrimLeft(line, line[:1]))]
	}
	if strings.HasPrefix(line, open) && strings.TrimSpace(strings.TrimLeft(line, open[:1])) == "" {
		return ""
	}
	return open
}
