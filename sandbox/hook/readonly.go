package hook

// The ask lane's read-only gate. It is an allowlist: a tool call passes
// only when every part of it is known to read. Bash commands are parsed
// into the simple commands they would run, and each one (including those
// inside $(...), <(...), loops and subshells) must be a known reader with
// safe options; output may only go to the terminal or /dev/null. Anything
// the parser cannot follow is denied. The credential checks of the guard
// apply too: reading is not a licence to read secrets.
//
// The first version's gate was a regular expression over the command text
// and was walked around with node -e, python -c, perl, xargs rm,
// find -delete, curl -o and git -c; none of those is on this allowlist.

import (
	"slices"
	"strings"
)

const roAdvice = " The ask lane is read-only: answer from what you can read with Read, Grep, Glob and shell commands " +
	"that only read (git status/diff/log/show, cat, head, tail, ls, rg, grep, wc, find without -delete/-exec). " +
	"Do not retry with another way of writing."

func denyRO(format string, args ...any) Decision {
	d := Denied(format, args...)
	d.Reason = "asb ro: blocked: " + d.Reason + "." + roAdvice
	return d
}

// ReadOnly is the ask lane's gate.
func ReadOnly(in Input) Decision {
	switch in.ToolName {
	case "Read", "NotebookRead", "Grep", "Glob", "LS":
		return Guard(in)
	case "TodoWrite", "BashOutput":
		// The co-pilot's own task list and the output of its own
		// background commands: nothing outside the session changes.
		return Allowed()
	case "Bash":
		cmd, ok, err := in.str("command")
		if err != nil || !ok {
			return denyRO("Bash call without a command string")
		}
		return roShell(cmd, toolCwd(in.Cwd))
	case "Edit", "MultiEdit", "Write", "NotebookEdit", "Update":
		return denyRO("%s changes files", in.ToolName)
	case "WebFetch", "WebSearch":
		return denyRO("%s reaches the network", in.ToolName)
	}
	return denyRO("%s is not on the read-only lane's allowlist", in.ToolName)
}

func roShell(src, cwd string) Decision {
	if hit := rawSecretHit(src); hit != "" {
		return denySecret("the command mentions " + hit + " (a credential file or process environment)")
	}
	sc, err := parseShell(src, cwd)
	if err != nil {
		return denyRO("the command could not be parsed (%v), so it cannot be shown to only read", err)
	}
	sc.src = src
	for _, c := range sc.cmds {
		var v *cmdView
		if c.kind == cmdSimple && len(c.args) > 0 {
			v = resolve(c, sc)
		}
		if r := secretReason(c, v); r != "" {
			return denySecret(r)
		}
		if r := roReason(c, v, sc); r != "" {
			return denyRO("%s", r)
		}
	}
	return Allowed()
}

var roWrappers = map[string]bool{"timeout": true, "nice": true, "time": true, "command": true, "builtin": true, "stdbuf": true}

var roPrefixAssign = map[string]bool{"LC_ALL": true, "LANG": true, "LANGUAGE": true, "TZ": true, "NO_COLOR": true, "TERM": true,
	"COLUMNS": true, "LINES": true, "CLICOLOR": true}

