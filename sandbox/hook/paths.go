package hook

// What is protected. Two families:
//
//   - secrets: files that hold credentials (git, ssh, npm, cloud CLIs,
//     Claude's own login) and the environment of running processes. Any
//     access, read or write, by any command is denied: reading them is the
//     first half of exfiltration, writing them swaps identities.
//   - the control plane: what asb installed and what it watches (the hook
//     binary under /opt/asb, Claude's settings under ~/.claude, the run
//     state under /workspace/.agent.* other than the question file, the
//     co-pilot's /ask), plus what reconfigures the runtime for the next
//     launch (/etc, shell start-up files, git's global config, the claude
//     executable). The agent may read these; it may not change them.

import (
	"path"
	"strings"

	"github.com/asb-dev/asb/sandbox/inbox"
)

func under(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

var secretFiles = []string{
	"/root/.git-credentials",
	"/root/.netrc",
	"/root/.npmrc",
	"/root/.pypirc",
	"/root/.yarnrc",
	"/root/.yarnrc.yml",
	"/root/.claude.json",
	"/root/.claude/.credentials.json",
	"/root/.config/git/credentials",
	"/root/.cargo/credentials",
	"/root/.cargo/credentials.toml",
	"/root/.gem/credentials",
	"/root/.config/hub",
	"/root/.terraform.d/credentials.tfrc.json",
	"/etc/shadow",
	"/etc/gshadow",
	"/proc/kcore",
	"/dev/mem",
	"/dev/kmem",
}

var secretDirs = []string{
	"/root/.ssh",
	"/root/.aws",
	"/root/.gnupg",
	"/root/.config/gh",
	"/root/.kube",
	"/root/.docker",
	"/root/.azure",
	"/root/.config/gcloud",
}

// isSecretPath reports whether an absolute, clean path holds credentials.
func isSecretPath(p string) bool {
	if strings.HasPrefix(p, "/proc/") {
		f := strings.Split(p[len("/proc/"):], "/")
		if len(f) >= 2 {
			switch f[1] {
			case "environ", "mem":
				return true
			case "root":
				// /proc/<pid>/root is the same file system again.
				if len(f) > 2 && isSecretPath("/"+strings.Join(f[2:], "/")) {
					return true
				}
			}
		}
		if b := path.Base(p); b == "environ" || b == "mem" {
			return true
		}
	}
	for _, f := range secretFiles {
		if p == f {
			return true
		}
	}
	for _, d := range secretDirs {
		if under(p, d) {
			return true
		}
	}
	base := path.Base(p)
	switch base {
	case ".git-credentials", ".netrc", ".credentials.json", inbox.MCPConfigName:
		return true
	}
	for _, k := range []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"} {
		if strings.HasPrefix(base, k) {
			return true
		}
	}
	return strings.Contains(p+"/", "/.ssh/")
}

// secretReps stand for the secret paths when a pattern must be tested.
var secretReps = []string{
	"/root/.git-credentials", "/root/.netrc", "/root/.npmrc", "/root/.pypirc", "/root/.yarnrc.yml",
	"/root/.claude.json", "/root/.claude/.credentials.json", "/root/.ssh", "/root/.ssh/id_rsa",
	"/root/.ssh/id_ed25519", "/root/.ssh/config", "/root/.docker/config.json", "/root/.config/gh/hosts.yml",
	"/root/.aws/credentials", "/root/.gnupg/private-keys-v1.d", "/root/.kube/config",
	"/root/.cargo/credentials.toml", "/root/.config/git/credentials", "/proc/1/environ",
	"/proc/self/environ", "/proc/thread-self/environ", "/proc/1/task/1/environ", "/proc/self/mem",
	"/etc/shadow",
}

