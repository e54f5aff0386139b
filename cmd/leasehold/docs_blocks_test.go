//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// docBlock is a fenced block of a Markdown page.
type docBlock struct {
	file string // relative to the repository's root
	line int    // of the opening fence, 1-based
	info string // the info string's first word: sh, go, json...
	text string // the content, less the fence's indentation
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d (%s block)", b.file, b.line, b.info) }

// key names the block in uncheckedBlocks: its file and its first line.
func (b docBlock) key() string {
	first, _, _ := strings.Cut(b.text, "\n")
	return b.file + ": " + strings.TrimSpace(first)
}

// uncheckedBlocks are the blocks TestDocsBlocks cannot check, by file and first line, with the
// reason. Keep it short: a block that can be checked by its kind is.
var uncheckedBlocks = map[string]string{
	"docs/command.md: http://127.0.0.1:8080":                                                          "the output of the commands above it: TestREADMELeader runs them and compares",
	"docs/command.md: leasehold demo: 3 instances elect one leader over an in-memory store, for 20s.": "a run of the demo, whose timings differ at each run (demo_test.go checks its form)",
	"docs/kubernetes.md: NAME     HOLDER   TERM  DURATION  RENEWED":                                   "a Lease as kubectl shows it, printed by the kubernetes module's tests against a real API server",
	"docs/kubernetes.md: NAME     HOLDER   TERM      DURATION  RENEWED":                               "a Lease as kubectl shows it, printed by the kubernetes module's tests against a real API server",
	"docs/kubernetes.md: HOLDER  WRITER     TRANSITIONS  TERM":                                        "the Lease's holders, counts and terms as the kubernetes module's mixed-fleet test logs them against a real API server",
}

// docPages are the pages whose blocks TestDocsBlocks checks: every Markdown page of
// markdownPages (README.md, CONTRIBUTING.md, docs/*.md, examples/*/README.md...) but
// docs/design.md and docs/measurements.md, which record rules and runs.
func docPages(t *testing.T) []string {
	t.Helper()
	return markdownPages(t, "docs/design.md", "docs/measurements.md")
}

// fencedBlocks returns the fenced blocks of the Markdown page file.
func fencedBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	var cur *docBlock
	var fence string
	indent := 0
	var body []string
	for i, l := range strings.Split(string(data), "\n") {
		f, isFence := fenceMarker(l)
		if cur == nil {
			if isFence {
				indent = len(l) - len(strings.TrimLeft(l, " "))
				info, _, _ := strings.Cut(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), f[:1])), " ")
				cur, fence, body = &docBlock{file: file, line: i + 1, info: info}, f, nil
			}
			continue
		}
		if isFence && closesFence(l, f, fence) {
			cur.text = strings.Join(body, "\n")
			if len(body) > 0 {
				cur.text += "\n"
			}
			out = append(out, *cur)
			cur = nil
			continue
		}
		n := min(indent, len(l)-len(strings.TrimLeft(l, " ")))
		body = append(body, l[n:])
	}
	if cur != nil {
		t.Errorf("%s:%d: a fenced block is not closed", file, cur.line)
	}
	return out
}

