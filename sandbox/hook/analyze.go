package hook

// Shared analysis: resolving a simple command through wrappers (sudo, env,
// timeout, xargs, ...) to the program that really runs, and the checks on
// credentials that both lanes apply.

import (
	"path"
	"strings"

	"github.com/asb-dev/asb/sandbox/inbox"
)

// cmdView is a simple command seen through its wrappers.
type cmdView struct {
	c        *simpleCmd
	sc       *script
	name     string // program name (base name) after wrappers; "" when dynamic
	dynamic  bool   // the program name is computed at run time
	args     []word // its arguments
	wrappers []string
	viaXargs bool
	envDump  bool   // `env` with nothing to run prints the environment
	code     []word // shell code given to a wrapper (watch, su -c, env -S, flock -c)
	outFiles []word // files a wrapper writes (time -o)
}

func (v *cmdView) lit(i int) (string, bool) {
	if i < 0 || i >= len(v.args) {
		return "", false
	}
	return v.args[i].lit()
}

// litArgs returns the literal arguments, skipping computed ones: enough to
// look for flags without letting one $x hide the rest.
func (v *cmdView) litArgs() []string {
	var out []string
	for _, a := range v.args {
		if s, ok := a.lit(); ok {
			out = append(out, s)
		}
	}
	return out
}