// dangerousVar names variables that change what later commands run.
func dangerousVar(n string) bool {
	switch n {
	case "PATH", "IFS", "ENV", "BASH_ENV", "PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "HOME",
		"EDITOR", "VISUAL", "PAGER", "MANPAGER", "TMPDIR":
		return true
	}
	for _, p := range []string{"LD_", "GIT_", "BASH_", "PYTHON", "NODE_", "PERL", "RUBY", "LESS"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return strings.HasSuffix(n, "PAGER") || strings.HasSuffix(n, "EDITOR")
}

// roReason says why one command is not read-only; "" when it is.
func roReason(c *simpleCmd, v *cmdView, sc *script) string {
	for _, r := range c.redirs {
		if r.doc != nil || r.dup {
			continue
		}
		switch r.op {
		case "<", "<<<":
			if t, ok := r.target.lit(); ok && (strings.HasPrefix(t, "/dev/tcp/") || strings.HasPrefix(t, "/dev/udp/")) {
				return "it opens a network connection (" + t + ")"
			}
			if _, ok := r.target.lit(); !ok && r.op == "<" && strings.Contains(r.target.raw, "/dev/") {
				return "it reads from a computed device path"
			}
		case ">", ">>", ">|", "&>", "&>>", ">&":
			t, ok := r.target.lit()
			if ok && (t == "/dev/null" || t == "/dev/stdout" || t == "/dev/stderr") {
				continue
			}
			return "it redirects output into " + r.target.raw
		default:
			return "it opens " + r.target.raw + " for writing"
		}
	}
	for _, w := range c.args {
		for _, p := range w.parts {
			if p.kind == partProc && p.out {
				return "it uses an output process substitution >(...)"
			}
		}
	}
	switch c.kind {
	case cmdData, cmdTest, cmdArith, cmdRedirs:
		return ""
	}
	for _, a := range c.assigns {
		if len(c.args) > 0 {
			if !roPrefixAssign[a.name] && !strings.HasPrefix(a.name, "LC_") {
				return "it sets " + a.name + " for the command it runs"
			}
		} else if dangerousVar(a.name) {
			return "it sets " + a.name + ", which changes what later commands run"
		}
	}
	if v == nil {
		return ""
	}
	if v.dynamic {
		return "the program to run is computed at run time"
	}
	for _, w := range v.wrappers {
		if !roWrappers[w] {
			return w + " is not allowed in the read-only lane"
		}
	}
	if len(v.code) > 0 || len(v.outFiles) > 0 {
		return v.name + " runs code or writes a file"
	}
	if sc.funcs[v.name] {
		return "" // its body was checked as commands of this line
	}
	return roCmdReason(v)
}

// roFree lists commands that only read or print, whatever their options.
var roFree = map[string]bool{
	"cat": true, "tac": true, "nl": true, "head": true, "tail": true, "wc": true, "ls": true, "dir": true, "vdir": true,
	"stat": true, "du": true, "df": true, "pwd": true, "echo": true, "printf": true, "true": true, "false": true, "test": true,
	"[": true, "basename": true, "dirname": true, "realpath": true, "readlink": true, "cut": true, "tr": true, "paste": true,
	"join": true, "comm": true, "column": true, "fold": true, "fmt": true, "expand": true, "unexpand": true, "rev": true,
	"od": true, "hexdump": true, "strings": true, "md5sum": true, "sha1sum": true, "sha224sum": true, "sha256sum": true,
	"sha384sum": true, "sha512sum": true, "b2sum": true, "cksum": true, "sum": true, "base64": true, "base32": true,
	"seq": true, "diff": true, "cmp": true, "grep": true, "egrep": true, "fgrep": true, "rgrep": true, "which": true,
	"type": true, "whereis": true, "id": true, "whoami": true, "groups": true, "uname": true, "nproc": true, "free": true,
	"uptime": true, "arch": true, "sleep": true, ":": true, "cd": true, "pushd": true, "popd": true, "read": true,
	"exit": true, "wait": true, "jq": true, "gojq": true, "pgrep": true, "ps": true, "command": true, "set": true,
	"shift": true, "getopts": true, "return": true, "break": true, "continue": true, "cal": true, "tput": true,
	"numfmt": true, "tsort": true, "look": true, "zcat": true, "bzcat": true, "xzcat": true,
}

var roChecked = map[string]func(v *cmdView) string{
	"find":     roFind,
	"rg":       roRg,
	"ag":       roAg,
	"sort":     roSort,
	"uniq":     roUniq,
	"tree":     roTree,
	"date":     roDate,
	"hostname": roHostname,
	"xxd":      roXxd,
	"yq":       roYq,
	"file":     roFile,
	"sed":      roSed,
	"awk":      roAwk,
	"gawk":     roAwk,
	"mawk":     roAwk,
	"nawk":     roAwk,
	"git":      roGit,
	"go":       roGo,
}

var versionTools = map[string]bool{
	"node": true, "npm": true, "npx": true, "pnpm": true, "yarn": true, "python": true, "python3": true, "pip": true,
	"pip3": true, "cargo": true, "rustc": true, "java": true, "javac": true, "gcc": true, "g++": true, "clang": true,
	"make": true, "cmake": true, "ruby": true, "perl": true, "php": true, "deno": true, "bun": true, "docker": true,
	"terraform": true, "kubectl": true, "dotnet": true, "mvn": true, "gradle": true, "bash": true, "sh": true,
	"claude": true, "gh": true, "uv": true, "poetry": true, "tsc": true,
}

// roCmdReason applies the command table; the guard uses it too, to tell
// readers (which may name the control plane) from everything else.
func roCmdReason(v *cmdView) string {
	if v.dynamic {
		return "the program to run is computed at run time"
	}
	if v.envDump || v.viaXargs {
		return v.name + " via xargs/env is not on the read-only allowlist"
	}
	if f, ok := roChecked[v.name]; ok {
		return f(v)
	}
	if roFree[v.name] {
		return ""
	}
	if lits, ok := v.allLit(); ok && len(lits) == 1 && versionTools[v.name] {
		switch lits[0] {
		case "--version", "-v", "-V", "version":
			return ""
		}
	}
	return v.name + " is not on the read-only allowlist"
}

func litsOrDeny(v *cmdView) ([]string, string) {
	lits, ok := v.allLit()
	if !ok {
		return nil, v.name + " with computed arguments cannot be shown to only read"
	}
	return lits, ""
}

func shortHas(s string, c byte) bool {
	return len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s[1:], c) >= 0
}

