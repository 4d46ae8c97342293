package hook

// The guard: a deterministic denylist for every lane. It blocks three
// things and lets everything else through:
//
//  1. Changing the control plane: asb's hook binary, Claude's settings,
//     the run state the controller reads (/workspace/.agent.* other than
//     the question file), the co-pilot's /ask, and what configures the
//     runtime at its next launch (/etc, shell start-up files, git's global
//     config, the claude executable).
//  2. Credential exfiltration: reading credential files, expanding
//     credential variables, dumping the environment, recursive reads of
//     directories that hold credentials, tools that print stored tokens.
//  3. Runtime reconfiguration: running claude itself (config, mcp, a second
//     agent), git config that makes git run programs or hand out
//     credentials, killing the agent, the hooks or the box's init, sysctl,
//     scheduling work outside the hooks' view.
//
// Shell commands are parsed (see shell.go); every simple command they can
// run is checked, through wrappers (sudo, env, timeout, xargs, ...) and into
// code handed to shells (bash -c, eval, here-documents, echo ... | sh).

import (
	"path"
	"regexp"
	"strings"

	"github.com/asb-dev/asb/sandbox/inbox"
)

// Guard applies the denylist to one tool call.
func Guard(in Input) Decision {
	cwd := toolCwd(in.Cwd)
	switch in.ToolName {
	case "Bash":
		cmd, ok, err := in.str("command")
		if err != nil || !ok {
			return Denied("asb guard: Bash call without a command string; denying (fail closed).")
		}
		return guardShell(cmd, cwd, 0)
	case "Write", "Edit", "MultiEdit":
		return guardFile(in, "file_path", cwd, true)
	case "NotebookEdit":
		return guardFile(in, "notebook_path", cwd, true)
	case "Read":
		return guardFile(in, "file_path", cwd, false)
	case "NotebookRead":
		return guardFile(in, "notebook_path", cwd, false)
	case "Grep":
		return guardSearch(in, cwd, true)
	case "Glob", "LS":
		return guardSearch(in, cwd, false)
	}
	return Allowed()
}

func toolCwd(c string) string {
	if !strings.HasPrefix(c, "/") {
		return ""
	}
	return path.Clean(c)
}

// toolPath resolves a path given to a structured tool.
func toolPath(p, cwd string) string {
	switch {
	case p == "~":
		p = inbox.Home
	case strings.HasPrefix(p, "~/"):
		p = inbox.Home + p[1:]
	case strings.HasPrefix(p, "$HOME/"):
		p = inbox.Home + p[5:]
	}
	if !strings.HasPrefix(p, "/") {
		if cwd == "" {
			cwd = inbox.Workspace
		}
		p = cwd + "/" + p
	}
	return path.Clean(p)
}

const controlAdvice = " It belongs to asb's control plane (the hook binary, Claude's settings, the run state under " +
	inbox.StatePrefix + "*, the co-pilot's " + inbox.AskDir + ") or configures the runtime (/etc, shell start-up files, " +
	"git's global config, the claude executable); the agent may read it but not change it. The one state file you may " +
	"write is " + inbox.QuestionFile + ": put a question there and end your turn."

func denyControl(what string) Decision {
	return Denied("asb guard: blocked: %s.%s", what, controlAdvice)
}

func denyOpaque(what string) Decision {
	return Denied("asb guard: blocked: %s. Run the commands themselves, written out, so they can be checked.", what)
}

func denyRuntime(what string) Decision {
	return Denied("asb guard: blocked: %s. Reconfiguring or stopping the agent runtime from inside the box is not allowed; "+
		"if the environment is wrong, ask through %s.", what, inbox.QuestionFile)
}

func guardFile(in Input, key, cwd string, write bool) Decision {
	p, ok, err := in.str(key)
	if err != nil {
		return Denied("asb guard: %v; denying (fail closed).", err)
	}
	if !ok || strings.TrimSpace(p) == "" {
		return Denied("asb guard: %s call without %s; denying (fail closed).", in.ToolName, key)
	}
	if hit := rawSecretHit(p); hit != "" {
		return denySecret(in.ToolName + " of " + p + " (a credential file)")
	}
	abs := toolPath(p, cwd)
	if isSecretPath(abs) {
		return denySecret(in.ToolName + " of " + abs + " (a credential file)")
	}
	if write && isControlPath(abs) {
		return denyControl(in.ToolName + " of " + abs)
	}
	return Allowed()
}