// allLit returns the literal values of all arguments, or false.
func (v *cmdView) allLit() ([]string, bool) {
	out := make([]string, len(v.args))
	for i, a := range v.args {
		s, ok := a.lit()
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

func optArg(withArg []string) map[string]bool {
	m := make(map[string]bool, len(withArg))
	for _, s := range withArg {
		m[s] = true
	}
	return m
}

// skipOpts drops leading options; withArg names the options that take a
// separate argument (short "-u" or long "--user").
func skipOpts(args []word, withArg map[string]bool) []word {
	for len(args) > 0 {
		s, ok := args[0].lit()
		if !ok || len(s) < 2 || s[0] != '-' {
			return args
		}
		if s == "--" {
			return args[1:]
		}
		if strings.HasPrefix(s, "--") {
			if !strings.Contains(s, "=") && withArg[s] && len(args) > 1 {
				args = args[2:]
			} else {
				args = args[1:]
			}
			continue
		}
		skip := 1
		for i := 1; i < len(s); i++ {
			if withArg["-"+s[i:i+1]] {
				if i == len(s)-1 {
					skip = 2
				}
				break
			}
		}
		if skip > len(args) {
			skip = len(args)
		}
		args = args[skip:]
	}
	return args
}

var (
	sudoArgs    = optArg([]string{"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--host", "--prompt", "--role", "--type", "--other-user", "--chdir", "--close-from", "--command-timeout"})
	doasArgs    = optArg([]string{"-u", "-C"})
	niceArgs    = optArg([]string{"-n", "--adjustment"})
	ioniceArgs  = optArg([]string{"-c", "-n", "--class", "--classdata"})
	timeoutArgs = optArg([]string{"-s", "-k", "--signal", "--kill-after"})
	stdbufArgs  = optArg([]string{"-i", "-o", "-e", "--input", "--output", "--error"})
	execArgs    = optArg([]string{"-a"})
	xargsArgs   = optArg([]string{"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"})
	watchArgs   = optArg([]string{"-n", "--interval", "-d", "--differences"})
	flockArgs   = optArg([]string{"-w", "-E", "--timeout", "--conflict-exit-code"})
	chrootArgs  = optArg([]string{"--userspec", "--groups"})
	timeArgs    = optArg([]string{"-f", "--format"})
)

// resolve looks through wrapper commands to the program that runs.
func resolve(c *simpleCmd, sc *script) *cmdView {
	v := &cmdView{c: c, sc: sc}
	args := c.args
	for len(args) > 0 {
		a0, ok := args[0].lit()
		if !ok {
			v.dynamic = true
			v.args = args[1:]
			return v
		}
		base := path.Base(a0)
		rest := args[1:]
		switch base {
		case "sudo":
			rest = skipOpts(rest, sudoArgs)
		case "doas":
			rest = skipOpts(rest, doasArgs)
		case "nice":
			rest = skipOpts(rest, niceArgs)
		case "ionice":
			rest = skipOpts(rest, ioniceArgs)
		case "nohup", "setsid", "unbuffer", "builtin", "caffeinate", "chronic":
			rest = skipOpts(rest, nil)
		case "stdbuf":
			rest = skipOpts(rest, stdbufArgs)
		case "exec":
			rest = skipOpts(rest, execArgs)
		case "timeout":
			rest = skipOpts(rest, timeoutArgs)
			if len(rest) > 0 {
				rest = rest[1:] // the duration
			}
		case "time":
			// /usr/bin/time: -o FILE writes the report to FILE.
			for len(rest) > 0 {
				s, ok := rest[0].lit()
				if !ok || !strings.HasPrefix(s, "-") {
					break
				}
				if (s == "-o" || s == "--output") && len(rest) > 1 {
					v.outFiles = append(v.outFiles, rest[1])
					rest = rest[2:]
					continue
				}
				if strings.HasPrefix(s, "--output=") {
					v.outFiles = append(v.outFiles, word{raw: s[len("--output="):], parts: []part{{kind: partLit, text: s[len("--output="):]}}})
				}
				if timeArgs[s] && len(rest) > 1 {
					rest = rest[2:]
					continue
				}
				rest = rest[1:]
				if s == "--" {
					break
				}
			}
		case "command":
			if s, ok := v.litOf(rest, 0); ok && (s == "-v" || s == "-V") {
				v.name, v.args = "command", rest
				return v
			}
			rest = skipOpts(rest, nil)
		case "env":
			rest = v.envWrapper(rest)
			if len(rest) == 0 {
				v.name, v.envDump = "env", len(v.code) == 0
				v.wrappers = append(v.wrappers, base)
				return v
			}
		case "xargs":
			v.viaXargs = true
			rest = skipOpts(rest, xargsArgs)
			if len(rest) == 0 {
				v.name = "echo"
				v.wrappers = append(v.wrappers, base)
				return v
			}
		case "busybox":
			if len(rest) == 0 {
				v.name = base
				return v
			}
		case "watch":
			rest = skipOpts(rest, watchArgs)
			v.code = append(v.code, rest...)
			v.name = "watch"
			v.wrappers = append(v.wrappers, base)
			return v
		case "su", "runuser":
			for i := 0; i < len(rest); i++ {
				s, _ := rest[i].lit()
				if (s == "-c" || s == "--command" || s == "--session-command") && i+1 < len(rest) {
					v.code = append(v.code, rest[i+1])
				} else if strings.HasPrefix(s, "--command=") {
					v.code = append(v.code, word{raw: s[10:], parts: []part{{kind: partLit, text: s[10:]}}})
				}
			}
			v.name, v.args = base, rest
			return v
		case "flock":
			rest = skipOpts(rest, flockArgs)
			if len(rest) > 0 {
				rest = rest[1:] // the lock file
			}
			if s, ok := v.litOf(rest, 0); ok && (s == "-c" || s == "--command") && len(rest) > 1 {
				v.code = append(v.code, rest[1])
				v.name, v.args = base, rest
				return v
			}
		case "chroot":
			rest = skipOpts(rest, chrootArgs)
			if len(rest) > 0 {
				rest = rest[1:] // the new root
			}
		default:
			v.name, v.args = base, rest
			return v
		}
		v.wrappers = append(v.wrappers, base)
		args = rest
	}
	return v
}

func (v *cmdView) litOf(ws []word, i int) (string, bool) {
	if i >= len(ws) {
		return "", false
	}
	return ws[i].lit()
}

// envWrapper skips env's options and assignments.
func (v *cmdView) envWrapper(rest []word) []word {
	for len(rest) > 0 {
		s, ok := rest[0].lit()
		if !ok {
			return rest
		}
		switch {
		case s == "--":
			return rest[1:]
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir" || s == "-P":
			if len(rest) < 2 {
				return nil
			}
			rest = rest[2:]
		case s == "-S" || s == "--split-string":
			if len(rest) > 1 {
				v.code = append(v.code, rest[1])
				rest = rest[2:]
				continue
			}
			return nil
		case strings.HasPrefix(s, "--split-string="):
			v.code = append(v.code, word{raw: s[15:], parts: []part{{kind: partLit, text: s[15:]}}})
			rest = rest[1:]
		case strings.HasPrefix(s, "-S") && len(s) > 2:
			v.code = append(v.code, word{raw: s[2:], parts: []part{{kind: partLit, text: s[2:]}}})
			rest = rest[1:]
		case strings.HasPrefix(s, "-"):
			rest = rest[1:]
		default:
			if _, _, ok := assignWord(rest[0]); ok {
				rest = rest[1:]
				continue
			}
			return rest
		}
	}
	return rest
}

// ---- words of a command ----

// eachWord calls f on every word a command carries (arguments, assignment
// values, array elements, redirection targets).
func eachWord(c *simpleCmd, f func(w word) string) string {
	for _, w := range c.args {
		if r := f(w); r != "" {
			return r
		}
	}
	for _, a := range c.assigns {
		if r := f(a.value); r != "" {
			return r
		}
		for _, w := range a.array {
			if r := f(w); r != "" {
				return r
			}
		}
	}
	for _, r := range c.redirs {
		if r.doc != nil {
			continue
		}
		if s := f(r.target); s != "" {
			return s
		}
	}
	return ""
}

// cands returns the absolute path patterns a word may name: the word, and
// what follows a '=' (--file=P, of=P) or a leading '@' (curl -d @P).
func cands(w word, st *shellState) ([]pat, error) {
	if len(w.raw) > maxPathWord {
		// Longer than any path; the raw-text scans still see it.
		return nil, nil
	}
	ps, err := expandWord(w, st)
	if err != nil {
		return nil, err
	}
	cwd := ""
	if st != nil {
		cwd = st.cwd
	}
	var out []pat
	addc := func(p pat) {
		if !p.hasLit() {
			return // a word that is entirely unknown names nothing in particular
		}
		for n := 0; n < 4 && len(p) > 1 && p[0].k == 'c' && (p[0].c == '@' || p[0].c == '<'); n++ {
			out = append(out, absPat(tilde(p, cwd), cwd))
			p = tilde(p[1:], cwd)
		}
		out = append(out, absPat(tilde(p, cwd), cwd))
	}
	for _, p := range ps {
		addc(p)
		splits := 0
		for i, e := range p {
			if e.k == 'c' && (e.c == '=' || e.c == ':') && i+1 < len(p) {
				addc(tilde(p[i+1:], cwd))
				if splits++; splits >= 8 {
					break
				}
			}
		}
	}
	return out, nil
}

// maxPathWord is longer than any path (PATH_MAX is 4096).
const maxPathWord = 4096

// ---- credentials (both lanes) ----

// isSecretName reports whether an environment variable name looks like a
// credential. Only all-caps names count: the environment's convention, and
// it leaves a script's own lower-case variables alone.
func isSecretName(n string) bool {
	if n == "" || strings.ToUpper(n) != n || !isNameStart(n[0]) {
		return false
	}
	for _, s := range []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE", "APIKEY", "API_KEY", "ACCESS_KEY", "OAUTH", "COOKIE"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	if n == "KEY" || strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_KEYS") || strings.HasSuffix(n, "_AUTH") || strings.HasSuffix(n, "_DSN") || n == "SSH_AUTH_SOCK" {
		return true
	}
	return false
}

const secretAdvice = " Credentials in the box are off limits to the agent: do not read, print or send them. " +
	"If a step needs access you do not have, ask through " + inbox.QuestionFile + " and name the environment variable you need."

func denySecret(what string) Decision {
	return Denied("asb guard: blocked: %s.%s", what, secretAdvice)
}

// secretReason applies the credential checks to one command; "" means fine.
func secretReason(c *simpleCmd, v *cmdView) string {
	// 1. Secret variables: $ANTHROPIC_API_KEY, ${GITHUB_TOKEN}, ${!x}.
	if r := secretVarReason(c, v); r != "" {
		return r
	}
	// 2. Paths that hold credentials, however spelled.
	if r := eachWord(c, func(w word) string {
		ps, err := cands(w, c.st)
		if err != nil {
			return "a word with " + err.Error()
		}
		for _, p := range ps {
			if mayMatch(p, isSecretPath, secretReps) {
				return "it names a credential file (" + p.String() + ")"
			}
		}
		return ""
	}); r != "" {
		return r
	}
	if c.kind != cmdSimple || v == nil {
		return ""
	}
	// 3. Environment dumps.
	if r := envDumpReason(v); r != "" {
		return r
	}
	// 4. Recursive reads of directories that contain credentials.
	if r := recursiveReadReason(v); r != "" {
		return r
	}
	// 5. Inline code that reads the environment.
	if code, lang := inlineCode(v); lang != "" {
		if r := codeEnvReason(code, lang); r != "" {
			return r
		}
	}
	// 6. xargs fed a listing of a directory that holds credentials:
	// find ~ -name '.*rc' | xargs cat.
	if r := xargsListingReason(c, v); r != "" {
		return r
	}
	// 7. Tools that print stored credentials or read another process.
	return credToolReason(v)
}

var listers = map[string]bool{"find": true, "ls": true, "tree": true, "fd": true, "fdfind": true, "locate": true, "du": true, "rg": true, "grep": true}

func xargsListingReason(c *simpleCmd, v *cmdView) string {
	if !v.viaXargs {
		return ""
	}
	for _, u := range upstream(c, v.sc) {
		if u.kind != cmdSimple || len(u.args) == 0 {
			continue
		}
		uv := resolve(u, v.sc)
		if !listers[uv.name] {
			continue
		}
		for _, w := range uv.args {
			if s, ok := w.lit(); ok && strings.HasPrefix(s, "-") {
				continue
			}
			ps, err := cands(w, u.st)
			if err != nil {
				return "a word with " + err.Error()
			}
			for _, p := range ps {
				if mayMatch(p, isSecretAncestor, secretAncestorReps) || mayMatch(p, isSecretPath, secretReps) {
					return "xargs " + v.name + " is fed a listing of " + p.String() + ", which holds credentials"
				}
			}
		}
	}
	return ""
}

// secretVarReason finds references to credential variables. Allowed forms
// say nothing about the value: ${#X}, ${X:+word}, ${X:?msg}, and
// test -n/-z "$X".
func secretVarReason(c *simpleCmd, v *cmdView) string {
	var walk func(ps []part, testOK bool) string
	walk = func(ps []part, testOK bool) string {
		for _, pt := range ps {
			switch pt.kind {
			case partParam:
				if pt.op == "!ind" {
					return "it expands a variable by indirection (${!" + pt.text + "...}), which can reach any credential"
				}
				if isSecretName(pt.text) && !testOK {
					switch pt.op {
					case "#len", ":+", "+", ":?", "?":
					default:
						return "it expands the credential variable $" + pt.text
					}
				}
			case partArith:
				if n := secretIdent(pt.text); n != "" {
					return "it evaluates the credential variable " + n + " in arithmetic"
				}
			}
			if r := walk(pt.nested, testOK); r != "" {
				return r
			}
		}
		return ""
	}
	isTest := c.kind == cmdTest
	if v != nil && (v.name == "test" || v.name == "[") {
		isTest = true
	}
	for i, w := range c.args {
		testOK := false
		if isTest && i > 0 {
			if p, ok := c.args[i-1].lit(); ok && (p == "-n" || p == "-z") {
				testOK = true
			}
		}
		if r := walk(w.parts, testOK); r != "" {
			return r
		}
	}
	for _, a := range c.assigns {
		if r := walk(a.value.parts, false); r != "" {
			return r
		}
		for _, w := range a.array {
			if r := walk(w.parts, false); r != "" {
				return r
			}
		}
	}
	for _, r := range c.redirs {
		if r.doc != nil {
			if s := walk(r.doc.parts, false); s != "" {
				return s
			}
			continue
		}
		if s := walk(r.target.parts, false); s != "" {
			return s
		}
	}
	if c.kind == cmdArith {
		if n := secretIdent(c.arith.text); n != "" {
			return "it evaluates the credential variable " + n + " in arithmetic"
		}
		if r := walk(c.arith.nested, false); r != "" {
			return r
		}
	}
	if v != nil && !v.dynamic {
		switch v.name {
		case "let":
			for _, w := range v.args {
				if n := secretIdent(w.raw); n != "" {
					return "it evaluates the credential variable " + n
				}
			}
		case "declare", "typeset", "local", "export", "readonly", "printenv", "unset":
			// declare -p X_TOKEN prints it; declare -n r=X_TOKEN aliases it.
			if v.name == "unset" {
				break
			}
			for _, w := range v.args {
				s, _ := w.lit()
				name, _, _ := strings.Cut(s, "=")
				if isSecretName(name) && !strings.Contains(s, "=") {
					return "it names the credential variable " + name
				}
				if strings.Contains(s, "=") {
					if _, val, _ := strings.Cut(s, "="); isSecretName(val) {
						return "it names the credential variable " + val
					}
				}
			}
		}
	}
	return ""
}

// secretIdent returns the first credential-like identifier in text.
func secretIdent(text string) string {
	for i := 0; i < len(text); {
		if !isNameStart(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isNameChar(text[j]) {
			j++
		}
		if isSecretName(text[i:j]) {
			return text[i:j]
		}
		i = j
	}
	return ""
}

func envDumpReason(v *cmdView) string {
	if v.envDump {
		return "`env` without a command prints every environment variable, credentials included"
	}
	if v.dynamic {
		return ""
	}
	lits := v.litArgs()
	onlyFlags := true
	for _, s := range lits {
		if !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+") {
			onlyFlags = false
		}
	}
	switch v.name {
	case "printenv":
		return "printenv prints environment variables, credentials included"
	case "export", "declare", "typeset", "readonly", "local":
		if len(v.args) == 0 || (onlyFlags && len(lits) == len(v.args)) {
			for _, s := range lits {
				if strings.Contains(s, "f") || strings.Contains(s, "F") {
					return "" // declare -f / -F list functions, not variables
				}
			}
			return v.name + " without names prints the variables and their values, credentials included"
		}
	case "set":
		if len(v.args) == 0 {
			return "set without arguments prints every variable, credentials included"
		}
	case "ps":
		for _, s := range lits {
			if !strings.HasPrefix(s, "-") && strings.Contains(s, "e") {
				return "ps with the BSD 'e' option prints process environments"
			}
		}
	case "compgen":
		// names only: fine
	}
	return ""
}

// recursiveReaders read whole directory trees.
func isRecursiveRead(v *cmdView) bool {
	lits := v.litArgs()
	hasFlag := func(short byte, long ...string) bool {
		for _, s := range lits {
			if len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s[1:], short) >= 0 {
				return true
			}
			for _, l := range long {
				if s == l || strings.HasPrefix(s, l+"=") {
					return true
				}
			}
		}
		return false
	}
	switch v.name {
	case "rg", "ag", "ack", "rgrep", "zip", "7z", "7za", "scp", "rsync", "du":
		return v.name != "du"
	case "grep", "egrep", "fgrep":
		return hasFlag('r', "--recursive", "--dereference-recursive", "--directories") || hasFlag('R')
	case "tar", "bsdtar":
		return true
	case "cp":
		return hasFlag('r', "--recursive", "--archive") || hasFlag('R') || hasFlag('a')
	case "find":
		for _, s := range lits {
			if strings.HasPrefix(s, "-exec") || strings.HasPrefix(s, "-ok") {
				return true
			}
		}
	}
	return false
}