func roFind(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		switch s {
		case "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls":
			return "find " + s + " runs commands or writes files"
		}
	}
	return r
}

func roRg(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		if strings.HasPrefix(s, "--pre") || strings.HasPrefix(s, "--hostname-bin") {
			return "rg " + s + " runs a program"
		}
	}
	return r
}

func roAg(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		if strings.HasPrefix(s, "--pager") {
			return "ag --pager runs a program"
		}
	}
	return r
}

func roSort(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		if strings.HasPrefix(s, "--output") || strings.HasPrefix(s, "--compress-program") || shortHas(s, 'o') {
			return "sort -o writes a file"
		}
	}
	return r
}

func roUniq(v *cmdView) string {
	lits, r := litsOrDeny(v)
	if r != "" {
		return r
	}
	if _, ops := splitArgs(lits, "-f", "-s", "-w"); len(ops) > 1 {
		return "uniq with two file arguments writes the second"
	}
	return ""
}

// splitArgs separates options from operands ("-" is an operand); the
// options listed in valued take the next word as their value.
func splitArgs(lits []string, valued ...string) (opts, operands []string) {
	for i := 0; i < len(lits); i++ {
		s := lits[i]
		switch {
		case slices.Contains(valued, s):
			opts = append(opts, s)
			i++
		case strings.HasPrefix(s, "-") && s != "-":
			opts = append(opts, s)
		default:
			operands = append(operands, s)
		}
	}
	return opts, operands
}

func roTree(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		if s == "-o" || strings.HasPrefix(s, "--output") {
			return "tree -o writes a file"
		}
	}
	return r
}

func roDate(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for i := 0; i < len(lits); i++ {
		s := lits[i]
		switch {
		case s == "-s" || strings.HasPrefix(s, "--set") || (strings.HasPrefix(s, "-s") && !strings.HasPrefix(s, "--")):
			return "date -s sets the clock"
		case s == "-d" || s == "--date" || s == "-r" || s == "--reference" || s == "-f" || s == "--file":
			i++
		case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+"):
		default:
			return "date with an operand sets the clock"
		}
	}
	return r
}

func roHostname(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		switch s {
		case "-f", "--fqdn", "--long", "-s", "--short", "-i", "--ip-address", "-I", "--all-ip-addresses", "-d", "--domain", "-A", "--all-fqdns", "-a", "--alias":
		default:
			return "hostname " + s + " may set the host name"
		}
	}
	return r
}

func roXxd(v *cmdView) string {
	lits, r := litsOrDeny(v)
	if r != "" {
		return r
	}
	opts, ops := splitArgs(lits, "-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-offset", "-s", "-seek", "-n", "-name")
	if slices.Contains(opts, "-r") || slices.Contains(opts, "-revert") {
		return "xxd -r writes binary output"
	}
	if len(ops) > 1 {
		return "xxd with two file arguments writes the second"
	}
	return ""
}

func roYq(v *cmdView) string {
	lits, r := litsOrDeny(v)
	for _, s := range lits {
		if s == "-i" || strings.HasPrefix(s, "--inplace") || strings.HasPrefix(s, "-i=") {
			return "yq -i edits files"
		}
	}
	return r
}

