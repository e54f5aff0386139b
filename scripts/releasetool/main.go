// Command releasetool edits and packages the Go modules of this repository the way a release
// publishes them. It is used by scripts/release and scripts/test-install, from the root of a
// checkout (or of a copy of one, with -dir):
//
//	releasetool modules              print "DIR MODULEPATH TAGPREFIX" for every published module
//	releasetool version              print the version the modules require each other at
//	releasetool check                check the requirements between modules (below)
//	releasetool requires DIR         print "PATH VERSION" for every requirement of the module in
//	                                 DIR on a module from elsewhere
//	releasetool setversion VERSION   make every module require the others at VERSION
//	releasetool proxy -out DIR       write a file-based module proxy (GOPROXY=file://DIR) holding
//	                                 every published module at the version of the requirements
//
// The modules are the ones go.work uses. Those under scripts/ are tools of the repository and
// are not published. A published module's path is the root module's path followed by its
// directory, so that its tags are "<dir>/vX.Y.Z" (and "vX.Y.Z" for the root).
//
// The requirements between modules: every require line naming a module of the repository
// carries the same version, no go.mod replaces a module of the repository (a replace in a
// published go.mod does not reach the users of a library, and it makes
// `go install .../cmd/leasehold@version` fail), and go.work replaces each required module at
// exactly that version with its directory. The last point is what makes local development work
// without fetching anything: go.work makes the checkout's modules win the version selection,
// but the go command still reads the go.mod of the version a module requires (v0.1.0, say)
// while loading the module graph, and that version is not published before the release (and
// never holds the checkout's changes). A replace in go.work is never published.
//
// The module zips are made with golang.org/x/mod/zip, which applies the rules the Go module
// proxy and the go command apply (file names reserved on Windows, such as nul.go, case-folding
// collisions, sizes, nested modules left out).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

const usage = `usage: releasetool [-dir ROOT] modules|version|check
       releasetool [-dir ROOT] requires DIR
       releasetool [-dir ROOT] setversion VERSION
       releasetool [-dir ROOT] proxy -out DIR [-time RFC3339]
`

func main() {
	dir := flag.String("dir", ".", "root of the checkout (the directory of go.work)")
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}
	cmd, args := flag.Arg(0), flag.Args()[1:]
	err := run(*dir, cmd, args)
	if errors.Is(err, errUsage) {
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "releasetool %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(root, cmd string, args []string) error {
	ws, err := loadWorkspace(root)
	if err != nil {
		return err
	}
	switch cmd {
	case "modules":
		if len(args) != 0 {
			return errUsage
		}
		for _, m := range ws.published() {
			fmt.Printf("%s %s %s\n", m.dir, m.path, m.tagPrefix())
		}
		return nil
	case "version":
		if len(args) != 0 {
			return errUsage
		}
		v, err := ws.check()
		if err != nil {
			return err
		}
		fmt.Println(v)
		return nil
	case "check":
		if len(args) != 0 {
			return errUsage
		}
		_, err := ws.check()
		return err
	case "requires":
		if len(args) != 1 {
			return errUsage
		}
		dir := path.Clean(filepath.ToSlash(args[0]))
		i := slices.IndexFunc(ws.mods, func(m *mod) bool { return m.dir == dir })
		if i < 0 {
			return fmt.Errorf("%s is not a module of go.work", args[0])
		}
		for _, r := range ws.mods[i].file.Require {
			if !ws.inRepo(r.Mod.Path) {
				fmt.Printf("%s %s\n", r.Mod.Path, r.Mod.Version)
			}
		}
		return nil
	case "setversion":
		if len(args) != 1 {
			return errUsage
		}
		return ws.setVersion(args[0])
	case "proxy":
		fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
		out := fs.String("out", "", "directory of the proxy to write (created)")
		at := fs.String("time", "", "time of the versions in the .info files (default: now)")
		if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *out == "" {
			return errUsage
		}
		t := time.Now().UTC().Truncate(time.Second)
		if *at != "" {
			if t, err = time.Parse(time.RFC3339, *at); err != nil {
				return err
			}
		}
		return ws.writeProxy(*out, t)
	}
	return errUsage
}

// A mod is one module of the workspace.
type mod struct {
	dir   string // relative to the root, slash-separated: "." or "store/postgres"
	path  string // module path
	gomod string // file name of its go.mod
	file  *modfile.File
}

func (m *mod) tagPrefix() string {
	if m.dir == "." {
		return ""
	}
	return m.dir + "/"
}

type workspace struct {
	root   string
	work   *modfile.WorkFile
	mods   []*mod
	byPath map[string]*mod
}