func recursiveReadReason(v *cmdView) string {
	if !isRecursiveRead(v) {
		return ""
	}
	searcher := v.name == "rg" || v.name == "ag" || v.name == "ack" || v.name == "grep" || v.name == "egrep" || v.name == "fgrep" || v.name == "rgrep"
	patternGiven := false // -e PATTERN / -f FILE / --files: no positional pattern
	if searcher {
		for _, w := range v.args {
			if s, ok := w.lit(); ok && (s == "-e" || s == "-f" || s == "--files" || strings.HasPrefix(s, "--regexp") || strings.HasPrefix(s, "--file")) {
				patternGiven = true
			}
		}
	}
	paths := 0
	for _, w := range v.args {
		s, ok := w.lit()
		if ok && strings.HasPrefix(s, "-") {
			continue
		}
		if searcher && !patternGiven {
			patternGiven = true // this one is the pattern
			continue
		}
		paths++
		ps, err := cands(w, v.c.st)
		if err != nil {
			return "a word with " + err.Error()
		}
		for _, p := range ps {
			if mayMatch(p, isSecretAncestor, secretAncestorReps) {
				return v.name + " would read the whole of " + p.String() + ", which holds credentials"
			}
		}
	}
	if paths == 0 && searcher {
		// With no path these search the working directory.
		if cwd := v.c.st.cwd; cwd != "" && isSecretAncestor(cwd) {
			return v.name + " would search " + cwd + ", which holds credentials"
		}
	}
	return ""
}