func roFile(v *cmdView) string {
	for _, w := range v.args {
		if s, ok := w.lit(); ok && (s == "-C" || s == "--compile") {
			return "file -C writes a magic file"
		}
	}
	return ""
}

func roGo(v *cmdView) string {
	lits, r := litsOrDeny(v)
	if r != "" {
		return r
	}
	if len(lits) == 1 && (lits[0] == "version" || lits[0] == "env") {
		return ""
	}
	if len(lits) > 1 && lits[0] == "env" {
		for _, s := range lits[1:] {
			if strings.HasPrefix(s, "-w") || strings.HasPrefix(s, "-u") {
				return "go env -w changes go's configuration"
			}
		}
		return ""
	}
	return "go " + strings.Join(lits, " ") + " builds or downloads; only go version and go env are read-only"
}

// roSed allows sed scripts that only print: no -i, no script files, no
// w/W/e/r/R commands, no s///w or s///e.
func roSed(v *cmdView) string {
	lits, r := litsOrDeny(v)
	if r != "" {
		return r
	}
	var scripts []string
	haveE := false
	var positional []string
	for i := 0; i < len(lits); i++ {
		s := lits[i]
		switch {
		case s == "--":
			positional = append(positional, lits[i+1:]...)
			i = len(lits)
		case strings.HasPrefix(s, "--in-place") || strings.HasPrefix(s, "--file") || s == "--follow-symlinks":
			return "sed " + s + " edits files or reads a script file"
		case strings.HasPrefix(s, "--expression"):
			haveE = true
			if v, ok := strings.CutPrefix(s, "--expression="); ok {
				scripts = append(scripts, v)
			} else if i+1 < len(lits) {
				scripts = append(scripts, lits[i+1])
				i++
			}
		case strings.HasPrefix(s, "--"):
			if s == "--line-length" {
				i++
			}
		case strings.HasPrefix(s, "-") && len(s) > 1:
			for k := 1; k < len(s); k++ {
				switch s[k] {
				case 'i', 'f':
					return "sed -" + string(s[k]) + " edits files or reads a script file"
				case 'e':
					haveE = true
					if rest := s[k+1:]; rest != "" {
						scripts = append(scripts, rest)
					} else if i+1 < len(lits) {
						scripts = append(scripts, lits[i+1])
						i++
					}
					k = len(s)
				case 'l':
					if k == len(s)-1 {
						i++
					}
					k = len(s)
				case 'n', 'E', 'r', 's', 'u', 'z':
				default:
					return "sed option -" + string(s[k]) + " is not allowed in the read-only lane"
				}
			}
		default:
			positional = append(positional, s)
		}
	}
	if !haveE {
		if len(positional) == 0 {
			return "sed without a script"
		}
		scripts = append(scripts, positional[0])
	}
	for _, sc := range scripts {
		if r := sedScriptReason(sc); r != "" {
			return r
		}
	}
	return ""
}

