package web

import (
	"regexp"
	"strings"

	"github.com/asb-dev/asb/app"
)

// repoMention finds "owner/name" written as a word, optionally as a
// github.com address. static/app.js carries the same pattern so the page
// shows the attachment while typing; the server decides on preview and send.
var repoMention = regexp.MustCompile(`(?:^|[\s(\[{"'` + "`" + `,;:])(?:https?://)?(?:www\.)?(github\.com/)?([A-Za-z0-9][A-Za-z0-9_-]{0,38})/([A-Za-z0-9._-]{1,100})`)

// fileSuffixes are endings that make "a/b.go" a path, not a repository.
var fileSuffixes = []string{".go", ".js", ".ts", ".tsx", ".jsx", ".py", ".rb", ".rs", ".java", ".c", ".h", ".cc", ".cpp",
	".md", ".txt", ".json", ".yml", ".yaml", ".toml", ".lock", ".sh", ".html", ".css", ".sql", ".xml", ".mod", ".sum", ".cfg", ".ini"}

// detectRepo returns the first repository named in a task, or "".
// A github.com address always counts; a bare "owner/name" counts unless
// it looks like a file path (more segments, or a file extension).
func detectRepo(task string) string {
	if len(task) > 64<<10 {
		task = task[:64<<10]
	}
	for _, m := range repoMention.FindAllStringSubmatchIndex(task, 20) {
		host := m[2] >= 0
		owner, name := task[m[4]:m[5]], task[m[6]:m[7]]
		rest := task[m[7]:]
		name = strings.TrimRight(name, ".")
		if strings.HasSuffix(name, ".git") {
			name = strings.TrimSuffix(name, ".git")
		}
		if !host {
			// "src/app/main" and "a/b/c" are paths.
			if strings.HasPrefix(rest, "/") || looksLikeFile(name) {
				continue
			}
		}
		repo := owner + "/" + name
		if !host && notRepos[strings.ToLower(repo)] {
			continue
		}
		if _, _, err := app.ParseRepo(repo); err == nil {
			return repo
		}
	}
	return ""
}

// notRepos are slash pairs of everyday prose.
var notRepos = map[string]bool{"and/or": true, "either/or": true, "input/output": true, "read/write": true,
	"yes/no": true, "on/off": true, "true/false": true, "client/server": true, "i/o": true, "n/a": true, "w/o": true}

func looksLikeFile(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range fileSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}