// inlineCode returns the program text handed to an interpreter on its
// command line, and the interpreter's family.
func inlineCode(v *cmdView) (string, string) {
	if v.dynamic {
		return "", ""
	}
	lang := interpFamily(v.name)
	if lang == "" || lang == "sh" {
		return "", ""
	}
	var code []string
	args := v.args
	dynamic := false
	// take returns the literal code in args[i]; computed code cannot be
	// checked and is reported as such.
	take := func(i int) {
		c, ok := args[i].lit()
		if !ok {
			dynamic = true
			return
		}
		code = append(code, c)
	}
	for i := 0; i < len(args); i++ {
		s, ok := args[i].lit()
		if !ok {
			if lang == "awk" || lang == "jq" {
				return "\x00dynamic", lang
			}
			continue
		}
		switch lang {
		case "python":
			if s == "-c" && i+1 < len(args) {
				take(i + 1)
				i++
			} else if strings.HasPrefix(s, "-c") && len(s) > 2 {
				code = append(code, s[2:])
			}
		case "node":
			if (s == "-e" || s == "--eval" || s == "-p" || s == "--print" || s == "-pe") && i+1 < len(args) {
				take(i + 1)
				i++
			} else if strings.HasPrefix(s, "--eval=") || strings.HasPrefix(s, "--print=") {
				_, c, _ := strings.Cut(s, "=")
				code = append(code, c)
			}
		case "deno":
			if s == "eval" && i+1 < len(args) {
				take(i + 1)
				i++
			}
		case "perl", "ruby", "lua", "php", "r":
			flag := byte('e')
			if lang == "php" {
				flag = 'r'
			}
			if len(s) > 1 && s[0] == '-' && s[1] != '-' {
				if k := strings.IndexAny(s[1:], string(flag)+strings.ToUpper(string(flag))); k >= 0 {
					if rest := s[k+2:]; rest != "" {
						code = append(code, rest)
					} else if i+1 < len(args) {
						take(i + 1)
						i++
					}
				}
			}
		case "awk":
			switch {
			case s == "-f" || s == "--file" || s == "-i" || s == "--include" || s == "-l" || s == "--load":
				return "", lang
			case s == "-F" || s == "-v" || s == "--assign" || s == "--field-separator":
				i++
			case s == "-e" || s == "--source":
				if i+1 < len(args) {
					take(i + 1)
					i++
				}
			case strings.HasPrefix(s, "-"):
			default:
				return strings.Join(append(code, s), "\n"), lang
			}
		case "jq":
			switch {
			case s == "-f" || s == "--from-file":
				return "", lang
			case s == "--arg" || s == "--argjson" || s == "--slurpfile" || s == "--rawfile":
				i += 2
			case s == "--indent" || s == "-L":
				i++
			case s == "--args" || s == "--jsonargs":
				return strings.Join(code, "\n"), lang
			case strings.HasPrefix(s, "-"):
			default:
				return s, lang
			}
		}
	}
	if dynamic {
		return "\x00dynamic", lang
	}
	return strings.Join(code, "\n"), lang
}