func guardSearch(in Input, cwd string, contents bool) Decision {
	p, _, err := in.str("path")
	if err != nil {
		return Denied("asb guard: %v; denying (fail closed).", err)
	}
	for _, k := range []string{"path", "pattern", "glob"} {
		s, _, err := in.str(k)
		if err != nil {
			return Denied("asb guard: %v; denying (fail closed).", err)
		}
		if hit := rawSecretHit(s); hit != "" && (k != "pattern" || in.ToolName != "Grep") {
			return denySecret(in.ToolName + " over " + hit + " (credentials)")
		}
	}
	if p == "" {
		p = cwd
		if p == "" {
			return Allowed()
		}
	}
	abs := toolPath(p, cwd)
	if isSecretPath(abs) {
		return denySecret(in.ToolName + " in " + abs + " (credentials)")
	}
	if contents && isSecretAncestor(abs) {
		return denySecret(in.ToolName + " over all of " + abs + ", which holds credential files; search a narrower directory such as " + inbox.Workspace)
	}
	return Allowed()
}

// guardShell checks a shell command line; depth counts the levels of
// shell code inside shell code.
func guardShell(src, cwd string, depth int) Decision {
	if hit := rawSecretHit(src); hit != "" {
		return denySecret("the command mentions " + hit + " (a credential file or process environment)")
	}
	if strings.Contains(src, inbox.AskLaneEnv) {
		return denyRuntime(inbox.AskLaneEnv + " selects which hooks apply; the agent may not touch it")
	}
	if depth > maxNest {
		return Denied("asb guard: shell code nested too deeply to check; denying.")
	}
	sc, err := parseShell(src, cwd)
	if err != nil {
		return Denied("asb guard: could not parse this command (%v), so it cannot be checked and the guard fails closed. "+
			"Rewrite it in plainer shell (or split it into several calls) and try again.", err)
	}
	sc.src = src
	taint := controlMention(sc)
	for _, c := range sc.cmds {
		if d := guardCmd(c, sc, depth, taint); !d.Allow {
			return d
		}
	}
	return Allowed()
}

func isOutputRedir(r redir) bool {
	if r.doc != nil || r.dup {
		return false
	}
	switch r.op {
	case ">", ">>", ">|", "&>", "&>>", "<>", ">&":
		return true
	}
	return false
}

// controlWord reports whether a word may name a control-plane path.
func controlWord(w word, st *shellState, strict bool) (string, error) {
	ps, err := cands(w, st)
	if err != nil {
		return "", err
	}
	pred, reps := isControlPath, controlReps
	if strict {
		pred, reps = isControlPathStrict, controlStrictReps
	}
	for _, p := range ps {
		if mayMatch(p, pred, reps) {
			return p.String(), nil
		}
	}
	return "", nil
}

// controlMention returns what a command line says about the control plane
// anywhere (any word, here-document body, substitution), or "". A command
// that changes files using a computed path (xargs rm, rm "$f", rm $(...))
// is denied when the same command line names the control plane: that is
// how a path travels from a harmless-looking reader to a writer.
func controlMention(sc *script) string {
	for _, c := range sc.cmds {
		if r := eachWord(c, func(w word) string {
			if s, _ := controlWord(w, c.st, false); s != "" {
				return s
			}
			return rawControlHit(w.raw)
		}); r != "" {
			return r
		}
		for _, r := range c.redirs {
			if r.doc != nil {
				if h := rawControlHit(r.doc.body); h != "" {
					return h
				}
			}
		}
	}
	return ""
}

func guardCmd(c *simpleCmd, sc *script, depth int, taint string) Decision {
	var v *cmdView
	if c.kind == cmdSimple && len(c.args) > 0 {
		v = resolve(c, sc)
		if v.dynamic {
			if !nameDynamic(v) {
				return denyOpaque("the program to run is computed at run time (a variable or $(...)), so it cannot be checked; write the program's name out")
			}
		}
	}
	if r := secretReason(c, v); r != "" {
		return denySecret(r)
	}
	for _, r := range c.redirs {
		if !isOutputRedir(r) {
			continue
		}
		s, err := controlWord(r.target, c.st, false)
		if err != nil {
			return Denied("asb guard: %v; denying.", err)
		}
		if s != "" {
			return denyControl("output redirected into " + s)
		}
		if h := rawControlHit(r.target.raw); h != "" {
			return denyControl("output redirected into " + h)
		}
	}
	if v == nil {
		return Allowed()
	}
	for _, w := range v.outFiles {
		if s, _ := controlWord(w, c.st, false); s != "" {
			return denyControl(v.name + " writing " + s)
		}
	}
	if r := runtimeReason(v, sc); r != "" {
		return denyRuntime(r)
	}
	if r := controlReason(v, sc, taint); r != "" {
		return denyControl(r)
	}
	return codeExecDecision(v, sc, depth)
}

// nameDynamic resolves a computed program name whose last path component
// is written out ("$(go env GOPATH)/bin/golangci-lint"); it reports false
// when the name itself is computed.
func nameDynamic(v *cmdView) bool {
	var a0 word
	n := len(v.c.args) - len(v.args) - 1
	if n < 0 || n >= len(v.c.args) {
		return false
	}
	a0 = v.c.args[n]
	ps, err := expandWord(a0, v.c.st)
	if err != nil || len(ps) != 1 {
		return false
	}
	p := ps[0]
	last := -1
	for i, e := range p {
		if e.k == 'c' && e.c == '/' {
			last = i
		}
	}
	if last < 0 {
		return false
	}
	name, ok := p[last+1:].literal()
	if !ok || name == "" {
		return false
	}
	v.name, v.dynamic = name, false
	return true
}