// TestDocsBlocks checks every fenced block of the pages of docPages (README.md,
// CONTRIBUTING.md, docs/*.md but design.md and measurements.md, examples/*/README.md...) by
// its kind:
//   - sh and console blocks (console: the lines after "$ "): each command line that runs
//     leasehold (or go run ./cmd/leasehold), in a crontab line or a loop too, parses with the
//     command's own flags, without running; a line that is a store URL parses with the store
//     URL parser and names a scheme this build links; go get and go install name modules of the
//     repository at the release version (or latest), go build and go test packages of it,
//     with build tags it has; scripts/... name executable scripts; any other program must be
//     one of knownTools;
//   - json blocks decode as application configurations, strictly (leasehold.ParseConfig, then
//     leasehold.New: an unknown type or parameter is an error), or are a cloud's permissions
//     (an IAM policy, a Cloud Storage role, an Azure role definition) of the form the cloud
//     takes; each cloud store's module checks the permissions its section lists against the
//     calls its code makes;
//   - yaml blocks decode strictly as a Kubernetes Role, or as the rules of one, or as a
//     container's env;
//   - go blocks are a Go file of the repository or an excerpt of one, word for word, from a
//     test file or an example program (compiled by its module's tests);
//   - text blocks are output: log lines' messages are messages of the code, status lines'
//     labels ones status prints, watch lines' fields ones status --watch prints, metric names
//     ones the collector exports, a tree's paths exist.
//
// A block it cannot check must be in uncheckedBlocks, with the reason.
func TestDocsBlocks(t *testing.T) {
	// The checks parse command lines without running them; should one run all the same, it
	// finds a store of its own, in memory.
	t.Setenv("LEASEHOLD_STORE", "mem://docs-blocks")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	used := map[string]bool{}
	n := 0
	for _, page := range docPages(t) {
		for _, b := range fencedBlocks(t, page) {
			n++
			if reason, ok := uncheckedBlocks[b.key()]; ok {
				used[b.key()] = true
				t.Logf("%v: not checked: %s", b, reason)
				continue
			}
			if err := checkBlock(t, b.info, b.text); err != nil {
				t.Errorf("%v: %v", b, err)
			}
		}
	}
	for k := range uncheckedBlocks {
		if !used[k] {
			t.Errorf("uncheckedBlocks lists %q, which no page has any more: remove it", k)
		}
	}
	t.Logf("%d blocks", n)
}

// checkBlock checks a block of kind info by its kind.
func checkBlock(t *testing.T, info, text string) error {
	switch info {
	case "sh":
		return checkShellBlock(text, false)
	case "console":
		return checkShellBlock(text, true)
	case "json":
		if policy, err := checkPolicyBlock(text); policy {
			return err
		}
		return checkConfigBlock(text)
	case "yaml":
		return checkYAMLBlock(text)
	case "go":
		return checkGoBlock(t, text)
	case "text":
		return checkTextBlock(t, text)
	}
	return fmt.Errorf("a block of kind %q, which this test cannot check: give it a kind (sh, console, json, yaml, go, text), or list it in uncheckedBlocks with the reason", info)
}

// checkShellBlock checks the command lines of an sh block, or of a console block (the lines
// after "$ ", and their continuations).
func checkShellBlock(text string, console bool) error {
	var lines []string
	cont := false
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case cont:
			lines[len(lines)-1] += "\n" + l
		case !console:
			lines = append(lines, l)
		case strings.HasPrefix(l, "$ "):
			lines = append(lines, strings.TrimPrefix(l, "$ "))
		default:
			continue // output
		}
		cont = strings.HasSuffix(l, "\\")
	}
	if len(lines) == 0 {
		return errors.New("no command line")
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if storeURLLine.MatchString(l) {
			if err := checkStoreURL(l); err != nil {
				return err
			}
			continue
		}
		cmds, err := shellCommands(l)
		if err != nil {
			return fmt.Errorf("%q: %v", l, err)
		}
		for _, c := range cmds {
			if err := checkCommand(c); err != nil {
				return fmt.Errorf("%q: %v", l, err)
			}
		}
	}
	return nil
}

// storeURLLine is a line that is a URL alone.
var storeURLLine = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://\S+$`)

// checkStoreURL parses a store URL with the store URL parser, and checks that this build links
// a backend for its scheme.
func checkStoreURL(raw string) error {
	u, err := store.ParseURL(raw)
	if err != nil {
		return err
	}
	if !slices.Contains(store.Schemes(), strings.ToLower(u.Scheme)) {
		return fmt.Errorf("store URL %s: no backend for the scheme %q (known: %v)", store.Redact(u), u.Scheme, store.Schemes())
	}
	return nil
}