// interpFamily maps an interpreter's name to its family.
func interpFamily(name string) string {
	switch {
	case name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ksh" || name == "mksh" || name == "ash" || name == "busybox":
		return "sh"
	case strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy"):
		return "python"
	case name == "node" || name == "nodejs" || name == "bun":
		return "node"
	case name == "deno":
		return "deno"
	case strings.HasPrefix(name, "perl"):
		return "perl"
	case strings.HasPrefix(name, "ruby"):
		return "ruby"
	case strings.HasPrefix(name, "php"):
		return "php"
	case strings.HasPrefix(name, "lua"):
		return "lua"
	case name == "Rscript":
		return "r"
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		return "awk"
	case name == "jq" || name == "gojq":
		return "jq"
	}
	return ""
}

// codeEnvReason looks at inline program text for environment access. Reading
// one named, non-credential variable (process.env.NODE_ENV,
// os.environ["HOME"]) is fine; reading a credential, the whole environment,
// or a variable picked at run time is not.
func codeEnvReason(code, lang string) string {
	if code == "\x00dynamic" {
		return "the " + lang + " program is computed at run time and cannot be checked"
	}
	if lang == "jq" {
		if containsWord(code, "env") || strings.Contains(code, "$ENV") || strings.Contains(code, "$__prog_args") {
			return "the jq program reads the environment"
		}
		return ""
	}
	if containsWord(code, "printenv") {
		return "the program runs printenv"
	}
	if strings.Contains(code, "'env'") || strings.Contains(code, "\"env\"") {
		return "the program runs env"
	}
	// Each language's ways into the environment, most specific first.
	var idioms []string
	switch lang {
	case "python":
		idioms = []string{"os.environ", "environ", "getenv"}
	case "node":
		idioms = []string{"process.env", "Bun.env", "getenv"}
	case "deno":
		idioms = []string{"Deno.env", "process.env"}
	case "perl":
		idioms = []string{"%ENV", "$ENV", "getenv"}
	case "ruby":
		idioms = []string{"ENV", "getenv"}
	case "php":
		idioms = []string{"$_ENV", "$_SERVER", "getenv"}
	case "awk":
		idioms = []string{"ENVIRON"}
	case "lua":
		idioms = []string{"getenv"}
	case "r":
		idioms = []string{"Sys.getenv"}
	}
	for i := 0; i < len(code); i++ {
		for _, id := range idioms {
			if !strings.HasPrefix(code[i:], id) {
				continue
			}
			if i > 0 && isNameChar(code[i-1]) && id[0] != '$' && id[0] != '%' {
				continue
			}
			after := code[i+len(id):]
			if after != "" && isNameChar(after[0]) {
				continue // environment, ENVIRONMENT, ...
			}
			if id == "environ" && i > 0 && code[i-1] == '.' {
				continue // some_object.environ is not os.environ
			}
			if id == "%ENV" {
				return "the program reads the whole environment (%ENV)"
			}
			name, ok := envAccessName(after)
			if !ok {
				return "the program reads the environment (" + id + ") in a way that can reach credentials"
			}
			if isSecretName(name) {
				return "the program reads the credential variable " + name
			}
			i += len(id) - 1
			break
		}
	}
	if n := quotedSecretName(code); n != "" {
		return "the program names the credential variable " + n
	}
	return ""
}