// sedScriptReason parses a sed script far enough to find commands that
// write files or run programs.
func sedScriptReason(s string) string {
	i := 0
	bad := func(why string) string { return "sed script " + why }
	// skipRegex skips to the closing delimiter. In a regex (not in a
	// replacement) a bracket expression is literal up to its ']', the
	// delimiter included, as GNU sed reads it: s/[/]/x/ is one command.
	skipRegex := func(delim byte, regex bool) bool {
		for i < len(s) {
			c := s[i]
			if c == '\\' {
				i += 2
				continue
			}
			if c == '\n' {
				return false
			}
			if regex && c == '[' {
				j := i + 1
				if j < len(s) && s[j] == '^' {
					j++
				}
				if j < len(s) && s[j] == ']' {
					j++
				}
				for j < len(s) && s[j] != ']' {
					if s[j] == '[' && j+1 < len(s) && (s[j+1] == ':' || s[j+1] == '.' || s[j+1] == '=') {
						k := strings.Index(s[j+2:], string(s[j+1])+"]")
						if k < 0 {
							return false
						}
						j += k + 4
						continue
					}
					if s[j] == '\n' {
						return false
					}
					j++
				}
				if j >= len(s) {
					return false
				}
				i = j + 1
				continue
			}
			i++
			if c == delim {
				return true
			}
		}
		return false
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] >= '0' && s[i] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		case i < len(s) && s[i] == '/':
			i++
			if !skipRegex('/', true) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !skipRegex(d, true) {
				return false
			}
		}
		return true
	}
	for {
		for i < len(s) && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= len(s) {
			return ""
		}
		if !address() {
			return bad("has an unterminated address")
		}
		if i < len(s) && s[i] == ',' {
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return bad("has an unterminated address")
			}
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '!') {
			i++
		}
		if i >= len(s) {
			return bad("ends after an address")
		}
		c := s[i]
		i++
		switch c {
		case '{', '}', '=', 'p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'z', 'F', 'l', 'q', 'Q', 'v':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == ' ') && (c == 'l' || c == 'q' || c == 'Q') {
				i++
			}
		case '#', ':', 'b', 't', 'T':
			for i < len(s) && s[i] != '\n' && !(c != '#' && c != ':' && s[i] == ';') {
				i++
			}
		case 's', 'y':
			if i >= len(s) || s[i] == '\n' || s[i] == '\\' {
				return bad("has a bad " + string(c) + " command")
			}
			d := s[i]
			i++
			if !skipRegex(d, c == 's') || !skipRegex(d, false) {
				return bad("has an unterminated " + string(c) + " command")
			}
			if c == 's' {
				for i < len(s) && strings.IndexByte("gpiImM0123456789", s[i]) >= 0 {
					i++
				}
				if i < len(s) && (s[i] == 'w' || s[i] == 'W' || s[i] == 'e') {
					return bad("s///" + string(s[i]) + " writes a file or runs a command")
				}
			}
		case 'a', 'i', 'c':
			for i < len(s) && s[i] != '\n' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
		default:
			return bad("command " + string(c) + " writes, reads another file or runs a program")
		}
	}
}

func roAwk(v *cmdView) string {
	for _, w := range v.args {
		s, ok := w.lit()
		if !ok {
			continue
		}
		switch {
		case s == "-f" || s == "--file" || strings.HasPrefix(s, "--file="):
			return "awk -f runs a program file the gate cannot see"
		case s == "-i" || s == "--include" || s == "-l" || s == "--load" || s == "-E" || s == "--exec":
			return "awk " + s + " loads code"
		}
	}
	code, _ := inlineCode(v)
	if code == "\x00dynamic" {
		return "awk program computed at run time"
	}
	if code == "" {
		return "awk without a program"
	}
	if containsWord(code, "system") || strings.Contains(strings.ReplaceAll(code, "||", ""), "|") {
		return "the awk program runs commands (system or a pipe)"
	}
	if strings.Contains(code, "@load") || strings.Contains(code, "@include") {
		return "the awk program loads extensions"
	}
	for i := 0; i+5 <= len(code); i++ {
		if code[i:i+5] != "print" || (i > 0 && isNameChar(code[i-1])) {
			continue
		}
		for j := i + 5; j < len(code) && code[j] != ';' && code[j] != '}' && code[j] != '\n'; j++ {
			if code[j] == '>' {
				return "the awk program writes to a file (print >)"
			}
		}
	}
	return ""
}

var gitReadSubs = map[string]bool{
	"status": true, "diff": true, "log": true, "show": true, "blame": true, "annotate": true, "ls-files": true,
	"ls-tree": true, "rev-parse": true, "describe": true, "shortlog": true, "cat-file": true, "rev-list": true,
	"merge-base": true, "name-rev": true, "for-each-ref": true, "show-ref": true, "count-objects": true,
	"whatchanged": true, "range-diff": true, "cherry": true, "diff-tree": true, "diff-files": true, "diff-index": true,
	"show-branch": true, "var": true, "version": true, "grep": true, "check-ignore": true, "check-attr": true,
	"verify-commit": true, "verify-tag": true,
}