// checkPolicyBlock reports whether a json block is a cloud's permissions, and if so whether it
// has the form that cloud takes: an AWS IAM policy (Version 2012-10-17, statements that allow
// actions), a Google Cloud custom role (a title, included permissions) or an Azure role
// definition (a name, actions or data actions, assignable scopes).
func checkPolicyBlock(text string) (bool, error) {
	var doc map[string]any
	if json.Unmarshal([]byte(text), &doc) != nil {
		return false, nil
	}
	nonEmpty := func(k string) bool { l, ok := doc[k].([]any); return ok && len(l) > 0 }
	switch {
	case doc["Statement"] != nil:
		if doc["Version"] != "2012-10-17" || !nonEmpty("Statement") {
			return true, errors.New("an IAM policy needs Version 2012-10-17 and statements")
		}
		for _, st := range doc["Statement"].([]any) {
			m, _ := st.(map[string]any)
			if m["Effect"] != "Allow" || m["Action"] == nil || m["Resource"] == nil {
				return true, fmt.Errorf("IAM statement %v: want Effect Allow, an Action and a Resource", st)
			}
		}
		return true, nil
	case doc["includedPermissions"] != nil:
		if doc["title"] == nil || !nonEmpty("includedPermissions") {
			return true, errors.New("a Cloud Storage role needs a title and included permissions")
		}
		return true, nil
	case doc["AssignableScopes"] != nil:
		if doc["Name"] == nil || !nonEmpty("AssignableScopes") || !nonEmpty("Actions") && !nonEmpty("DataActions") {
			return true, errors.New("an Azure role definition needs a Name, actions or data actions, and assignable scopes")
		}
		return true, nil
	}
	return false, nil
}

// knownTools are the programs besides leasehold, go and scripts/ that the pages' command
// lines run: shell builtins and utilities, the servers' clients.
var knownTools = []string{
	"aws", "az", "curl", "docker", "echo", "gcloud", "etcdctl", "etcdutl", "grep", "jq", "kill", "kubectl", "mysql",
	"nats", "psql", "python3", "redis-cli", "sh", "source", "sqlite3",
}

// cronField is a field of a crontab line's schedule.
var cronField = regexp.MustCompile(`^[0-9*/,-]+$`)

// checkCommand checks one simple command of a shell line.
func checkCommand(words []string) error {
	// Shell keywords and assignments before the program.
	for len(words) > 0 && (slices.Contains([]string{"do", "then", "else", "time", "!"}, words[0]) || regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0])) {
		words = words[1:]
	}
	if len(words) == 0 || slices.Contains([]string{"for", "done", "fi", "while"}, words[0]) {
		return nil
	}
	if len(words) > 5 && !slices.ContainsFunc(words[:5], func(w string) bool { return !cronField.MatchString(w) }) {
		words = words[5:] // a crontab line: the schedule, then the command
	}
	switch prog := words[0]; {
	case prog == "leasehold":
		return checkLeaseholdArgs(words[1:])
	case prog == "go":
		return checkGoCommand(words[1:])
	case strings.HasPrefix(prog, "scripts/"):
		fi, err := os.Stat(filepath.Join(repoRoot, prog))
		if err != nil {
			return err
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", prog)
		}
		return nil
	case slices.Contains(knownTools, prog):
		return nil
	default:
		return fmt.Errorf("the program %q is not one this test knows: check it, or add it to knownTools", prog)
	}
}