// envAccessName extracts NAME from what follows an environment idiom:
// .NAME, ["NAME"], ('NAME'), .get("NAME"), {NAME}, .fetch("NAME").
func envAccessName(s string) (string, bool) {
	s = strings.TrimLeft(s, " ")
	for _, pre := range []string{".get(", ".fetch(", ".getenv(", "(", "[", "{", ".get ("} {
		if strings.HasPrefix(s, pre) {
			r := strings.TrimLeft(s[len(pre):], " ")
			q := byte(0)
			if r != "" && (r[0] == '"' || r[0] == '\'' || r[0] == '`') {
				q = r[0]
				r = r[1:]
			} else if pre != "{" {
				return "", false
			}
			j := 0
			for j < len(r) && isNameChar(r[j]) {
				j++
			}
			if j == 0 || j >= len(r) {
				return "", false
			}
			if q != 0 && r[j] != q {
				return "", false
			}
			return r[:j], true
		}
	}
	if strings.HasPrefix(s, ".") {
		r := s[1:]
		j := 0
		for j < len(r) && isNameChar(r[j]) {
			j++
		}
		if j == 0 {
			return "", false
		}
		name := r[:j]
		switch name {
		case "get", "items", "keys", "values", "copy", "toObject", "entries", "fetch", "to_h", "to_a", "each", "getenv", "environ", "data":
			return "", false
		}
		return name, true
	}
	return "", false
}

