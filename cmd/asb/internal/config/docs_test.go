package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is where docs/ and .env.example live, relative to this package.
const repoRoot = "../../../.."

var docRow = regexp.MustCompile("^\\| `([A-Z0-9_]+)` \\| ([^|]*) \\|")

// docs/configuration.md has one table row per variable, under its section,
// with the same default; and no row for a variable asb does not read.
func TestConfigurationDocMatchesVars(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ section, def string }
	rows := map[string]row{}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = strings.TrimSpace(h)
			continue
		}
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs: %s has two rows", m[1])
		}
		rows[m[1]] = row{section: section, def: strings.TrimSpace(m[2])}
	}
	for _, v := range Vars() {
		r, ok := rows[v.Name]
		if !ok {
			t.Errorf("docs/configuration.md has no row for %s", v.Name)
			continue
		}
		if r.section != v.Section {
			t.Errorf("docs: %s is under %q, want %q", v.Name, r.section, v.Section)
		}
		if v.Default != "" && r.def != "`"+v.Default+"`" {
			t.Errorf("docs: %s default is %s, want `%s`", v.Name, r.def, v.Default)
		}
		if v.Default == "" && strings.HasPrefix(r.def, "`") {
			t.Errorf("docs: %s shows default %s, but Load has none", v.Name, r.def)
		}
		delete(rows, v.Name)
	}
	for name := range rows {
		t.Errorf("docs/configuration.md documents %s, which Load does not read", name)
	}
}

// .env.example mentions every variable, loads cleanly as it is, and still
// loads with every example line uncommented (so the examples are valid).
func TestEnvExample(t *testing.T) {
	path := filepath.Join(repoRoot, ".env.example")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mentioned := map[string]bool{}
	var uncommented []string
	for _, line := range strings.Split(string(data), "\n") {
		body := strings.TrimPrefix(line, "# ")
		name, _, ok := strings.Cut(body, "=")
		if !ok || !validEnvName(name) {
			uncommented = append(uncommented, line)
			continue
		}
		if _, known := varIndex[name]; !known {
			t.Errorf(".env.example sets %s, which is not a documented variable", name)
		}
		mentioned[name] = true
		uncommented = append(uncommented, body)
	}
	for _, v := range Vars() {
		if !mentioned[v.Name] {
			t.Errorf(".env.example does not mention %s", v.Name)
		}
	}

	c, err := Load([]string{"HOME=/home/op"}, path)
	if err != nil {
		t.Fatalf(".env.example does not load: %v", err)
	}
	if len(c.Warnings) != 0 {
		t.Errorf(".env.example causes warnings: %q", c.Warnings)
	}

	full := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(full, []byte(strings.Join(uncommented, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	// The example leaves secrets empty; the OAuth pair needs its secret.
	if _, err := Load([]string{"HOME=/home/op", "GITHUB_OAUTH_CLIENT_SECRET=x"}, full); err != nil {
		t.Errorf(".env.example with every line uncommented does not load: %v", err)
	}
}
