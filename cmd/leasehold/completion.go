package main

import (
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/store"
)

const completionUsage = `Usage: leasehold completion bash|zsh

Prints a script that completes leasehold's commands, their flags and the flags' values (text
or json, the log levels, files, store URL schemes, the command after run's --) in bash or zsh.

  source <(leasehold completion bash)                      # bash, this shell
  leasehold completion bash > /etc/bash_completion.d/leasehold
  source <(leasehold completion zsh)                       # zsh, this shell, after compinit
  leasehold completion zsh > "${fpath[1]}/_leasehold"      # zsh, every new shell
`

// completedCommand is a command as the completion scripts know it.
type completedCommand struct {
	name, help string
	usage      string // its usage text, whose flag lines give its flags; empty for none
	words      []string
}

// completedCommands are the commands the scripts complete; their flags are read from their
// usage texts, so that the scripts follow the usage. run's usage exists on unix systems only
// (completion_unix.go adds it).
var completedCommands = []*completedCommand{
	{name: "run", help: "run CMD while this instance leads the lease"},
	{name: "status", help: "show who holds the lease", usage: statusUsage},
	{name: "repair", help: "replace a corrupt lease record by a released one", usage: repairUsage},
	{name: "leader", help: "print the value the leader publishes", usage: leaderUsage},
	{name: "resign", help: "ask the leader to step down", usage: resignUsage},
	{name: "demo", help: "watch an election with crashes, in one process", usage: demoUsage},
	{name: "version", help: "print the version and the linked stores"},
	{name: "completion", help: "print a shell completion script", words: []string{"bash", "zsh"}},
	{name: "help", help: "show the usage"},
}

// commandNamed returns the command of the table named name.
func commandNamed(name string) *completedCommand {
	for _, c := range completedCommands {
		if c.name == name {
			return c
		}
	}
	panic("leasehold: no command " + name)
}

// completedFlag is a flag of a usage text's list of flags (after "Flags:"): "  --log-format
// text|json  format of the log...", its description going on in the lines below, indented
// further.
type completedFlag struct {
	name, value, help string // value: its placeholder (D, FILE, text|json), empty for a bool flag
}

var flagLine = regexp.MustCompile(`^  (--[a-z][a-z-]*)(?: ([^ ]+))? +(.*)$`)

func (c *completedCommand) flags() []completedFlag {
	var out []completedFlag
	_, list, _ := strings.Cut(c.usage, "\nFlags:\n")
	for _, l := range strings.Split(list, "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil {
			out = append(out, completedFlag{name: m[1], value: m[2], help: m[3]})
		} else if len(out) > 0 && strings.HasPrefix(l, strings.Repeat(" ", 20)) {
			out[len(out)-1].help += " " + strings.TrimSpace(l)
		} else if len(out) > 0 && strings.TrimSpace(l) == "" {
			break // the flags' list ends
		}
	}
	for i := range out {
		out[i].help = shortHelp(out[i].help)
	}
	if c.usage != "" {
		out = append(out, completedFlag{name: "--help", help: "show the command's usage"})
	}
	return out
}

// shortHelp is the beginning of a flag's description, for a completion menu: up to its first
// ": ", "; " or " (" that leaves a phrase (20 characters or more).
func shortHelp(s string) string {
	for i := 20; i < len(s); i++ {
		if strings.HasPrefix(s[i:], ": ") || strings.HasPrefix(s[i:], "; ") || strings.HasPrefix(s[i:], " (") {
			return s[:i]
		}
	}
	return s
}

// valueWords are the values a flag's placeholder stands for, when they can be listed.
func valueWords(placeholder string) []string {
	switch {
	case strings.Contains(placeholder, "|"):
		return strings.Split(placeholder, "|")
	case placeholder == "HTTP-URL":
		return []string{"http://", "https://"}
	case placeholder == "LEVEL":
		return []string{"debug", "info", "warn", "error"}
	case placeholder == "URL":
		var out []string
		for _, s := range store.Schemes() {
			out = append(out, s+"://")
		}
		return out
	}
	return nil
}

// placeholderWords name what a flag's placeholder stands for, in zsh's messages; the others
// are written in lower case.
var placeholderWords = map[string]string{
	"D": "duration", "N": "number", "ID": "instance id", "NAME": "lease name", "ADDR": "host:port",
	"URL": "store URL", "text|json": "format", "LEVEL": "level",
	"HTTP-URL": "health check URL", "CMD": "shell command",
	"K": "number of partitions", "M": "partitions moved per renew interval",
}

func isFile(placeholder string) bool { return placeholder == "FILE" || placeholder == "PATH" }

