// Package deps holds the import rule of the whole house: which of posed's
// packages each may import, as the standard library's go/build
// dependency test holds its own. A package that needs a new arrow adds it
// here, where a reviewer sees it.
package deps

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/edgepose/posed/"

// allowed maps a package (a path, or a prefix ending in "/" for a
// folder's packages) to the posed packages it may import, the same way.
// The longest match names a package's rule. The layers, from the ground:
// message and internal (nothing of posed), config and device (no part of
// the method), infer (the method), train (below the daemon, which never
// links training), publish and pipeline (above them), pipeline/assemble
// (the configuration into the parts), cmd (the wiring, which nothing
// imports).
var allowed = map[string][]string{
	"message":   {},
	"internal/": {},
	"infer/":    {"infer/", "message", "internal/"},
	// config is data and its own checks: the parts' options, defaults
	// and problems are pipeline/assemble's to translate.
	"config":   {"internal/"},
	"device":   {"internal/"},
	"train":    {"train/", "infer/", "internal/"},
	"train/":   {"train", "train/", "infer/", "internal/"},
	"publish":  {"message", "internal/"},
	"publish/": {"message", "internal/"},
	// The frame loop and its stages take the publisher as an interface
	// (no arrow to publish) and their own options (only the assembler
	// reads config).
	"pipeline":  {"pipeline/", "infer/", "device", "message", "internal/"},
	"pipeline/": {"pipeline", "pipeline/", "infer/", "device", "message", "internal/"},
	// The assembler turns the configuration into every part, the
	// transport's among them: the one package below cmd that sees both.
	"pipeline/assemble": {"pipeline", "pipeline/", "infer/", "config", "device", "message", "internal/", "publish", "publish/"},
	"cmd/":              {"infer/", "internal/", "message", "config", "device", "train", "train/", "publish", "publish/", "pipeline", "pipeline/"},
}

// rule is the longest entry of allowed that names pkg.
func rule(pkg string) (string, bool) {
	best := ""
	found := false
	for k := range allowed {
		if (k == pkg || strings.HasSuffix(k, "/") && strings.HasPrefix(pkg, k)) && len(k) >= len(best) {
			best, found = k, true
		}
	}
	return best, found
}

// matches reports whether pkg is named by entry (a path or a folder).
func matches(entry, pkg string) bool {
	return entry == pkg || strings.HasSuffix(entry, "/") && strings.HasPrefix(pkg, entry)
}

// Every package of posed imports only what its rule allows (tests aside:
// they may use what they test with).
func TestImportRule(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "build" && rel == "build" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here (or only tests)
		}
		pkg := filepath.ToSlash(rel)
		r, ok := rule(pkg)
		if !ok {
			bad = append(bad, pkg+": no rule in allowed")
			return nil
		}
		seen++
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			ok := false
			for _, e := range allowed[r] {
				ok = ok || matches(e, dep)
			}
			if !ok {
				bad = append(bad, pkg+" imports "+dep+" (rule "+r+")")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 30 {
		t.Fatalf("only %d packages read from %s", seen, root)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