// checkLeaseholdArgs parses a leasehold command line (the words after leasehold) with the
// command's own flags, without running it: the flags, then --help, which stops the parse once
// every flag is parsed. Before that, each word must be a flag of the command's usage, or the
// value of one, so that the parse cannot stop early at a word that is not a flag and run the
// command.
func checkLeaseholdArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("leasehold without a command")
	}
	sub := args[0]
	var stderr bytes.Buffer
	switch sub {
	case "version", "completion":
		if code := Main(args, io.Discard, &stderr); code != exitOK {
			return fmt.Errorf("leasehold %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		return nil
	case "help", "--help", "-h":
		return nil
	case "run", "status", "repair", "leader", "resign", "demo":
	default:
		return fmt.Errorf("leasehold %q: no such command", sub)
	}
	flags := args[1:]
	if sub == "run" {
		i := slices.Index(flags, "--")
		if i < 0 || i == len(flags)-1 {
			return errors.New("leasehold run without -- CMD")
		}
		flags = flags[:i]
	}
	known := map[string]bool{} // flag name: takes a value
	for _, f := range commandNamed(sub).flags() {
		known[strings.TrimPrefix(f.name, "--")] = f.value != ""
	}
	for i := 0; i < len(flags); i++ {
		name, ok := strings.CutPrefix(flags[i], "-")
		if !ok {
			return fmt.Errorf("leasehold %s: %q is not a flag", sub, flags[i])
		}
		name = strings.TrimPrefix(name, "-")
		name, _, hasValue := strings.Cut(name, "=")
		takesValue, ok := known[name]
		if !ok {
			return fmt.Errorf("leasehold %s: --%s is not a flag of its usage", sub, name)
		}
		if takesValue && !hasValue {
			if i++; i == len(flags) {
				// The parse would take --help for its value, and run the command.
				return fmt.Errorf("leasehold %s: --%s without its value", sub, name)
			}
		}
	}
	line := append(append([]string{sub}, flags...), "--help")
	if code := Main(line, io.Discard, &stderr); code != exitOK || stderr.Len() > 0 {
		return fmt.Errorf("leasehold %s: the flags do not parse (exit %d): %s", sub, code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// checkGoCommand checks a go command line (the words after go).
func checkGoCommand(args []string) error {
	if len(args) == 0 {
		return errors.New("go without a command")
	}
	switch args[0] {
	case "run":
		if len(args) > 1 && args[1] == "./cmd/leasehold" {
			return checkLeaseholdArgs(args[2:])
		}
		return fmt.Errorf("go run %v: not the command", args[1:])
	case "get", "install":
		version := releaseVersion()
		for _, a := range args[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			path, v, _ := strings.Cut(a, "@")
			if v != "latest" && v != version {
				return fmt.Errorf("go %s %s: the version is neither latest nor the release's, %s", args[0], a, version)
			}
			dir, ok := strings.CutPrefix(path, "github.com/leasehold/leasehold")
			if !ok {
				return fmt.Errorf("go %s %s: not a module of this repository", args[0], a)
			}
			if err := checkPackageDir("." + dir); err != nil {
				return err
			}
		}
		return nil
	case "build", "test", "vet":
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-tags" && i+1 < len(args):
				i++
				for _, tag := range strings.Split(args[i], ",") {
					if !buildTagKnown(tag) {
						return fmt.Errorf("go %s: no file of the command has the build tag %q", args[0], tag)
					}
				}
			case a == "-o" || a == "-run" || a == "-ldflags":
				i++
			case strings.HasPrefix(a, "./"):
				if err := checkPackageDir(strings.TrimSuffix(a, "/...")); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("go %s: not a go command this test knows", args[0])
}

// checkPackageDir checks that dir, relative to the repository's root, holds Go files.
func checkPackageDir(dir string) error {
	files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.go"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("%s holds no Go package", dir)
	}
	return nil
}

// releaseVersion is the version the modules of the repository require each other at, read
// from go.work's replace of the root module.
func releaseVersion() string {
	data, _ := os.ReadFile(filepath.Join(repoRoot, "go.work"))
	m := regexp.MustCompile(`(?m)^\s*github\.com/leasehold/leasehold (v\S+) => \./\s*$`).FindSubmatch(data)
	if m == nil {
		return "(none in go.work)"
	}
	return string(m[1])
}

// buildTagKnown reports whether a build constraint of the command's files names tag.
func buildTagKnown(tag string) bool {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		first, _, _ := strings.Cut(string(data), "\n")
		if strings.HasPrefix(first, "//go:build") && regexp.MustCompile(`\b`+regexp.QuoteMeta(tag)+`\b`).MatchString(first) {
			return true
		}
	}
	return false
}

// shellCommands splits a shell line into its simple commands, as words with their quotes
// removed: those separated by ;, &, &&, | and ||, and those of $(...) and <(...), which stay in
// their word as written. Redirections and their targets, and comments, are dropped. A
// backslash at the end of a line continues it.
func shellCommands(s string) ([][]string, error) {
	var cmds [][]string
	var cur []string
	var word strings.Builder
	inWord, dropWord := false, false
	flushWord := func() {
		if inWord && !dropWord {
			cur = append(cur, word.String())
		}
		if inWord {
			dropWord = false
		}
		word.Reset()
		inWord = false
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	sub := func(open int) (int, error) { // s[open] is '(': the commands up to its match
		end, err := matchParen(s, open)
		if err != nil {
			return 0, err
		}
		inner, err := shellCommands(s[open+1 : end])
		if err != nil {
			return 0, err
		}
		cmds = append(cmds, inner...)
		return end, nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated '")
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch {
				case s[j] == '\\' && j+1 < len(s):
					j++
					word.WriteByte(s[j])
				case strings.HasPrefix(s[j:], "$("):
					end, err := sub(j + 1)
					if err != nil {
						return nil, err
					}
					word.WriteString(s[j : end+1])
					j = end
				default:
					word.WriteByte(s[j])
				}
			}
			if j >= len(s) {
				return nil, errors.New(`unterminated "`)
			}
			i = j
			inWord = true
		case (c == '$' || c == '<') && i+1 < len(s) && s[i+1] == '(':
			end, err := sub(i + 1)
			if err != nil {
				return nil, err
			}
			word.WriteString(s[i : end+1])
			i = end
			inWord = true
		case c == '#' && !inWord:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j - 1
			}
		case c == ' ' || c == '\t':
			flushWord()
		case c == '\n' || c == ';' || c == '&' || c == '|':
			flushCmd()
		case c == '>' || c == '<':
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset() // the descriptor of 2>
				inWord = false
			}
			flushWord()
			for i+1 < len(s) && (s[i+1] == '>' || s[i+1] == '&') {
				i++
			}
			dropWord = true // the target
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flushCmd()
	return cmds, nil
}

// matchParen returns the index of the parenthesis that closes s[open], quotes considered.
func matchParen(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return 0, errors.New("unterminated '")
			}
			i += j + 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, errors.New("unbalanced (")
}

// docPoller is the quick start's service type, MyApp/Poller, with the same parameters, so
// that configurations naming it decode as the quick start's program decodes them.
type docPoller struct {
	Interval leasehold.Duration `json:"interval"`
}

func (*docPoller) Init(context.Context, *leasehold.Application) error { return nil }

var registerDocPoller sync.Once

// checkConfigBlock decodes a JSON configuration strictly, as an application does.
func checkConfigBlock(text string) error {
	registerDocPoller.Do(func() {
		leasehold.RegisterServiceType("MyApp/Poller", func() leasehold.Service { return &docPoller{} })
	})
	cfg, err := leasehold.ParseConfig([]byte(text))
	if err != nil {
		return err
	}
	_, err = leasehold.New(cfg)
	return err
}

// rbacVerbs are the verbs of Kubernetes' RBAC.
var rbacVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// checkYAMLBlock decodes a YAML block strictly as a Role, the rules of one, or a container's
// env.
func checkYAMLBlock(text string) error {
	var top map[string]any
	if err := yaml.Unmarshal([]byte(text), &top); err != nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	switch {
	case top["kind"] == "Role":
		var role rbacv1.Role
		if err := yaml.UnmarshalStrict([]byte(text), &role); err != nil {
			return err
		}
		if role.APIVersion != "rbac.authorization.k8s.io/v1" || role.Name == "" {
			return fmt.Errorf("a Role of apiVersion %q, named %q", role.APIVersion, role.Name)
		}
		rules = role.Rules
	case top["rules"] != nil && len(top) == 1:
		var v struct {
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.UnmarshalStrict([]byte(text), &v); err != nil {
			return err
		}
		rules = v.Rules
	case top["env"] != nil && len(top) == 1:
		var v struct {
			Env []corev1.EnvVar `json:"env"`
		}
		if err := yaml.UnmarshalStrict([]byte(text), &v); err != nil {
			return err
		}
		for _, e := range v.Env {
			if e.Name == "" || (e.Value == "" && e.ValueFrom == nil) {
				return fmt.Errorf("env %+v: want a name and a value", e)
			}
		}
		return nil
	default:
		return errors.New("neither a Role, nor the rules of one, nor a container's env")
	}
	if len(rules) == 0 {
		return errors.New("no rules")
	}
	for _, r := range rules {
		if !slices.Equal(r.APIGroups, []string{"coordination.k8s.io"}) || !slices.Equal(r.Resources, []string{"leases"}) {
			return fmt.Errorf("a rule for %v %v: leasehold's are on coordination.k8s.io leases", r.APIGroups, r.Resources)
		}
		for _, v := range r.Verbs {
			if !slices.Contains(rbacVerbs, v) {
				return fmt.Errorf("verb %q is not one of Kubernetes' (%v)", v, rbacVerbs)
			}
		}
	}
	return nil
}

var (
	goSourcesOnce sync.Once
	goSources     map[string]string // path: content, of the test files and example programs
)

// checkGoBlock checks that a Go block is a Go file of the repository's test files or example
// programs, or an excerpt of one (whole lines, with the same indentation give or take a common
// number of tabs).
func checkGoBlock(t *testing.T, text string) error {
	goSourcesOnce.Do(func() {
		goSources = map[string]string{}
		err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(repoRoot, path)
			rel = filepath.ToSlash(rel)
			if !d.IsDir() && (strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "examples/") && strings.HasSuffix(rel, ".go")) {
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if first, _, _ := strings.Cut(string(data), "\n"); strings.HasPrefix(first, "//go:build") && regexp.MustCompile(`\bignore\b`).MatchString(first) {
					return nil // never compiled: not a source of excerpts
				}
				goSources[rel] = string(data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for _, tabs := range []string{"", "\t", "\t\t", "\t\t\t"} {
		var b strings.Builder
		for _, l := range lines {
			if l != "" {
				b.WriteString(tabs)
			}
			b.WriteString(l + "\n")
		}
		want := "\n" + b.String()
		for path, src := range goSources {
			if strings.Contains("\n"+src, want) {
				t.Logf("go block: %d lines of %s", len(lines), path)
				return nil
			}
		}
	}
	return errors.New("the block is neither a Go file of the repository's tests or examples nor an excerpt of one: put the code in an example function (an example_test.go file) and copy it from there")
}

var (
	docLogMessage = regexp.MustCompile(`msg="leasehold: ((?:[^"\\]|\\.)*)"`)
	docStatusLine = regexp.MustCompile(`^([a-z][a-z ]*?(?: [0-9]+)?):\s+\S`)
	docMetricLine = regexp.MustCompile(`^(leasehold_[a-z_]+?)(_count|_sum|_bucket)?\{[^}]*\} \S+$`)
	docWatchLine  = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9:.]+Z (missing|held|released|expired)((?: \S+)*)$`)
	sourcesOnce   sync.Once
	sources       map[string]string // directory: the content of its Go files but tests
)

// source returns the Go code, less tests, of the directories dirs (relative to the
// repository's root).
func source(t *testing.T, dirs ...string) string {
	sourcesOnce.Do(func() {
		sources = map[string]string{}
		for _, dir := range []string{".", "cluster", "cmd/leasehold", "cmd/leasehold/internal/supervise", "metrics/prometheus"} {
			// A directory's packages below it count as its own: the products built on the
			// engine live under cluster/.
			files, err := filepath.Glob(filepath.Join(repoRoot, dir, "*.go"))
			if err != nil {
				t.Fatal(err)
			}
			if dir != "." {
				below, err := filepath.Glob(filepath.Join(repoRoot, dir, "*", "*.go"))
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, below...)
			}
			var b strings.Builder
			for _, f := range files {
				if strings.HasSuffix(f, "_test.go") {
					continue
				}
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				b.Write(data)
			}
			sources[dir] = b.String()
		}
	})
	var out string
	for _, d := range dirs {
		src, ok := sources[d]
		if !ok {
			t.Fatalf("source(%q): not read", d)
		}
		out += src
	}
	return out
}

// checkTextBlock checks an output block by what it shows: a log, a status, a watch, metrics,
// or a tree of the repository.
func checkTextBlock(t *testing.T, text string) error {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	switch {
	case docLogMessage.MatchString(text):
		src := source(t, ".", "cluster", "cmd/leasehold", "cmd/leasehold/internal/supervise")
		for _, m := range docLogMessage.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(src, `"leasehold: `+m[1]+`"`) {
				return fmt.Errorf("the log message %q is not one the code logs", "leasehold: "+m[1])
			}
		}
		return nil
	case strings.HasPrefix(lines[0], "leasehold/ "):
		return checkTree(lines)
	case docMetricLine.MatchString(lines[0]):
		src := source(t, "metrics/prometheus")
		for _, l := range lines {
			m := docMetricLine.FindStringSubmatch(l)
			if m == nil {
				return fmt.Errorf("%q is not a metric line", l)
			}
			if !strings.Contains(src, `Name: "`+m[1]+`"`) {
				return fmt.Errorf("the metric %s is not one the collector exports", m[1])
			}
		}
		return nil
	case docWatchLine.MatchString(lines[0]):
		src := source(t, "cmd/leasehold")
		for _, l := range lines {
			m := docWatchLine.FindStringSubmatch(l)
			if m == nil {
				return fmt.Errorf("%q is not a line of status --watch", l)
			}
			for _, f := range strings.Fields(m[2]) {
				name, _, isPair := strings.Cut(f, "=")
				if isPair {
					name += "="
				}
				if !strings.Contains(src, `" `+name) {
					return fmt.Errorf("%q: status --watch prints no %q", l, name)
				}
			}
		}
		return nil
	case docStatusLine.MatchString(lines[0]):
		src := source(t, "cmd/leasehold")
		for _, l := range lines {
			m := docStatusLine.FindStringSubmatch(l)
			if m == nil {
				return fmt.Errorf("%q is not a line of status", l)
			}
			label := regexp.MustCompile(`[0-9]+`).ReplaceAllString(m[1], "%d")
			if !strings.Contains(src, `"`+label+`:\t`) && !strings.Contains(src, `"`+label+`:"`) {
				return fmt.Errorf("%q: status prints no label %q", l, label+":")
			}
		}
		return nil
	}
	return errors.New("an output block of no kind this test knows (a log, a status, a watch, metrics, a tree): list it in uncheckedBlocks with the reason")
}