func loadWorkspace(root string) (*workspace, error) {
	name := filepath.Join(root, "go.work")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	work, err := modfile.ParseWork(name, data, nil)
	if err != nil {
		return nil, err
	}
	ws := &workspace{root: root, work: work, byPath: map[string]*mod{}}
	for _, u := range work.Use {
		dir := path.Clean(filepath.ToSlash(u.Path))
		if path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
			return nil, fmt.Errorf("go.work: use %s: not a directory of the repository", u.Path)
		}
		gomod := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil {
			return nil, fmt.Errorf("%s: no module line", gomod)
		}
		m := &mod{dir: dir, path: f.Module.Mod.Path, gomod: gomod, file: f}
		if ws.byPath[m.path] != nil {
			return nil, fmt.Errorf("module %s is both in %s and in %s", m.path, ws.byPath[m.path].dir, dir)
		}
		ws.byPath[m.path] = m
		ws.mods = append(ws.mods, m)
	}
	rootMod := ws.rootModule()
	if rootMod == nil {
		return nil, errors.New("go.work does not use the root directory")
	}
	for _, m := range ws.published() {
		if want := path.Join(rootMod.path, m.dir); m.path != want {
			return nil, fmt.Errorf("module %s in %s: a published module's path must be %s (its tags are %sVERSION)", m.path, m.dir, want, m.tagPrefix())
		}
	}
	return ws, nil
}

func (ws *workspace) rootModule() *mod {
	for _, m := range ws.mods {
		if m.dir == "." {
			return m
		}
	}
	return nil
}

// published lists the modules that are tagged and fetched by users: all but the tools of the
// repository.
func (ws *workspace) published() []*mod {
	var out []*mod
	for _, m := range ws.mods {
		if m.dir != "scripts" && !strings.HasPrefix(m.dir, "scripts/") {
			out = append(out, m)
		}
	}
	return out
}

// inRepo reports whether p is, or looks like, the path of a module of this repository.
func (ws *workspace) inRepo(p string) bool {
	r := ws.rootModule().path
	return p == r || strings.HasPrefix(p, r+"/")
}

// check returns the one version the modules require each other at ("" when none requires
// another), or the list of what is wrong.
func (ws *workspace) check() (string, error) {
	var errs []error
	versions := map[string][]string{} // version -> "requirer -> required"
	required := map[string]bool{}
	for _, m := range ws.mods {
		for _, r := range m.file.Replace {
			if ws.inRepo(r.Old.Path) {
				errs = append(errs, fmt.Errorf("%s/go.mod replaces %s: go.work is the way to use the checkout's modules", m.dir, r.Old.Path))
			}
		}
		for _, r := range m.file.Require {
			if !ws.inRepo(r.Mod.Path) {
				continue
			}
			dep := ws.byPath[r.Mod.Path]
			switch {
			case dep == nil:
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s, which is not a module of go.work", m.dir, r.Mod.Path))
				continue
			case !slices.Contains(ws.published(), dep):
				errs = append(errs, fmt.Errorf("%s/go.mod requires %s, which is not published", m.dir, r.Mod.Path))
			}
			versions[r.Mod.Version] = append(versions[r.Mod.Version], m.path+" -> "+r.Mod.Path)
			required[r.Mod.Path] = true
		}
	}
	var version string
	switch len(versions) {
	case 0:
	case 1:
		for v := range versions {
			version = v
		}
		if err := checkVersion(version); err != nil {
			errs = append(errs, fmt.Errorf("the modules require each other at %w", err))
		}
	default:
		var list []string
		for v, reqs := range versions {
			list = append(list, fmt.Sprintf("%s (%s)", v, strings.Join(reqs, ", ")))
		}
		slices.Sort(list)
		errs = append(errs, fmt.Errorf("the modules require each other at more than one version: %s", strings.Join(list, "; ")))
	}
	// go.work: exactly one replace per required module, at that version, to its directory.
	replaced := map[string]bool{}
	for _, r := range ws.work.Replace {
		if !ws.inRepo(r.Old.Path) {
			continue
		}
		m := ws.byPath[r.Old.Path]
		switch {
		case m == nil || !required[r.Old.Path]:
			errs = append(errs, fmt.Errorf("go.work replaces %s, which no module requires", r.Old.Path))
		case r.Old.Version != version || r.New.Version != "" || path.Clean(filepath.ToSlash(r.New.Path)) != m.dir:
			errs = append(errs, fmt.Errorf("go.work: replace %s %s => %s: want %s %s => %s", r.Old.Path, r.Old.Version, r.New.Path, r.Old.Path, version, dirArg(m.dir)))
		case replaced[r.Old.Path]:
			errs = append(errs, fmt.Errorf("go.work replaces %s twice", r.Old.Path))
		}
		replaced[r.Old.Path] = true
	}
	for _, p := range slices.Sorted(maps.Keys(required)) {
		if !replaced[p] {
			errs = append(errs, fmt.Errorf("go.work does not replace %s %s => %s: the go command would fetch that version", p, version, dirArg(ws.byPath[p].dir)))
		}
	}
	return version, errors.Join(errs...)
}

