package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(readFile(t, file), -1) {
		out[slug(m[1])] = true
	}
	return out
}

// TestDeployDocsLinksResolve checks the relative links (and their anchors)
// of the self-hosting docs, and that the runbook sections asb doctor
// points at exist.
func TestDeployDocsLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range []string{"../docs/self-hosting.md", "../docs/runbook.md", "README.md", "../README.md"} {
		for _, m := range link.FindAllStringSubmatch(readFile(t, doc), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), path)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links to %s, which does not exist", doc, target)
				continue
			}
			if anchor != "" && !anchors(t, file)[anchor] {
				t.Errorf("%s links to %s: no such heading", doc, target)
			}
		}
	}
	runbook := anchors(t, "../docs/runbook.md")
	files, _ := filepath.Glob("../cmd/asb/doctor*.go")
	for _, f := range files {
		for _, m := range regexp.MustCompile(`docs/runbook\.md, \\"([^\\]+)\\"`).FindAllStringSubmatch(readFile(t, f), -1) {
			if !runbook[slug(m[1])] {
				t.Errorf("%s points at the runbook section %q, which does not exist", f, m[1])
			}
		}
	}
}