// ---- the control plane ----

var strictCmds = map[string]bool{
	"chmod": true, "chown": true, "chgrp": true, "chattr": true, "setfacl": true, "ln": true, "link": true,
	"mv": true, "mkfifo": true, "mknod": true, "mount": true, "umount": true, "truncate": true,
}

var copyCmds = map[string]bool{"cp": true, "install": true, "rsync": true, "scp": true}

var copyArgs = optArg([]string{"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group",
	"-e", "--rsh", "-f", "--filter", "--exclude", "--include", "--exclude-from", "--include-from", "--files-from",
	"-i", "-P", "-l", "-F", "-J", "--rsync-path", "--chmod", "--chown", "-B", "--block-size", "--partial-dir",
	"--backup-dir", "--compare-dest", "--copy-dest", "--link-dest", "-T"})

func controlReason(v *cmdView, sc *script, taint string) string {
	if v.name == "source" || v.name == "." {
		return ""
	}
	if roCmdReason(v) == "" {
		return "" // a command that only reads may name the control plane
	}
	c := v.c
	strict := strictCmds[v.name]
	positional, targetDir := positionals(v, copyArgs)

	if copyCmds[v.name] || v.name == "mv" || v.name == "ln" {
		// What a copy/move/link writes: its destination, and the
		// destination joined with each source's name.
		var srcs []word
		var dest *word
		if targetDir != nil {
			dest, srcs = targetDir, positional
		} else if len(positional) >= 2 {
			dest, srcs = &positional[len(positional)-1], positional[:len(positional)-1]
		}
		if dest != nil {
			if s, err := controlWord(*dest, c.st, strict); err != nil || s != "" {
				return v.name + " into " + s
			}
			dps, err := cands(*dest, c.st)
			if err != nil {
				return err.Error()
			}
			for _, src := range srcs {
				sps, err := expandWord(src, c.st)
				if err != nil {
					return err.Error()
				}
				if len(sps)*len(dps) > maxBraceResults {
					return v.name + " with too many source and destination alternatives to check"
				}
				for _, sp := range sps {
					base := lastSeg(sp)
					for _, dp := range dps {
						j := append(append(append(pat{}, dp...), pelem{k: 'c', c: '/'}), base...)
						pred, reps := isControlPath, controlReps
						if strict {
							pred, reps = isControlPathStrict, controlStrictReps
						}
						if mayMatch(cleanPat(j), pred, reps) {
							return v.name + " into " + cleanPat(j).String()
						}
					}
				}
			}
		}
	}
	if !copyCmds[v.name] {
		for _, w := range v.args {
			s, err := controlWord(w, c.st, strict)
			if err != nil {
				return err.Error()
			}
			if s != "" {
				return v.name + " on " + s
			}
			if h := rawControlHit(w.raw); h != "" {
				return v.name + " naming " + h
			}
		}
	}
	if r := ancestorReason(v, positional); r != "" {
		return r
	}
	if taint != "" && computedTarget(v) {
		return v.name + " with a computed path while the command line names " + taint
	}
	return ""
}

// positionals returns the non-option arguments and the -t/--target-directory
// value.
func positionals(v *cmdView, withArg map[string]bool) (pos []word, target *word) {
	args := v.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].lit()
		if !ok || s == "-" || !strings.HasPrefix(s, "-") {
			pos = append(pos, args[i])
			continue
		}
		if s == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if s == "-t" || s == "--target-directory" {
			if i+1 < len(args) {
				target = &args[i+1]
				i++
			}
			continue
		}
		if strings.HasPrefix(s, "--target-directory=") {
			w := word{raw: s[19:], parts: []part{{kind: partLit, text: s[19:]}}}
			target = &w
			continue
		}
		if withArg[s] && !strings.Contains(s, "=") {
			i++
		}
	}
	return pos, target
}

func lastSeg(p pat) pat {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i].k == 'c' && p[i].c == '/' {
			return p[i+1:]
		}
	}
	return p
}

// computedTarget reports whether a command that changes files takes a
// path computed at run time.
func computedTarget(v *cmdView) bool {
	if v.viaXargs {
		return true
	}
	for _, w := range v.args {
		if _, ok := w.lit(); ok {
			continue
		}
		if ps, err := expandWord(w, v.c.st); err != nil || len(ps) == 0 || !ps[0].hasLit() || ps[0][0].k == 'D' {
			return true
		}
	}
	return false
}

