// The dependency rule of docs/architecture.md, enforced with go list:
//
//	cmd/asb ──► web ──► {github, mcp} ──► app ◄── {app/sqlite, sandbox}
//
// app imports only the standard library, and each adapter is the only
// importer of the library it wraps.
package asb_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/asb-dev/asb"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func under(path, prefix string) bool { return path == prefix || strings.HasPrefix(path, prefix+"/") }

// libraryOwners maps a wrapped library to the packages allowed to import it.
var libraryOwners = map[string][]string{
	"github.com/google/go-github":             {"github"},
	"github.com/bradleyfalzon/ghinstallation": {"github"},
	"golang.org/x/crypto/ssh":                 {"sandbox"},
	"github.com/modelcontextprotocol/go-sdk":  {"mcp"},
	"github.com/jmoiron/sqlx":                 {"app/sqlite"},
	"github.com/mattn/go-sqlite3":             {"app/sqlite"},
	"github.com/go-chi/chi":                   {"web"},
	"github.com/go-chi/httprate":              {"web"},
	"github.com/prometheus/client_golang":     {"web"},
	"github.com/chromedp/chromedp":            {"web"},
}

// inward lists, per layer, the module packages it must never depend on.
var inward = map[string][]string{
	"app":     {"app/sqlite", "sandbox", "github", "mcp", "web", "cmd", "migrations"},
	"sandbox": {"app/sqlite", "github", "mcp", "web", "cmd"},
	"github":  {"app/sqlite", "sandbox", "mcp", "web", "cmd"},
	"mcp":     {"app/sqlite", "sandbox", "github", "web", "cmd"},
	"web":     {"app/sqlite", "sandbox", "cmd"},
}

func TestDependencyRule(t *testing.T) {
	for _, p := range listPackages(t) {
		me := rel(p.ImportPath)

		// The core: the standard library and itself only, all the way down.
		if me == "app" {
			for _, d := range p.Deps {
				if !isStd(d) {
					t.Errorf("app depends on %s; the core may import only the standard library", d)
				}
			}
		}
		// app's own helpers (fakes, contract tests, sealing) stay free of adapters too.
		if under(me, "app") && me != "app/sqlite" {
			for _, d := range p.Deps {
				if !isStd(d) && !under(rel(d), "app") || under(rel(d), "app/sqlite") {
					t.Errorf("%s depends on %s; only the standard library and app are allowed", me, d)
				}
			}
		}
		for layer, forbidden := range inward {
			if !under(me, layer) || (layer == "app" && me == "app/sqlite") {
				continue
			}
			for _, d := range p.Deps {
				if !strings.HasPrefix(d, module+"/") {
					continue
				}
				for _, f := range forbidden {
					if under(rel(d), f) && !under(me, f) {
						t.Errorf("%s depends on %s: %s must not reach %s", me, rel(d), layer, f)
					}
				}
			}
		}
		for _, imp := range p.Imports {
			for lib, owners := range libraryOwners {
				if !under(imp, lib) && !strings.HasPrefix(imp, lib) {
					continue
				}
				allowed := false
				for _, o := range owners {
					if under(me, o) {
						allowed = true
					}
				}
				if !allowed {
					t.Errorf("%s imports %s; only %v may", me, imp, owners)
				}
			}
		}
	}
}

// TestRuleCatchesViolations makes sure the checks above are not vacuous.
func TestRuleCatchesViolations(t *testing.T) {
	if !under("app/apptest", "app") || under("application", "app") || !isStd("net/http") || isStd("github.com/x/y") {
		t.Fatal("path helpers are wrong")
	}
	found := false
	for _, p := range listPackages(t) {
		if rel(p.ImportPath) == "app/sqlite" {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, "github.com/jmoiron/sqlx") {
					found = true
				}
			}
		}
	}
	if !found {
		t.Fatal("app/sqlite does not import sqlx: the library map would check nothing")
	}
}
