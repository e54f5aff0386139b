//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// completionScript writes the script of `leasehold completion shell` in a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	out, errOut, code := runLeasehold(t, "completion", shell)
	if code != 0 || errOut != "" {
		t.Fatalf("completion %s: exit %d\n%s", shell, code, errOut)
	}
	path := filepath.Join(t.TempDir(), "leasehold."+shell)
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The bash script is valid bash, and its function completes the commands, their flags (every
// flag of a command's usage), the flags' values and the command after run's --.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to check the script with")
	}
	script := completionScript(t, "bash")
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(words ...string) []string {
		t.Helper()
		args := append([]string{"-c", `source "$0" && COMP_WORDS=("$@") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _leasehold && printf '%s\n' "${COMPREPLY[@]}"`,
			script}, words...)
		out, err := exec.Command(bash, args...).Output()
		if err != nil {
			t.Fatalf("completing %q: %v", words, err)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"leasehold", "ru"}, []string{"run"}},
		{[]string{"leasehold", ""}, []string{"run", "status", "repair", "leader", "resign", "demo", "version", "completion", "help"}},
		{[]string{"leasehold", "run", "--adv"}, []string{"--advertise"}},
		{[]string{"leasehold", "run", "--prio"}, []string{"--priority"}},
		{[]string{"leasehold", "run", "--stab"}, []string{"--stability-window"}},
		{[]string{"leasehold", "run", "--health-"}, []string{"--health-cmd", "--health-url", "--health-timeout", "--health-failures"}},
		{[]string{"leasehold", "run", "--health-url", ""}, []string{"http://", "https://"}},
		{[]string{"leasehold", "leader", "--tim"}, []string{"--timeout"}},
		{[]string{"leasehold", "status", "--lo"}, []string{"--log-format", "--log-level"}},
		{[]string{"leasehold", "run", "--log-format", ""}, []string{"text", "json"}},
		{[]string{"leasehold", "run", "--log-level", "w"}, []string{"warn"}},
		{[]string{"leasehold", "status", "--store", "post"}, []string{"postgres://", "postgresql://"}},
		{[]string{"leasehold", "repair", "--min"}, []string{"--min-term"}},
		{[]string{"leasehold", "completion", ""}, []string{"bash", "zsh"}},
		{[]string{"leasehold", "run", "--lease-duration", ""}, nil},
	} {
		if got := complete(tc.words...); !slices.Equal(got, tc.want) {
			t.Errorf("completion of %q: %q, want %q", tc.words, got, tc.want)
		}
	}
	if got := complete("leasehold", "run", "--restart", "--", "ech"); !slices.Contains(got, "echo") {
		t.Errorf("completion of the command after run's --: %q, want echo among them", got)
	}

	// Every flag a command's usage lists is completed, and nothing else.
	usageFlag := regexp.MustCompile(`(?m)^  (--[a-z-]+)`)
	for _, cmd := range []string{"run", "status", "repair", "demo"} {
		out, _, _ := runLeasehold(t, cmd, "--help")
		_, list, _ := strings.Cut(out, "\nFlags:\n")
		want := []string{"--help"}
		for _, m := range usageFlag.FindAllStringSubmatch(list, -1) {
			want = append(want, m[1])
		}
		if cmd == "run" {
			want = append(want, "--")
		}
		got := complete("leasehold", cmd, "--")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("flags completed for %s: %q, want those of its usage: %q", cmd, got, want)
		}
	}
}

// The zsh script is valid zsh (checked when zsh is installed).
func TestZshCompletion(t *testing.T) {
	script := completionScript(t, "zsh")
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh is not installed: the zsh script is not checked")
	}
	if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
}

// completion takes bash or zsh.
func TestCompletionBadInput(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "fish"}, {"completion", "bash", "zsh"}} {
		_, stderr, code := runLeasehold(t, args...)
		if first, _, _ := strings.Cut(stderr, "\n"); code != 2 || !strings.Contains(first, "bash or zsh") || !isUsageError(stderr, "leasehold completion") {
			t.Errorf("%q: exit %d, want 2 saying bash or zsh, then a pointer to --help:\n%s", args, code, stderr)
		}
	}
}