// ancestorReason blocks deleting, moving, extracting over or recursively
// re-permissioning a directory that contains the control plane.
func ancestorReason(v *cmdView, positional []word) string {
	lits := v.litArgs()
	has := func(fs ...string) bool {
		for _, s := range lits {
			for _, f := range fs {
				if s == f || strings.HasPrefix(s, f+"=") {
					return true
				}
				if len(f) == 2 && f[0] == '-' && len(s) > 1 && s[0] == '-' && s[1] != '-' && strings.IndexByte(s[1:], f[1]) >= 0 {
					return true
				}
			}
		}
		return false
	}
	var targets []word
	cwdTarget := false
	switch v.name {
	case "rm", "rmdir", "shred", "unlink", "mv", "mount", "umount":
		targets = positional
	case "chmod", "chown", "chgrp", "chattr", "setfacl":
		if has("-R", "--recursive") {
			targets = positional
		}
	case "find":
		if has("-delete", "-exec", "-execdir", "-ok", "-okdir") {
			for _, w := range v.args {
				s, ok := w.lit()
				if ok && (strings.HasPrefix(s, "-") || s == "(" || s == "!") {
					break
				}
				targets = append(targets, w)
			}
			if len(targets) == 0 {
				cwdTarget = true
			}
		}
	case "rsync":
		if has("--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-delay", "--remove-source-files") && len(positional) > 0 {
			targets = positional
		}
	case "tar", "bsdtar":
		extract := has("-x", "--extract", "--get")
		if len(lits) > 0 && !strings.HasPrefix(lits[0], "-") && strings.Contains(lits[0], "x") {
			extract = true
		}
		if extract {
			dir := flagValue(v, "-C", "--directory")
			if dir != nil {
				targets = []word{*dir}
			} else {
				cwdTarget = true
			}
		}
	case "unzip":
		if !has("-l", "-t", "-v", "-Z", "-p", "-z") {
			if dir := flagValue(v, "-d", ""); dir != nil {
				targets = []word{*dir}
			} else {
				cwdTarget = true
			}
		}
	case "cpio":
		if has("-i", "--extract") {
			cwdTarget = true
		}
	case "7z", "7za":
		if len(lits) > 0 && (lits[0] == "x" || lits[0] == "e") {
			cwdTarget = true
		}
	default:
		return ""
	}
	for _, w := range targets {
		ps, err := cands(w, v.c.st)
		if err != nil {
			return err.Error()
		}
		for _, p := range ps {
			if mayMatch(p, isControlAncestor, controlAncestorReps) {
				return v.name + " over " + p.String() + ", which contains the control plane"
			}
		}
	}
	if cwdTarget {
		cwd := v.c.st.cwd
		if cwd == "" || isControlAncestor(cwd) || isControlPath(cwd) {
			where := cwd
			if where == "" {
				where = "an unknown working directory"
			}
			return v.name + " in " + where + ", which contains the control plane; work in a repository directory or pass an explicit target"
		}
	}
	return ""
}

// flagValue returns the value of an option given as "-C DIR", "-CDIR" or
// "--directory=DIR".
func flagValue(v *cmdView, short, long string) *word {
	for i, w := range v.args {
		s, ok := w.lit()
		if !ok {
			continue
		}
		switch {
		case s == short || (long != "" && s == long):
			if i+1 < len(v.args) {
				return &v.args[i+1]
			}
		case long != "" && strings.HasPrefix(s, long+"="):
			x := word{raw: s[len(long)+1:], parts: []part{{kind: partLit, text: s[len(long)+1:]}}}
			return &x
		case strings.HasPrefix(s, short) && len(s) > len(short) && !strings.HasPrefix(s, "--"):
			x := word{raw: s[len(short):], parts: []part{{kind: partLit, text: s[len(short):]}}}
			return &x
		}
	}
	return nil
}

// ---- runtime reconfiguration ----

func runtimeReason(v *cmdView, sc *script) string {
	lits := v.litArgs()
	allLit := len(lits) == len(v.args)
	switch v.name {
	case "claude", "claude-code":
		if allLit && len(lits) == 1 && (lits[0] == "--version" || lits[0] == "-v" || lits[0] == "--help" || lits[0] == "-h") {
			return ""
		}
		return "running claude inside the box (claude config, claude mcp, or a second agent) would reconfigure or sidestep the agent runtime"
	case "git":
		return gitRuntimeReason(v)
	case "kill", "pkill", "killall", "killall5", "skill", "slay":
		return killReason(v, sc)
	case "sysctl":
		for _, s := range lits {
			if s == "-w" || s == "--write" || s == "-p" || s == "--load" || s == "--system" || strings.Contains(s, "=") {
				return "sysctl would change kernel settings"
			}
		}
	case "crontab":
		if allLit && len(lits) == 1 && lits[0] == "-l" {
			return ""
		}
		return "crontab schedules commands outside the hooks' view"
	case "at", "batch":
		return v.name + " schedules commands outside the hooks' view"
	}
	return ""
}