// quotedSecretName finds a credential variable name written as a string.
func quotedSecretName(code string) string {
	for i := 0; i < len(code); i++ {
		if code[i] != '"' && code[i] != '\'' {
			continue
		}
		j := i + 1
		for j < len(code) && isNameChar(code[j]) {
			j++
		}
		if j < len(code) && code[j] == code[i] && isSecretName(code[i+1:j]) {
			return code[i+1 : j]
		}
	}
	return ""
}

func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(w)
		if (at == 0 || !isNameChar(s[at-1])) && (end >= len(s) || !isNameChar(s[end])) {
			return true
		}
		i = at + 1
	}
}

// credToolReason catches tools that print stored credentials.
func credToolReason(v *cmdView) string {
	lits := v.litArgs()
	has := func(s ...string) bool {
		for _, l := range lits {
			for _, x := range s {
				if l == x {
					return true
				}
			}
		}
		return false
	}
	first := ""
	for _, l := range lits {
		if !strings.HasPrefix(l, "-") {
			first = l
			break
		}
	}
	switch v.name {
	case "gdb", "strace", "ltrace", "gcore", "pstack", "perf":
		// Attaching to a running process reads its memory: the agent's
		// API key lives there.
		for _, l := range lits {
			if l == "-p" || strings.HasPrefix(l, "--pid") || strings.HasPrefix(l, "-p") || l == "attach" || v.name == "gcore" {
				return v.name + " attaching to a running process can read its memory, credentials included"
			}
		}
	case "gh":
		if has("auth") && (has("token") || has("--show-token", "-t")) {
			return "gh auth token prints the GitHub token"
		}
	case "git":
		for _, l := range lits {
			if l == "credential" || strings.HasPrefix(l, "credential-") {
				return "git credential hands out stored credentials"
			}
		}
	case "npm", "pnpm", "yarn":
		if has("config") && has("get", "list", "ls") {
			for _, l := range lits {
				ll := strings.ToLower(l)
				if strings.Contains(ll, "auth") || strings.Contains(ll, "token") || strings.Contains(ll, "password") {
					return v.name + " config would print a registry credential"
				}
			}
		}
		if first == "token" {
			return v.name + " token handles registry credentials"
		}
	case "aws":
		if has("configure") && has("get", "export-credentials", "list") {
			return "aws configure would print cloud credentials"
		}
	}
	return ""
}
