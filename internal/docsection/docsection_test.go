package docsection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const doc = `# Title

## Stores

### S3

Not this one: it is not under Cloud stores.

` + "```json" + `
{"wrong": true}
` + "```" + `

## Cloud stores

Intro.

### S3

Text.

` + "```sh" + `
# a comment, not a heading
aws s3 ls
` + "```" + `

` + "```json" + `
{"a": 1}
` + "```" + `

` + "````json title" + `
` + "```" + `
{"b": 2}
` + "````" + `

#### Detail

` + "~~~json" + `
{"c": 3}
~~~

### Azure

` + "```json" + `
{"azure": true}
` + "```" + `
`

func TestSection(t *testing.T) {
	t.Parallel()
	s, err := Find("doc.md", doc, "## Cloud stores", "### S3")
	if err != nil {
		t.Fatal(err)
	}
	if s.Heading != "### S3" || s.Line != 17 {
		t.Errorf("section %q at line %d, want ### S3 at 17", s.Heading, s.Line)
	}
	bs := s.Blocks("json")
	want := []Block{
		{File: "doc.md", Line: 26, Text: "{\"a\": 1}\n"},
		{File: "doc.md", Line: 30, Text: "```\n{\"b\": 2}\n"},
		{File: "doc.md", Line: 37, Text: "{\"c\": 3}\n"},
	}
	if len(bs) != len(want) {
		t.Fatalf("json blocks %q, want %q", bs, want)
	}
	for i := range want {
		if bs[i] != want[i] {
			t.Errorf("json block %d = %+v, want %+v", i, bs[i], want[i])
		}
	}
	if b, err := s.Block("json"); err != nil || b != want[0] || b.Pos() != "doc.md:26" {
		t.Errorf("Block(json) = %+v, %v", b, err)
	}
	if sh := s.Blocks("sh"); len(sh) != 1 || sh[0].Text != "# a comment, not a heading\naws s3 ls\n" {
		t.Errorf("sh blocks %q", sh)
	}
	if _, err := s.Block("yaml"); err == nil || !strings.Contains(err.Error(), "doc.md:17") || !strings.Contains(err.Error(), "### S3") {
		t.Errorf("Block(yaml): %v", err)
	}

	// The first "### S3" of the document is another one; a heading ends at the next of its
	// level or above.
	first, err := Find("doc.md", doc, "### S3")
	if err != nil || first.Line != 5 {
		t.Fatalf("Find(### S3) = %+v, %v", first, err)
	}
	if b, err := first.Block("json"); err != nil || b.Text != "{\"wrong\": true}\n" {
		t.Errorf("first S3 json block %+v, %v", b, err)
	}
	azure, err := Find("doc.md", doc, "### Azure")
	if err != nil {
		t.Fatal(err)
	}
	if bs := azure.Blocks("json"); len(bs) != 1 || bs[0].Line != 43 {
		t.Errorf("Azure json blocks %+v", bs)
	}
}

func TestSectionMissing(t *testing.T) {
	t.Parallel()
	for _, hs := range [][]string{
		{"### GCS"},
		{"## Cloud stores", "### Detail"},
		{"## Stores", "### Azure"},
		{"#### a comment, not a heading"},
		{"# a comment, not a heading"},
		{"S3"},
	} {
		if s, err := Find("doc.md", doc, hs...); err == nil {
			t.Errorf("Find(%q) = section at line %d", hs, s.Line)
		} else if !strings.Contains(err.Error(), "doc.md") || !strings.Contains(err.Error(), hs[len(hs)-1]) {
			t.Errorf("Find(%q): %v", hs, err)
		}
	}
}

func TestRead(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(doc, "\n", "\r\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Read(file, "## Cloud stores", "### S3")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.Block("json"); err != nil || b.Text != "{\"a\": 1}\n" || b.Pos() != file+":26" {
		t.Errorf("Block(json) = %+v, %v", b, err)
	}
	if b, err := ReadBlock(file, "json", "### Azure"); err != nil || b.Text != "{\"azure\": true}\n" || b.Line != 43 {
		t.Errorf("ReadBlock(json, ### Azure) = %+v, %v", b, err)
	}
	if _, err := ReadBlock(file, "yaml", "### Azure"); err == nil || !strings.Contains(err.Error(), file+":41") {
		t.Errorf("ReadBlock(yaml, ### Azure): %v", err)
	}
	if _, err := ReadBlock(file, "json", "### GCS"); err == nil {
		t.Error("ReadBlock of a missing section succeeded")
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.md"), "## Cloud stores"); err == nil {
		t.Error("Read of a missing file succeeded")
	}
}