var gitGlobalArgs = optArg([]string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path"})

// gitRuntimeReason guards git's configuration: no global/system changes
// beyond identity-like keys, and no keys (in any scope) that make git run
// programs or hand out credentials.
func gitRuntimeReason(v *cmdView) string {
	args := skipOpts(v.args, gitGlobalArgs)
	if len(args) == 0 {
		return ""
	}
	sub, ok := args[0].lit()
	if !ok || sub != "config" {
		return ""
	}
	rest := args[1:]
	scope, write, read := "local", false, false
	var keys []string
	for i := 0; i < len(rest); i++ {
		s, ok := rest[i].lit()
		if !ok {
			if scope != "local" {
				return "git config --" + scope + " with computed arguments"
			}
			keys = append(keys, "\x00")
			continue
		}
		switch {
		case i == 0 && (s == "set" || s == "unset" || s == "rename-section" || s == "remove-section" || s == "edit"):
			write = true
		case i == 0 && (s == "get" || s == "list"):
			read = true
		case s == "--global" || s == "--system":
			scope = s[2:]
		case s == "-f" || s == "--file":
			scope = "file"
			i++
		case strings.HasPrefix(s, "--file="):
			scope = "file"
		case s == "--local" || s == "--worktree":
		case s == "--add" || s == "--replace-all" || s == "--unset" || s == "--unset-all" || s == "--rename-section" || s == "--remove-section" || s == "-e" || s == "--edit":
			write = true
		case s == "--get" || s == "--get-all" || s == "--get-regexp" || s == "--get-urlmatch" || s == "-l" || s == "--list" || s == "--get-color" || s == "--get-colorbool":
			read = true
		case s == "--type" || s == "--default" || s == "--comment" || s == "--blob" || s == "--value":
			i++
		case strings.HasPrefix(s, "-"):
		default:
			keys = append(keys, s)
		}
	}
	if !read && !write {
		write = len(keys) >= 2
	}
	if !write {
		return ""
	}
	key := ""
	if len(keys) > 0 {
		key = strings.ToLower(keys[0])
	}
	if key == "\x00" {
		return "git config with a computed key"
	}
	if dangerousGitKey(key) {
		return "git config " + key + " would make git run programs or hand out credentials"
	}
	if scope != "local" && !safeGlobalGitKey(key) {
		return "git config --" + scope + " " + key + " changes git's configuration outside the repository"
	}
	return ""
}

func dangerousGitKey(k string) bool {
	for _, p := range []string{"credential", "include.", "includeif.", "url.", "filter.", "gpg.", "core.hookspath", "core.fsmonitor",
		"core.sshcommand", "core.askpass", "core.gitproxy", "core.editor", "core.pager", "core.worktree", "sequence.editor",
		"diff.external", "init.templatedir", "uploadpack.", "receive.procreceiverefs", "protocol.", "http.", "https."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	if strings.HasPrefix(k, "diff.") && (strings.HasSuffix(k, ".command") || strings.HasSuffix(k, ".textconv")) {
		return true
	}
	if strings.HasPrefix(k, "merge.") && strings.HasSuffix(k, ".driver") {
		return true
	}
	return false
}

func safeGlobalGitKey(k string) bool {
	switch k {
	case "user.name", "user.email", "init.defaultbranch", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote",
		"core.autocrlf", "core.filemode", "core.quotepath", "core.ignorecase", "color.ui", "safe.directory", "fetch.prune",
		"rebase.autostash", "merge.conflictstyle", "diff.algorithm", "commit.gpgsign", "tag.gpgsign", "column.ui",
		"help.autocorrect", "rerere.enabled", "advice.detachedhead":
		return true
	}
	return strings.HasPrefix(k, "advice.") || strings.HasPrefix(k, "color.")
}

// Processes the agent must not signal: itself, the hooks, the box's init.
var protectedProcs = []string{"claude", "node", "node /usr/local/bin/claude -p task", "asb-hook", inbox.HookBinary + " guard",
	"sleep", "sleep infinity", "bash", "sh", "init", "timeout 45s claude"}

var killArgs = optArg([]string{"-u", "-U", "-g", "-G", "-P", "-s", "-t", "-F", "--signal", "--pidfile", "--session", "--terminal",
	"--uid", "--euid", "--group", "--pgroup", "--parent", "--ns", "--nslist", "-o", "-y", "-n"})

func killReason(v *cmdView, sc *script) string {
	if sc.procMention == nil {
		m := protectedProcMention(sc.src)
		sc.procMention = &m
	}
	mention := *sc.procMention
	if v.name == "killall5" {
		return "killall5 signals every process"
	}
	if v.name == "kill" {
		sawSignal, dd := false, false
		args := v.args
		for i := 0; i < len(args); i++ {
			s, ok := args[i].lit()
			if !ok {
				if mention != "" {
					return "kill with a computed process id in a command line that names " + mention
				}
				if strings.Contains(args[i].raw, "PPID") || strings.Contains(args[i].raw, "$$") {
					return "kill of the agent's own process tree"
				}
				continue
			}
			if !dd {
				switch {
				case s == "--":
					dd = true
					continue
				case s == "-l" || s == "-L" || s == "--list" || s == "--table":
					return ""
				case s == "-s" || s == "-n" || s == "--signal":
					i++
					sawSignal = true
					continue
				case strings.HasPrefix(s, "-") && !sawSignal && !isDigits(strings.TrimPrefix(s, "-1")) && s != "-1":
					sawSignal = true
					continue
				case strings.HasPrefix(s, "-") && !sawSignal && i == 0 && isDigits(s[1:]) && len(args) > 1:
					sawSignal = true // kill -9 PID
					continue
				}
			}
			if s == "0" || s == "1" || strings.HasPrefix(s, "-") {
				return "kill " + s + " would signal the box's init, every process or a whole process group"
			}
		}
		return ""
	}
	if v.viaXargs && mention != "" {
		return v.name + " fed by a command line that names " + mention
	}
	var pats []string
	selectors := false
	regex := v.name != "killall"
	exact := false
	args := v.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].lit()
		if !ok {
			return v.name + " with a computed pattern"
		}
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			switch {
			case s == "-v" || s == "--inverse":
				return v.name + " -v would signal everything except the pattern"
			case s == "-r" || s == "--regexp":
				regex = true
			case s == "-x" || s == "--exact" || s == "-e":
				exact = true
			case s == "-u" || s == "-U" || s == "-g" || s == "-G" || s == "-P" || s == "-s" || s == "-t" || s == "--uid" || s == "--euid" || s == "--user" || s == "--parent" || s == "--pgroup" || s == "--session" || s == "--terminal":
				selectors = true
				i++
			case killArgs[s]:
				i++
			}
			continue
		}
		pats = append(pats, s)
	}
	if len(pats) == 0 {
		if selectors {
			return v.name + " selecting processes by user, group or parent would reach the agent"
		}
		return ""
	}
	for _, p := range pats {
		expr := p
		if !regex {
			expr = regexp.QuoteMeta(p)
		}
		if exact || !regex {
			expr = "^(?:" + expr + ")$"
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return v.name + " pattern " + p + " cannot be checked"
		}
		for _, proc := range protectedProcs {
			if re.MatchString(proc) || (!exact && regex && re.MatchString(path.Base(proc))) {
				return v.name + " " + p + " would signal the agent, the hooks or the box's init (" + proc + ")"
			}
		}
	}
	return ""
}