// checkTree checks that the paths of a tree of the repository exist: each line's names (the
// words that look like paths, before the description), under the directory of the
// line above indented less. Lines indented more than the names are descriptions.
func checkTree(lines []string) error {
	type dir struct {
		indent int
		path   string
	}
	stack := []dir{{-1, "."}}
	for _, l := range lines {
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if indent >= 20 {
			continue // a description, wrapped
		}
		var names []string
		for _, w := range strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == ',' }) {
			if !strings.ContainsAny(w, "/.") {
				break // the description
			}
			names = append(names, w)
		}
		for len(stack) > 1 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		parent := stack[len(stack)-1].path
		if indent == 0 && slices.Equal(names, []string{"leasehold/"}) {
			stack = append(stack, dir{0, "."})
			continue
		}
		for _, name := range names {
			path := filepath.Join(parent, strings.TrimSuffix(name, "/"))
			if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil {
				return fmt.Errorf("the tree names %s, which does not exist", path)
			}
			if strings.HasSuffix(name, "/") {
				stack = append(stack, dir{indent, path})
			}
		}
	}
	return nil
}

// TestDocsCommandFlags: docs/command.md names every flag of every command's usage.
func TestDocsCommandFlags(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "command.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, c := range completedCommands {
		for _, f := range c.flags() {
			if f.name == "--help" {
				continue
			}
			if !regexp.MustCompile("`" + regexp.QuoteMeta(f.name) + "[ `=]").MatchString(doc) {
				t.Errorf("docs/command.md does not name %s's flag %s", c.name, f.name)
			}
		}
	}
}