func completionCommand(args []string, stdout io.Writer) (int, error) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprint(stdout, completionUsage)
		return exitOK, nil
	}
	if len(args) != 1 {
		return 0, badInput(completionUsage, "completion takes one argument, bash or zsh")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion())
	case "zsh":
		fmt.Fprint(stdout, zshCompletion())
	default:
		return 0, badInput(completionUsage, "completion %q: want bash or zsh", args[0])
	}
	return exitOK, nil
}

// valueFlags are the flags of every command that take a value, by name, with their
// placeholder: a flag's placeholder is the same in every command that has it.
func valueFlags() map[string]string {
	out := map[string]string{}
	for _, c := range completedCommands {
		for _, f := range c.flags() {
			if f.value != "" {
				out[f.name] = f.value
			}
		}
	}
	return out
}

func bashCompletion() string {
	var b strings.Builder
	var names []string
	for _, c := range completedCommands {
		names = append(names, c.name)
	}
	fmt.Fprintf(&b, `# bash completion for leasehold (leasehold completion bash)
_leasehold() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i
    COMPREPLY=()
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W %q -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]}
    if [[ $cmd == run ]]; then
        for ((i = 2; i < COMP_CWORD; i++)); do
            if [[ ${COMP_WORDS[i]} == -- ]]; then
                if ((i == COMP_CWORD - 1)); then
                    COMPREPLY=($(compgen -c -- "$cur"))
                else
                    compopt -o filenames 2>/dev/null
                    COMPREPLY=($(compgen -f -- "$cur"))
                fi
                return
            fi
        done
    fi
    case $prev in
`, strings.Join(names, " "))
	vf := valueFlags()
	for _, name := range slices.Sorted(maps.Keys(vf)) {
		switch p := vf[name]; {
		case isFile(p):
			fmt.Fprintf(&b, "        %s) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", name)
		case name == "--store":
			fmt.Fprintf(&b, "        %s) compopt -o nospace 2>/dev/null; COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", name, strings.Join(valueWords(p), " "))
		case valueWords(p) != nil:
			fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", name, strings.Join(valueWords(p), " "))
		default:
			fmt.Fprintf(&b, "        %s) return ;; # %s: nothing to list\n", name, p)
		}
	}
	b.WriteString("    esac\n    case $cmd in\n")
	for _, c := range completedCommands {
		words := c.words
		for _, f := range c.flags() {
			words = append(words, f.name)
		}
		if c.name == "run" {
			words = append(words, "--")
		}
		if len(words) > 0 {
			fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c.name, strings.Join(words, " "))
		}
	}
	b.WriteString("    esac\n}\ncomplete -F _leasehold leasehold\n")
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString(`#compdef leasehold
# zsh completion for leasehold (leasehold completion zsh)
_leasehold() {
  local -a commands
  commands=(
`)
	for _, c := range completedCommands {
		fmt.Fprintf(&b, "    %s\n", zshQuote(c.name+":"+c.help))
	}
	b.WriteString(`  )
  if (( CURRENT == 2 )); then
    _describe -t commands 'leasehold command' commands
    return
  fi
  # The command's flags as _arguments sees a command's: the subcommand is the word it starts at.
  local cmd=$words[2]
  shift words
  (( CURRENT-- ))
  case $cmd in
`)
	for _, c := range completedCommands {
		specs := []string{}
		for _, f := range c.flags() {
			spec := f.name + "[" + zshEscape(f.help) + "]"
			msg := placeholderWords[f.value]
			if msg == "" {
				msg = strings.ToLower(f.value)
			}
			switch {
			case isFile(f.value):
				spec += ":" + msg + ":_files"
			case valueWords(f.value) != nil:
				spec += ":" + zshEscape(msg) + ":(" + zshEscape(strings.Join(valueWords(f.value), " ")) + ")"
			case f.value != "":
				spec += ":" + zshEscape(msg) + ": "
			}
			specs = append(specs, zshQuote(spec))
		}
		switch {
		case c.name == "run":
			// -S: after --, no more flags: CMD and its arguments.
			specs = append([]string{"-S"}, append(specs, zshQuote("*::command:_normal"))...)
		case len(c.words) > 0:
			specs = append(specs, zshQuote("1:"+c.name+":("+strings.Join(c.words, " ")+")"))
		}
		if len(specs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "    %s)\n      _arguments \\\n        %s\n      ;;\n", c.name, strings.Join(specs, " \\\n        "))
	}
	b.WriteString(`  esac
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _leasehold "$@"
else
  compdef _leasehold leasehold
fi
`)
	return b.String()
}

// zshEscape makes text safe inside an _arguments spec's [description] or message.
func zshEscape(s string) string {
	return strings.NewReplacer("[", "(", "]", ")", ":", `\:`).Replace(s)
}

// zshQuote single-quotes s for zsh.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