func protectedProcMention(src string) string {
	l := strings.ToLower(src)
	for _, n := range []string{"claude", "asb", ".agent.", "ppid", "$$", "infinity"} {
		if strings.Contains(l, n) {
			return n
		}
	}
	return ""
}

// ---- code handed to interpreters ----

// envSetupTools print shell code meant for eval: eval "$(ssh-agent -s)".
var envSetupTools = map[string]bool{
	"ssh-agent": true, "pyenv": true, "rbenv": true, "nodenv": true, "goenv": true, "jenv": true, "direnv": true, "conda": true,
	"mamba": true, "micromamba": true, "brew": true, "fnm": true, "opam": true, "mise": true, "rtx": true, "asdf": true,
	"zoxide": true, "starship": true, "dircolors": true, "gpg-agent": true, "keychain": true, "luarocks": true, "minikube": true,
	"docker-machine": true, "rustup": true, "pdm": true, "poetry": true, "nvm": true, "sdk": true, "phpenv": true, "plenv": true,
}

func codeExecDecision(v *cmdView, sc *script, depth int) Decision {
	if len(v.code) > 0 {
		return shellWordsDecision(v.code, v, sc, depth)
	}
	fam := interpFamily(v.name)
	switch {
	case v.name == "eval":
		if len(v.args) == 0 {
			return Allowed()
		}
		return shellWordsDecision(v.args, v, sc, depth)
	case v.name == "source" || v.name == ".":
		if len(v.args) == 0 {
			return Allowed()
		}
		return scriptFileDecision(v.args[0], "sh", v, sc, depth)
	case fam == "sh":
		code, script, stdin := shellArgs(v)
		switch {
		case code != nil:
			return shellWordsDecision([]word{*code}, v, sc, depth)
		case script != nil:
			return scriptFileDecision(*script, "sh", v, sc, depth)
		case stdin:
			return stdinDecision(v, "sh", sc, depth)
		}
	case fam == "awk" || fam == "jq" || fam == "":
		return Allowed()
	default:
		if code, _ := inlineCode(v); code != "" {
			return codeDecision(code, fam, v, depth)
		}
		script := interpScript(v, fam)
		if script == nil {
			return stdinDecision(v, fam, sc, depth)
		}
		return scriptFileDecision(*script, fam, v, sc, depth)
	}
	return Allowed()
}