// roGit allows the git subcommands that only read, without options that
// run programs or write files.
func roGit(v *cmdView) string {
	lits, r := litsOrDeny(v)
	if r != "" {
		return r
	}
	i := 0
	for i < len(lits) {
		s := lits[i]
		switch {
		case s == "-C" || s == "--git-dir" || s == "--work-tree":
			i += 2
			continue
		case s == "--no-pager" || s == "-P" || s == "--no-optional-locks" || s == "--bare" || s == "--literal-pathspecs" ||
			s == "--glob-pathspecs" || s == "--noglob-pathspecs" || s == "--icase-pathspecs" || s == "--no-replace-objects" ||
			strings.HasPrefix(s, "--git-dir=") || strings.HasPrefix(s, "--work-tree="):
			i++
			continue
		case strings.HasPrefix(s, "-"):
			return "git option " + s + " is not allowed in the read-only lane (it can run programs or change configuration)"
		}
		break
	}
	if i >= len(lits) {
		return ""
	}
	sub, rest := lits[i], lits[i+1:]
	for _, s := range rest {
		if strings.HasPrefix(s, "--output") || s == "--ext-diff" || strings.HasPrefix(s, "--open-files-in-pager") ||
			(sub == "grep" && strings.HasPrefix(s, "-O")) || strings.HasPrefix(s, "--exec") {
			return "git " + sub + " " + s + " writes a file or runs a program"
		}
	}
	listOnly := func(allowed map[string]bool, withArg map[string]bool) string {
		list := false
		var pos []string
		for k := 0; k < len(rest); k++ {
			s := rest[k]
			name, _, _ := strings.Cut(s, "=")
			switch {
			case s == "-l" || s == "--list":
				list = true
			case withArg[s]:
				k++
			case strings.HasPrefix(s, "-"):
				if !allowed[name] && !strings.HasPrefix(name, "--color") && !strings.HasPrefix(name, "--column") && !strings.HasPrefix(name, "-n") {
					return "git " + sub + " " + s + " changes the repository"
				}
			default:
				pos = append(pos, s)
			}
		}
		if len(pos) > 0 && !list {
			return "git " + sub + " " + strings.Join(pos, " ") + " creates or changes a ref"
		}
		return ""
	}
	switch {
	case gitReadSubs[sub]:
		return ""
	case sub == "branch":
		return listOnly(map[string]bool{"-a": true, "--all": true, "-r": true, "--remotes": true, "-v": true, "-vv": true,
			"--verbose": true, "--show-current": true, "--sort": true, "--format": true, "--no-color": true, "-i": true,
			"--ignore-case": true, "--abbrev": true, "--no-abbrev": true, "--merged": true, "--no-merged": true,
			"--contains": true, "--no-contains": true, "--points-at": true, "--omit-empty": true},
			optArg([]string{"--contains", "--no-contains", "--points-at", "--merged", "--no-merged", "--sort", "--format"}))
	case sub == "tag":
		return listOnly(map[string]bool{"--sort": true, "--format": true, "-i": true, "--ignore-case": true,
			"--merged": true, "--no-merged": true, "--contains": true, "--no-contains": true, "--points-at": true},
			optArg([]string{"--contains", "--no-contains", "--points-at", "--merged", "--no-merged", "--sort", "--format"}))
	case sub == "stash":
		if len(rest) == 0 || rest[0] == "list" || rest[0] == "show" {
			if len(rest) == 0 {
				return "git stash (without list/show) changes the working tree"
			}
			return ""
		}
	case sub == "remote":
		if len(rest) == 0 || (len(rest) == 1 && (rest[0] == "-v" || rest[0] == "--verbose")) || rest[0] == "get-url" {
			return ""
		}
	case sub == "reflog":
		if len(rest) == 0 || rest[0] == "show" || strings.HasPrefix(rest[0], "-") {
			return ""
		}
	case sub == "worktree" || sub == "notes":
		if len(rest) > 0 && rest[0] == "list" || (sub == "notes" && (len(rest) == 0 || rest[0] == "show")) {
			return ""
		}
	case sub == "submodule":
		if len(rest) == 0 || rest[0] == "status" {
			return ""
		}
	case sub == "config":
		read, write := false, false
		for k, s := range rest {
			switch {
			case k == 0 && (s == "get" || s == "list"):
				read = true
			case k == 0 && (s == "set" || s == "unset" || s == "edit" || s == "rename-section" || s == "remove-section"):
				write = true
			case s == "--get" || s == "--get-all" || s == "--get-regexp" || s == "--get-urlmatch" || s == "-l" || s == "--list" ||
				s == "--get-color" || s == "--get-colorbool":
				read = true
			case s == "--add" || s == "--replace-all" || s == "--unset" || s == "--unset-all" || s == "--rename-section" ||
				s == "--remove-section" || s == "-e" || s == "--edit":
				write = true
			}
		}
		if read && !write {
			return ""
		}
	}
	return "git " + sub + " is not a read-only git command"
}