// isSecretAncestor reports whether p is a directory that contains secrets,
// so that a recursive read of it would read them.
func isSecretAncestor(p string) bool {
	if p == "/" || p == "/proc" {
		return true
	}
	if strings.HasPrefix(p, "/proc/") {
		f := strings.Split(p[len("/proc/"):], "/")
		return len(f) == 1 || (len(f) <= 3 && f[1] == "task")
	}
	for _, s := range append(append([]string{}, secretFiles...), secretDirs...) {
		if strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

var secretAncestorReps = []string{
	"/", "/root", "/proc", "/proc/1", "/proc/self", "/root/.config", "/root/.claude",
	"/root/.cargo", "/root/.gem", "/root/.config/git", "/etc",
}

// isControlPath reports whether writing p would change asb's control plane
// or the runtime's configuration. The question file is the one exception:
// writing it is how the agent asks.
func isControlPath(p string) bool {
	if strings.HasPrefix(p, inbox.StatePrefix) && p != inbox.QuestionFile {
		return true
	}
	for _, r := range controlRoots {
		if under(p, r) {
			return true
		}
	}
	for _, f := range controlFiles {
		if p == f {
			return true
		}
	}
	if path.Base(p) == "asb-hook" {
		return true
	}
	if strings.HasSuffix(p, "/.claude/settings.json") || strings.HasSuffix(p, "/.claude/settings.local.json") {
		return true
	}
	return false
}

// isControlPathStrict adds the question file: the agent may write it, but
// not replace it with a link, a fifo, an immutable or unreadable file.
func isControlPathStrict(p string) bool {
	return isControlPath(p) || under(p, inbox.QuestionFile)
}

var controlRoots = []string{
	inbox.ToolDir,
	inbox.ClaudeDir,
	inbox.AskDir,
	"/etc",
	"/proc/sys",
	"/root/.config/git",
	"/root/.local/share/claude",
	"/root/.local/bin/claude",
	"/usr/local/lib/node_modules/@anthropic-ai",
	"/usr/lib/node_modules/@anthropic-ai",
}

var controlFiles = []string{
	"/root/.claude.json",
	"/root/.claude.json.backup",
	"/root/.bashrc",
	"/root/.bash_profile",
	"/root/.bash_login",
	"/root/.bash_logout",
	"/root/.profile",
	"/root/.zshrc",
	"/root/.zshenv",
	"/root/.zprofile",
	"/root/.zlogin",
	"/root/.gitconfig",
	"/usr/local/bin/claude",
	"/usr/bin/claude",
}

var controlReps = []string{
	"/opt/asb", "/opt/asb/bin", "/opt/asb/bin/asb-hook", "/root/.claude", "/root/.claude/settings.json",
	"/root/.claude/settings.local.json", "/root/.claude.json", "/ask", "/ask/.ask.thread", "/etc",
	"/etc/profile", "/etc/passwd", "/etc/hosts", "/etc/environment", "/workspace/.agent.task",
	"/workspace/.agent.runs", "/workspace/.agent.runs/r1-1", "/workspace/.agent.runs/r1-1/exit",
	"/workspace/.agent.runs/r1-1/pid", "/workspace/.agent.x", "/root/.bashrc", "/root/.profile",
	"/root/.gitconfig", "/usr/local/bin/claude", "/usr/local/lib/node_modules/@anthropic-ai/claude-code",
}

var controlStrictReps = append([]string{inbox.QuestionFile}, controlReps...)

// isControlAncestor reports whether p contains part of the control plane,
// so that deleting, moving or extracting over it would reach it.
func isControlAncestor(p string) bool {
	if p == "/" {
		return true
	}
	for _, r := range append(append([]string{inbox.StatePrefix, inbox.QuestionFile}, controlRoots...), controlFiles...) {
		if strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

var controlAncestorReps = []string{"/", "/opt", "/root", "/workspace", "/usr", "/usr/local", "/usr/local/bin", "/root/.config"}

// ---- raw-text scans ----
//
// The structural checks work on parsed words. These scans are the backstop
// for text the parser cannot see into (inline code, here-documents, strings
// handed to other programs): they look for the tell-tale names in the text
// itself, with quotes and backslashes removed and ~/$HOME spelled out.

func normRaw(s string) string {
	s = strings.NewReplacer("'", "", "\"", "", "\\", "").Replace(s)
	s = strings.NewReplacer("${HOME}", "/root", "$HOME", "/root", "~root", "/root", "~", "/root").Replace(s)
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	for strings.Contains(s, "/./") {
		s = strings.ReplaceAll(s, "/./", "/")
	}
	return s
}

var rawSecretNeedles = []string{
	".git-credentials", ".netrc", ".credentials.json", "/environ", "id_rsa", "id_dsa", "id_ecdsa",
	"id_ed25519", "/root/.claude.json", "/root/.npmrc", "/root/.pypirc", "/root/.yarnrc",
	"/root/.docker/config.json", "/root/.config/gh", "/root/.aws", "/root/.gnupg", "/root/.kube",
	"/root/.cargo/credentials", "/root/.gem/credentials", "/root/.config/git/credentials", "/root/.azure",
	"/root/.config/gcloud", "/etc/shadow", "/etc/gshadow", "/proc/kcore", "/dev/mem", "/dev/kmem",
	inbox.MCPConfigName,
}

func nameByte(c byte) bool { return isNameChar(c) }

// findToken reports whether needle occurs in s not followed by a name
// character (so ".netrc" does not match ".netrcs", "/environ" not
// "/environment").
func findToken(s, needle string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], needle)
		if j < 0 {
			return false
		}
		end := i + j + len(needle)
		if end >= len(s) || !nameByte(s[end]) || strings.HasSuffix(needle, "/") {
			return true
		}
		i = i + j + 1
	}
}

// rawSecretHit returns the credential name a text mentions, or "".
func rawSecretHit(s string) string {
	for _, t := range []string{s, normRaw(s)} {
		for _, n := range rawSecretNeedles {
			if findToken(t, n) {
				return n
			}
		}
		// any .ssh directory
		for i := 0; ; {
			j := strings.Index(t[i:], ".ssh")
			if j < 0 {
				break
			}
			at := i + j
			end := at + 4
			before := at == 0 || !nameByte(t[at-1])
			after := end >= len(t) || !(nameByte(t[end]) || t[end] == '-' || t[end] == '.')
			if before && after {
				return ".ssh"
			}
			i = at + 1
		}
		// process memory
		for i := 0; ; {
			j := strings.Index(t[i:], "/proc/")
			if j < 0 {
				break
			}
			at := i + j
			rest := t[at:]
			if len(rest) > 512 {
				rest = rest[:512]
			}
			if k := strings.IndexAny(rest, " \t\n;&|'\"`)<>"); k >= 0 {
				rest = rest[:k]
			}
			if findToken(rest, "/mem") {
				return "/proc/*/mem"
			}
			i = at + 1
		}
	}
	return ""
}

var rawControlNeedles = []string{
	inbox.ToolDir, inbox.ClaudeDir, ".claude/settings", "asb-hook", "@anthropic-ai/claude-code",
}

// rawControlHit returns the control-plane name a text mentions, or "".
func rawControlHit(s string) string {
	t := normRaw(s)
	for _, n := range rawControlNeedles {
		if strings.Contains(t, n) {
			return n
		}
	}
	// .agent.<anything but question>
	for i := 0; ; {
		j := strings.Index(t[i:], ".agent.")
		if j < 0 {
			break
		}
		at := i + j
		if at > 0 && nameByte(t[at-1]) {
			i = at + 1
			continue
		}
		k := at + len(".agent.")
		e := k
		for e < len(t) && nameByte(t[e]) {
			e++
		}
		name := t[k:e]
		if name != "question" || (e < len(t) && (t[e] == '.' || t[e] == '-' || t[e] == '/')) {
			return inbox.StatePrefix + name
		}
		i = at + 1
	}
	return ""
}