// shellArgs finds bash's -c code, its script file, or whether it reads
// commands from stdin.
func shellArgs(v *cmdView) (code, script *word, stdin bool) {
	args := v.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].lit()
		if !ok {
			return nil, &args[i], false
		}
		if s == "--" {
			if i+1 < len(args) {
				return nil, &args[i+1], false
			}
			return nil, nil, true
		}
		if s == "-" {
			return nil, nil, true
		}
		if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
			if strings.HasPrefix(s, "--") {
				if s == "--rcfile" || s == "--init-file" {
					i++
				}
				continue
			}
			body := s[1:]
			next := i + 1
			for _, ch := range body {
				if ch == 'o' || ch == 'O' {
					next++
				}
			}
			if strings.ContainsRune(body, 'c') {
				if next < len(args) {
					return &args[next], nil, false
				}
				return nil, nil, false
			}
			if strings.ContainsRune(body, 's') {
				return nil, nil, true
			}
			i = next - 1
			continue
		}
		return nil, &args[i], false
	}
	return nil, nil, true
}

var interpArgs = map[string]map[string]bool{
	"python": optArg([]string{"-W", "-X", "-Q"}),
	"node":   optArg([]string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--env-file", "--title"}),
	"deno":   optArg([]string{}),
	"perl":   optArg([]string{"-I", "-M", "-m"}),
	"ruby":   optArg([]string{"-r", "-I", "-C", "-E"}),
	"php":    optArg([]string{"-c", "-d", "-z"}),
	"lua":    optArg([]string{"-l"}),
	"r":      optArg([]string{}),
}

// interpScript returns the script file an interpreter runs, or nil when it
// reads its program from stdin. A module (-m) or a subcommand counts as a
// file: the program is not on the command line either way.
func interpScript(v *cmdView, fam string) *word {
	withArg := interpArgs[fam]
	args := v.args
	for i := 0; i < len(args); i++ {
		s, ok := args[i].lit()
		if !ok {
			return &args[i]
		}
		if s == "-" {
			return nil
		}
		if s == "--" {
			if i+1 < len(args) {
				return &args[i+1]
			}
			return nil
		}
		if strings.HasPrefix(s, "-") && len(s) > 1 {
			if (fam == "python" && (s == "-m" || strings.HasPrefix(s, "-m"))) || (fam == "php" && s == "-f") {
				return &args[i]
			}
			if withArg[s] {
				i++
			}
			continue
		}
		return &args[i]
	}
	return nil
}

// scriptFileDecision handles an interpreter's script argument: a file is
// fine (the hook cannot see into it), /dev/stdin means stdin, and a process
// substitution is code produced by the commands inside it.
func scriptFileDecision(w word, lang string, v *cmdView, sc *script, depth int) Decision {
	if s, ok := w.lit(); ok {
		switch s {
		case "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-":
			return stdinDecision(v, lang, sc, depth)
		}
		return Allowed()
	}
	for _, p := range w.parts {
		if p.kind == partProc && p.sub != nil {
			return producerDecision(p.sub.cmds, lang, v, sc, depth)
		}
	}
	return Allowed()
}

// stdinDecision handles an interpreter reading its program from stdin: a
// here-document or here-string is checked as code, a file is fine, a pipe
// is checked by what feeds it.
func stdinDecision(v *cmdView, lang string, sc *script, depth int) Decision {
	c := v.c
	for _, r := range c.redirs {
		switch {
		case r.doc != nil:
			code := r.doc.body
			if !r.doc.quoted {
				s, ok := evalParts(r.doc.parts, c.st)
				if !ok {
					return denyOpaque("a here-document feeds " + v.name + " code built at run time ($(...) or variables), which cannot be checked")
				}
				code = s
			}
			return codeDecision(code, lang, v, depth)
		case r.op == "<<<":
			s, ok := evalLiteral(r.target, c.st, true)
			if !ok {
				return denyOpaque("a here-string feeds " + v.name + " code built at run time, which cannot be checked")
			}
			return codeDecision(s, lang, v, depth)
		case r.op == "<" && (r.fd == "" || r.fd == "0"):
			return Allowed()
		}
	}
	ups := upstream(c, sc)
	if len(ups) == 0 {
		return Allowed()
	}
	return producerDecision(ups, lang, v, sc, depth)
}

// evalParts renders a here-document body whose expansions are all known.
func evalParts(ps []part, st *shellState) (string, bool) {
	var b strings.Builder
	for _, p := range ps {
		switch p.kind {
		case partLit:
			b.WriteString(p.text)
		case partParam:
			val, ok := paramValue(p, st)
			if !ok {
				return "", false
			}
			b.WriteString(val)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// upstream returns the commands whose output feeds c's stdin through a pipe.
func upstream(c *simpleCmd, sc *script) []*simpleCmd {
	for i := len(c.pipes) - 1; i >= 0; i-- {
		ref := c.pipes[i]
		if ref.stage == 0 {
			continue
		}
		var ups []*simpleCmd
		for _, u := range sc.cmds {
			for _, r := range u.pipes {
				if r.id == ref.id && r.stage < ref.stage {
					ups = append(ups, u)
					break
				}
			}
		}
		return ups
	}
	return nil
}

// producerDecision checks code produced by other commands and run by an
// interpreter. Downloads (curl/wget, the installer idiom) and files (cat)
// cannot be seen into and are let through; literal echo/printf text is
// checked as code; anything else (base64 -d, xxd -r, rev, a script's
// output) is generated code the guard cannot check, and is denied.
func producerDecision(ups []*simpleCmd, lang string, v *cmdView, sc *script, depth int) Decision {
	var code []string
	for _, u := range ups {
		if u.kind != cmdSimple || len(u.args) == 0 {
			continue
		}
		uv := resolve(u, sc)
		if uv.dynamic {
			return denyOpaque("generated code piped into " + v.name)
		}
		switch uv.name {
		case "curl", "wget":
			continue
		case "cat":
			continue
		case "echo", "printf":
			lits, ok := uv.allLit()
			if !ok {
				return denyOpaque(uv.name + " output built at run time is piped into " + v.name + " as code")
			}
			if uv.name == "echo" {
				for len(lits) > 0 && strings.HasPrefix(lits[0], "-") {
					if strings.Contains(lits[0], "e") {
						return denyOpaque("echo -e decodes escapes into code for " + v.name)
					}
					lits = lits[1:]
				}
				code = append(code, strings.Join(lits, " "))
				continue
			}
			text := strings.Join(lits, "\n")
			if strings.Contains(text, "\\") || strings.Contains(text, "%b") {
				return denyOpaque("printf escapes decoded into code for " + v.name)
			}
			code = append(code, strings.ReplaceAll(text, "%s", ""))
		default:
			return denyOpaque("the output of " + uv.name + " is piped into " + v.name + " and run as code, which the guard cannot check (encoded or generated commands)")
		}
	}
	if len(code) == 0 {
		return Allowed()
	}
	return codeDecision(strings.Join(code, "\n"), lang, v, depth)
}

// codeDecision checks program text: shell code by the guard itself, other
// languages by scanning for credentials, environment access and the control
// plane.
func codeDecision(code, lang string, v *cmdView, depth int) Decision {
	if lang == "sh" {
		return guardShell(code, v.c.st.cwd, depth+1)
	}
	if hit := rawSecretHit(code); hit != "" {
		return denySecret("the " + lang + " program mentions " + hit)
	}
	if r := codeEnvReason(code, lang); r != "" {
		return denySecret(r)
	}
	if h := rawControlHit(code); h != "" {
		return denyControl("the " + lang + " program names " + h)
	}
	return Allowed()
}

// shellWordsDecision checks shell code given as words (bash -c CODE, eval
// WORDS, watch CMD, su -c CODE). Literal code is parsed and checked; code
// built at run time is denied unless it is only the output of a
// well-known environment-setup tool (eval "$(ssh-agent -s)").
func shellWordsDecision(ws []word, v *cmdView, sc *script, depth int) Decision {
	var parts []string
	for _, w := range ws {
		if s, ok := evalLiteral(w, v.c.st, true); ok {
			parts = append(parts, s)
			continue
		}
		if opaqueProducerOnly(w, sc) {
			// Check what is written out; the downloaded or generated
			// piece stands in as an inert word.
			var b strings.Builder
			for _, p := range w.parts {
				if p.kind == partLit {
					b.WriteString(p.text)
				} else {
					b.WriteString(" __asb_opaque__ ")
				}
			}
			parts = append(parts, b.String())
			continue
		}
		return denyOpaque(v.name + " runs shell code built at run time ($(...) or variables), which cannot be checked")
	}
	return guardShell(strings.Join(parts, " "), v.c.st.cwd, depth+1)
}

// opaqueProducerOnly reports whether every computed piece of w is the
// output of an environment-setup tool (eval "$(ssh-agent -s)") or a
// download (bash -c "$(curl -fsSL URL)", the same trust as curl | bash).
func opaqueProducerOnly(w word, sc *script) bool {
	for _, p := range w.parts {
		switch p.kind {
		case partLit:
		case partCmd:
			if p.sub == nil || len(p.sub.cmds) == 0 {
				return false
			}
			for _, c := range p.sub.cmds {
				if c.kind != cmdSimple || len(c.args) == 0 {
					return false
				}
				uv := resolve(c, sc)
				if uv.dynamic || !(envSetupTools[uv.name] || uv.name == "curl" || uv.name == "wget") {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}