// TestDocsBlocksCatch: the checks of TestDocsBlocks refuse a block with a mistake of each kind
// (a flag the command does not have, a bad value, a missing value, an unknown parameter...),
// and pass the same blocks without it.
func TestDocsBlocksCatch(t *testing.T) {
	t.Setenv("LEASEHOLD_STORE", "mem://docs-blocks")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, tc := range []struct{ kind, good, bad string }{
		{"sh", "leasehold run --lease jobs --try -- ./jobs.sh\n", "leasehold run --lease jobs --tryy -- ./jobs.sh\n"},
		{"sh", "leasehold run --wait 10s -- ./jobs.sh\n", "leasehold run --wait 10x -- ./jobs.sh\n"},
		{"sh", "leasehold run --lease jobs -- ./jobs.sh\n", "leasehold run --lease jobs ./jobs.sh\n"},
		{"sh", "leasehold status --lease jobs\n", "leasehold status --lease\n"},
		{"sh", "leasehold status --lease jobs --json\n", "leasehold status --lease jobs json\n"},
		{"sh", "leasehold status --holders 2\n", "leasehold status --holders two\n"},
		{"sh", "*/5 * * * * leasehold run --try -- ./jobs.sh\n", "*/5 * * * * leasehold run --try-it -- ./jobs.sh\n"},
		{"sh", "go run ./cmd/leasehold demo --instances 5\n", "go run ./cmd/leasehold demo --instance 5\n"},
		{"sh", "x=$(leasehold leader --lease api)\n", "x=$(leasehold leader --lease api --to web-2)\n"},
		{"sh", "leasehold completion bash\n", "leasehold completion fish\n"},
		{"sh", "go get github.com/leasehold/leasehold/store/postgres@" + releaseVersion() + "\n", "go get github.com/leasehold/leasehold/store/oracle@" + releaseVersion() + "\n"},
		{"sh", "go install github.com/leasehold/leasehold/cmd/leasehold@latest\n", "go install github.com/leasehold/leasehold/cmd/leasehold@v9.9.9\n"},
		{"sh", "go build -tags leasehold_minimal -o leasehold ./cmd/leasehold\n", "go build -tags leasehold_tiny -o leasehold ./cmd/leasehold\n"},
		{"sh", "scripts/test -short\n", "scripts/tests -short\n"},
		{"sh", "redis-cli GET leasehold:cluster:leader\n", "frobnicate GET leasehold:cluster:leader\n"},
		{"sh", "postgres://app@db:5432/app?sslmode=verify-full\n", "oracle://app@db:1521/app\n"},
		{"console", "$ leasehold resign --lease jobs --to web-2\nlease jobs: asked web-1\n", "$ leasehold resign --lease jobs --too web-2\nlease jobs: asked web-1\n"},
		{"json", `{"services": {"cluster": {"type": "Webda/StoreClusterService", "leaseDuration": 15000}}}`, `{"services": {"cluster": {"type": "Webda/StoreClusterService", "leaseDuraton": 15000}}}`},
		{"json", `{"services": {"poller": {"type": "MyApp/Poller", "interval": "10s"}}}`, `{"services": {"poller": {"type": "MyApp/Poller", "interval": "10 s"}}}`},
		{"yaml", "rules:\n  - apiGroups: [\"coordination.k8s.io\"]\n    resources: [\"leases\"]\n    verbs: [\"get\"]\n", "rules:\n  - apiGroups: [\"coordination.k8s.io\"]\n    resources: [\"leases\"]\n    verbs: [\"gett\"]\n"},
		{"yaml", "env:\n  - name: LEASEHOLD_STORE\n    value: mem://\n", "env:\n  - name: LEASEHOLD_STORE\n    vaule: mem://\n"},
		{"go", "held, err := locker.Acquire(ctx, \"invoice-run\")\nif err != nil {\n\treturn err\n}\n", "held, err := locker.Acquire(ctx, \"invoice-run\")\nif err == nil {\n\treturn err\n}\n"},
		{"text", "level=INFO msg=\"leasehold: became leader\" term=1\n", "level=INFO msg=\"leasehold: became the leader\" term=1\n"},
		{"text", "leasehold_is_leader{lease=\"x\"} 1\n", "leasehold_is_leading{lease=\"x\"} 1\n"},
		{"text", "lease:     x\nholder:    y\n", "lease:     x\nowner:     y\n"},
		{"text", "2026-12-01T11:49:26.655Z held holder=web-1 term=1\n", "2026-12-01T11:49:26.655Z held owner=web-1 term=1\n"},
		{"text", "leasehold/            the root\n  cluster/            the engine\n", "leasehold/            the root\n  clusters/           the engine\n"},
		{"text", "lease:     x\n", "some output\n"},
		{"toml", "", "a = 1\n"},
	} {
		if tc.good != "" {
			if err := checkBlock(t, tc.kind, tc.good); err != nil {
				t.Errorf("%s block %q: %v; want it to pass", tc.kind, tc.good, err)
			}
		}
		err := checkBlock(t, tc.kind, tc.bad)
		if err == nil {
			t.Errorf("%s block %q passes; want it refused", tc.kind, tc.bad)
			continue
		}
		t.Logf("%s block %q: %v", tc.kind, tc.bad, err)
	}
}