// checkVersion accepts vMAJOR.MINOR.PATCH[-PRERELEASE] with a major version of 0 or 1: the
// modules' paths have no /vN suffix.
func checkVersion(v string) error {
	if !semver.IsValid(v) || semver.Canonical(v) != v || semver.Build(v) != "" {
		return fmt.Errorf("%q: not a version like v1.2.3 or v1.2.3-rc.1", v)
	}
	if err := module.CheckPathMajor(v, ""); err != nil {
		return fmt.Errorf("%q: a major version above v1 needs new module paths (/v2)", v)
	}
	return nil
}

func dirArg(dir string) string {
	if dir == "." {
		return "./"
	}
	return "./" + dir
}

// setVersion rewrites the requirements between modules to version, and go.work's replaces.
func (ws *workspace) setVersion(version string) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	if _, err := ws.check(); err != nil {
		// Refuse replaces in go.mod files and unknown modules; a go.work out of step, or
		// requirements at several versions, are what this command repairs.
		var fatal []error
		for _, m := range ws.mods {
			for _, r := range m.file.Replace {
				if ws.inRepo(r.Old.Path) {
					fatal = append(fatal, fmt.Errorf("%s/go.mod replaces %s: go.work is the way to use the checkout's modules", m.dir, r.Old.Path))
				}
			}
			for _, r := range m.file.Require {
				if ws.inRepo(r.Mod.Path) && ws.byPath[r.Mod.Path] == nil {
					fatal = append(fatal, fmt.Errorf("%s/go.mod requires %s, which is not a module of go.work", m.dir, r.Mod.Path))
				}
			}
		}
		if len(fatal) > 0 {
			return errors.Join(fatal...)
		}
	}
	required := map[string]bool{}
	for _, m := range ws.mods {
		changed := false
		for _, r := range slices.Clone(m.file.Require) {
			if !ws.inRepo(r.Mod.Path) {
				continue
			}
			required[r.Mod.Path] = true
			if r.Mod.Version != version {
				if err := m.file.AddRequire(r.Mod.Path, version); err != nil {
					return err
				}
				changed = true
			}
		}
		if changed {
			m.file.Cleanup()
			if err := writeFile(m.gomod, modfile.Format(m.file.Syntax)); err != nil {
				return err
			}
		}
	}
	// go.work: drop the replaces of the repository's modules that are not exactly right, then
	// add what is missing, in path order.
	// AddReplace puts a new line next to a replace of the same path, so a version change keeps
	// the lines where they are, in their block, under its comment.
	w := ws.work
	var paths []string
	for p := range required {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := w.AddReplace(p, version, dirArg(ws.byPath[p].dir), ""); err != nil {
			return err
		}
	}
	for _, r := range slices.Clone(w.Replace) {
		if ws.inRepo(r.Old.Path) && (!required[r.Old.Path] || r.Old.Version != version) {
			if err := w.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	w.Cleanup()
	name := filepath.Join(ws.root, "go.work")
	old, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if data := modfile.Format(w.Syntax); !bytes.Equal(old, data) {
		if err := writeFile(name, data); err != nil {
			return err
		}
	}
	// Read everything back: the files on disk must now pass the check.
	again, err := loadWorkspace(ws.root)
	if err != nil {
		return err
	}
	if v, err := again.check(); err != nil {
		return err
	} else if v != version && len(required) > 0 {
		return fmt.Errorf("the modules require each other at %s after setting %s", v, version)
	}
	return nil
}

func writeFile(name string, data []byte) error {
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	return os.WriteFile(name, data, info.Mode().Perm())
}

// writeProxy writes every published module, at the version the modules require each other
// at, in the layout of GOPROXY=file://DIR: DIR/<escaped path>/@v/{list,VERSION.info,.mod,.zip}.
func (ws *workspace) writeProxy(out string, t time.Time) error {
	version, err := ws.check()
	if err != nil {
		return err
	}
	if version == "" {
		return errors.New("no module requires another: no version to publish them at")
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t})
	if err != nil {
		return err
	}
	for _, m := range ws.published() {
		esc, err := module.EscapePath(m.path)
		if err != nil {
			return err
		}
		vesc, err := module.EscapeVersion(version)
		if err != nil {
			return err
		}
		vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		var zbuf bytes.Buffer
		mv := module.Version{Path: m.path, Version: version}
		if err := zip.CreateFromDir(&zbuf, mv, filepath.Join(ws.root, filepath.FromSlash(m.dir))); err != nil {
			return fmt.Errorf("module %s (%s): %w", m.path, m.dir, err)
		}
		gomod, err := os.ReadFile(m.gomod)
		if err != nil {
			return err
		}
		for name, data := range map[string][]byte{
			vesc + ".info": info,
			vesc + ".mod":  gomod,
			vesc + ".zip":  zbuf.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return err
			}
		}
		if err := appendVersion(filepath.Join(vdir, "list"), version); err != nil {
			return err
		}
	}
	return nil
}

func appendVersion(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if slices.Contains(strings.Fields(string(data)), version) {
		return nil
	}
	return os.WriteFile(list, append(data, version+"\n"...), 0o644)
}
