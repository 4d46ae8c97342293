package app

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits bound every input the core accepts. A request over a limit is
// refused with EINVALID or ETOOLARGE and changes nothing.
type Limits struct {
	MaxTaskBytes     int // a task, follow-up or answer
	MaxSources       int
	MaxAllowDomains  int
	MaxSecrets       int
	MaxSecretBytes   int
	MaxQuestionBytes int
}

// DefaultLimits are generous for people and small enough to keep a
// database row and a GitHub comment sane.
var DefaultLimits = Limits{
	MaxTaskBytes:     64 << 10,
	MaxSources:       8,
	MaxAllowDomains:  32,
	MaxSecrets:       16,
	MaxSecretBytes:   16 << 10,
	MaxQuestionBytes: 16 << 10,
}

// CheckText validates free text (a task, follow-up or answer): not empty,
// valid UTF-8, no NUL, at most max bytes.
func CheckText(field, s string, max int) error {
	if strings.TrimSpace(s) == "" {
		return Errorf(EINVALID, "%s is empty", field)
	}
	if len(s) > max {
		return Errorf(ETOOLARGE, "%s is %d bytes; the limit is %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return Errorf(EINVALID, "%s is not valid UTF-8", field)
	}
	if strings.ContainsRune(s, 0) {
		return Errorf(EINVALID, "%s contains a NUL byte", field)
	}
	return nil
}

// ParseRepo validates "owner/name" as GitHub allows it.
func ParseRepo(s string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || !validOwner(owner) || !validRepoName(name) {
		return "", "", Errorf(EINVALID, "repository %q must be owner/name (letters, digits, '-', '_', '.')", clip(s, 100))
	}
	return owner, name, nil
}

func validOwner(s string) bool {
	if len(s) == 0 || len(s) > 39 || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c)) || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func validRepoName(s string) bool {
	if len(s) == 0 || len(s) > 100 || s == "." || s == ".." || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c)) || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// CheckRef validates a git ref name: no leading '-', a safe charset, none
// of git's forbidden sequences.
func CheckRef(s string) error {
	bad := len(s) == 0 || len(s) > 200 || s[0] == '-' || s[0] == '/' || strings.HasSuffix(s, "/") ||
		strings.HasSuffix(s, ".lock") || strings.HasSuffix(s, ".") ||
		strings.Contains(s, "..") || strings.Contains(s, "//") || strings.Contains(s, "@{")
	for _, c := range s {
		if !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c)) || strings.ContainsRune("-_./+", c)) {
			bad = true
		}
	}
	if bad {
		return Errorf(EINVALID, "ref %q is not a safe git ref (letters, digits, '-', '_', '.', '/', '+'; no leading '-')", clip(s, 100))
	}
	return nil
}

// CheckDirName validates a folder name under /workspace.
func CheckDirName(s string) error {
	if !validRepoName(s) || strings.HasPrefix(s, ".") {
		return Errorf(EINVALID, "folder %q must be a plain name (letters, digits, '-', '_', '.'), not starting with '.'", clip(s, 100))
	}
	return nil
}

// forbiddenEnv are variables a one-step secret may never set: they change
// how programs load or find code, or the agent's own control plane.
var forbiddenEnv = map[string]bool{
	"PATH": true, "HOME": true, "SHELL": true, "USER": true, "PWD": true, "IFS": true,
	"ENV": true, "BASH_ENV": true, "PS4": true, "PROMPT_COMMAND": true, "TMPDIR": true,
	"NODE_OPTIONS": true, "PYTHONPATH": true, "PYTHONSTARTUP": true, "PERL5OPT": true, "RUBYOPT": true,
	"GIT_CONFIG": true, "GIT_EXEC_PATH": true, "GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_ASKPASS": true,
	"ASK_LANE": true,
}

// CheckSecretName validates the name of a one-step secret: an upper-case
// environment variable name that cannot hijack the process.
func CheckSecretName(name string) error {
	valid := len(name) > 0 && len(name) <= 64 && !(name[0] >= '0' && name[0] <= '9')
	for _, c := range name {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			valid = false
		}
	}
	if !valid {
		return Errorf(EINVALID, "secret name %q must be an environment variable name (A-Z, 0-9, _)", clip(name, 64))
	}
	switch {
	case forbiddenEnv[name],
		strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"),
		strings.HasPrefix(name, "GIT_CONFIG_"), strings.HasPrefix(name, "CLAUDE_"),
		strings.HasPrefix(name, "ASB_"), strings.HasPrefix(name, "MSB_"):
		return Errorf(EINVALID, "secret name %s is reserved: it would change how the box runs programs", name)
	}
	return nil
}

// CheckSecrets validates a set of one-step secrets.
func CheckSecrets(secrets map[string]string, l Limits) error {
	if len(secrets) > l.MaxSecrets {
		return Errorf(EINVALID, "at most %d secrets per step", l.MaxSecrets)
	}
	for k, v := range secrets {
		if err := CheckSecretName(k); err != nil {
			return err
		}
		// The value is never echoed: it is a secret.
		if len(v) > l.MaxSecretBytes || strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			return Errorf(EINVALID, "secret %s must be valid UTF-8 without NUL, at most %d bytes", k, l.MaxSecretBytes)
		}
	}
	return nil
}

// CheckDomain validates an egress domain: a hostname, optionally "*." wildcarded.
func CheckDomain(d string) error {
	h := strings.TrimPrefix(d, "*.")
	ok := len(h) > 0 && len(h) <= 253 && strings.Contains(h, ".")
	for _, label := range strings.Split(h, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			ok = false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				ok = false
			}
		}
	}
	if !ok {
		return Errorf(EINVALID, "domain %q is not a hostname like api.example.com or *.example.com", clip(d, 100))
	}
	return nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// firstLine returns the first non-empty line of s, clipped.
func firstLine(s string, n int) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return clip(t, n)
		}
	}
	return ""
}
