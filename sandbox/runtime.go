package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/sandbox/agent"
	"github.com/asb-dev/asb/sandbox/inbox"
)

// RuntimeConfig configures how agents run in boxes.
type RuntimeConfig struct {
	// AgentCommand is the agent CLI in the box ("claude", or a test agent).
	AgentCommand string
	Model        string
	AskModel     string
	// AgentEnv is non-secret environment for every agent turn
	// (ANTHROPIC_BASE_URL, …). AgentSecrets (the model key, NPM_TOKEN) go
	// the same way but are never logged. Both travel on stdin, never argv.
	AgentEnv     map[string]string
	AgentSecrets map[string]string
	// Policy is appended to the agent's system prompt (DefaultPolicy when empty).
	Policy string
	// AllowedTools is passed as --allowedTools (boxes run as root, where
	// Claude Code refuses to skip permissions).
	AllowedTools string
	// HookBinary is the controller path of the asb-hook binary for the
	// hosts' architecture; empty installs no hooks.
	HookBinary string
	// Install lists more controller files to put into every box (for
	// example a test agent), keyed by their path in the box.
	Install map[string]string
	// HookSettings is Claude Code's settings.json registering the hooks.
	HookSettings string
	// BundleDir is where collected git bundles are written on the controller.
	BundleDir string
	// Fetch returns a local checkout of a repository source (the GitHub
	// adapter clones with the right identity). Nil: only local sources work.
	Fetch func(ctx context.Context, src app.Source) (dir string, cleanup func(), err error)
	// MaxChunk caps the agent output read per poll (default 1 MiB).
	MaxChunk int64
}

// DefaultPolicy is the system-prompt addition every driver turn gets.
const DefaultPolicy = `You are working unattended inside an isolated sandbox on behalf of a person who is not watching.
- Your only way to reach them is the question channel: write one clear question to ` + inbox.QuestionFile + ` and end your turn. You will be resumed with the answer.
- Ask instead of guessing on decisions that matter (which approach, which library, anything irreversible), on missing credentials (name the environment variable you need), and on environment failures you cannot fix.
- Never print, log, commit or send secrets or the contents of environment variables.
- Commit your work on the current branch in small commits with clear messages. Do not push; do not add AI attribution or co-author trailers.
- Do not modify asb's state files (` + inbox.StatePrefix + `*, except the question file), hooks or agent settings.`

// AskPolicy is the co-pilot's system-prompt addition.
const AskPolicy = `You are a read-only co-pilot. Another agent is working in ` + inbox.Workspace + `; you must not change anything.
Answer the question from the workspace, ` + "`git diff`/`git log`" + ` and the working agent's log under ` + inbox.RunsDir + `. Be brief and concrete.`

// Sandbox implements app.Sandbox: boxes come from the Fleet; agents run in
// them by the in-box protocol of package inbox.
type Sandbox struct {
	fleet *Fleet
	cfg   RuntimeConfig
	log   *slog.Logger
}

var _ app.Sandbox = (*Sandbox)(nil)

// New returns the sandbox over a fleet.
func New(fleet *Fleet, cfg RuntimeConfig, log *slog.Logger) *Sandbox {
	if cfg.AgentCommand == "" {
		cfg.AgentCommand = "claude"
	}
	if cfg.Policy == "" {
		cfg.Policy = DefaultPolicy
	}
	if cfg.AllowedTools == "" {
		cfg.AllowedTools = "Bash,Read,Edit,MultiEdit,Write,Glob,Grep,LS,TodoWrite,NotebookEdit,WebFetch,WebSearch"
	}
	if cfg.MaxChunk <= 0 {
		cfg.MaxChunk = 1 << 20
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sandbox{fleet: fleet, cfg: cfg, log: log}
}

// Fleet returns the box manager.
func (s *Sandbox) Fleet() *Fleet { return s.fleet }

func (s *Sandbox) msb(box app.BoxRef) (*MSB, error) {
	m, ok := s.fleet.MSB(box.Host)
	if !ok {
		return nil, app.Errorf(app.EUNAVAILABLE, "box %s is on %s, which is no longer configured", box.Name, box.Host)
	}
	return m, nil
}

// stateFile records, in the box, what asb has set up there: one line per
// step ("bootstrap <version>", "source <dir>").
const stateFile = inbox.StatePrefix + "state"

const bootstrapVersion = "1"

// EnsureBox gets the session a running box, then makes sure it is set up
// (hooks, settings) and has every source in /workspace. Each step is
// recorded in the box, so repeating EnsureBox repeats nothing.
func (s *Sandbox) EnsureBox(ctx context.Context, spec app.BoxSpec) (app.BoxRef, error) {
	box, err := s.fleet.EnsureBox(ctx, spec)
	if err != nil {
		return app.BoxRef{}, err
	}
	m, err := s.msb(box)
	if err != nil {
		return app.BoxRef{}, err
	}
	res, err := m.Exec(ctx, box.Name, ExecSpec{}, "sh", "-c", `cat "$1" 2>/dev/null; exit 0`, "asb-state", stateFile)
	if err != nil {
		return app.BoxRef{}, err
	}
	done := map[string]bool{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		done[strings.TrimSpace(line)] = true
	}
	if !done["bootstrap "+bootstrapVersion] {
		if err := s.bootstrap(ctx, m, box.Name); err != nil {
			return app.BoxRef{}, err
		}
	}
	for _, src := range spec.Sources {
		if done["source "+src.Dir] {
			continue
		}
		if err := s.ship(ctx, m, box.Name, src); err != nil {
			return app.BoxRef{}, err
		}
	}
	return box, nil
}

// bootstrap installs the hook binary and Claude Code's settings, and sets
// git up for the agent's commits.
func (s *Sandbox) bootstrap(ctx context.Context, m *MSB, box string) error {
	installs := map[string]string{}
	for to, from := range s.cfg.Install {
		installs[to] = from
	}
	if s.cfg.HookBinary != "" {
		installs[inbox.HookBinary] = s.cfg.HookBinary
	}
	targets := make([]string, 0, len(installs))
	for to := range installs {
		targets = append(targets, to)
	}
	sort.Strings(targets)
	for _, to := range targets {
		if err := installFile(ctx, m, box, installs[to], to); err != nil {
			return err
		}
	}
	script := `set -e
mkdir -p "$1" "$2" /ask
if [ -n "$3" ]; then printf '%s' "$3" > "$1/settings.json"; fi
git config --global user.name "asb agent" 2>/dev/null || true
git config --global user.email "agent@asb.invalid" 2>/dev/null || true
git config --global safe.directory '*' 2>/dev/null || true
git config --global init.defaultBranch main 2>/dev/null || true
echo "bootstrap ` + bootstrapVersion + `" >> "$4"`
	res, err := m.Exec(ctx, box, ExecSpec{}, "sh", "-c", script, "asb-bootstrap", inbox.ClaudeDir, inbox.RunsDir, s.cfg.HookSettings, stateFile)
	return execFailed(res, err, "set the box up")
}

// installFile copies an executable from the controller into the box
// through the exec's stdin.
func installFile(ctx context.Context, m *MSB, box, from, to string) error {
	f, err := os.Open(from)
	if err != nil {
		return app.WrapError(app.EUNAVAILABLE, err, "%s is missing on the controller (run make build)", filepath.Base(from))
	}
	defer f.Close()
	res, err := m.Exec(ctx, box, ExecSpec{Stdin: f}, "sh", "-c",
		`set -e; mkdir -p "$(dirname "$1")"; cat > "$1.tmp"; chmod 0755 "$1.tmp"; mv "$1.tmp" "$1"`, "asb-install", to)
	return execFailed(res, err, "install "+to)
}

func execFailed(res Result, err error, what string) error {
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return app.Errorf(app.EUNAVAILABLE, "could not %s in the box (exit %d: %s)", what, res.ExitCode, clipText(firstLine(res.Stderr), 200))
	}
	return nil
}

// ship puts one source into /workspace/<dir> as a tar stream on the
// exec's stdin (one round trip, no staging on the host) and marks its
// commit as the base that Collect bundles from.
func (s *Sandbox) ship(ctx context.Context, m *MSB, box string, src app.Source) error {
	if err := app.CheckDirName(src.Dir); err != nil {
		return err
	}
	dir, cleanup := src.LocalPath, func() {}
	if dir != "" {
		if _, err := os.Stat(dir); err != nil {
			// An uploaded workspace is deleted once a box holds it.
			return app.WrapError(app.EINVALID, err, "the working tree of %s is no longer on the controller (an upload is shipped once); delegate again", src.Dir)
		}
	} else {
		if s.cfg.Fetch == nil {
			return app.Errorf(app.EINVALID, "cannot fetch %s: no GitHub identity is configured", src.Repo)
		}
		var err error
		dir, cleanup, err = s.cfg.Fetch(ctx, src)
		if err != nil {
			return err
		}
	}
	defer cleanup()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, dir)) }()
	defer pr.Close()
	script := `set -e
d="/workspace/$1"
rm -rf "$d"; mkdir -p "$d"
tar -x -C "$d" -f -
if git -C "$d" rev-parse --verify -q HEAD >/dev/null 2>&1; then git -C "$d" update-ref refs/asb/base HEAD; fi
echo "source $1" >> "$2"`
	res, err := m.Exec(ctx, box, ExecSpec{Stdin: pr}, "sh", "-c", script, "asb-ship", src.Dir, stateFile)
	return execFailed(res, err, "unpack "+src.Dir)
}

func turnDir(ref app.TurnRef) string {
	return inbox.RunsDir + "/" + string(ref.RunID) + "-" + strconv.Itoa(ref.Turn)
}

// launchScript starts the agent detached. Its stdin carries the turn's
// environment (KEY=base64 lines, secrets included, so nothing sensitive
// is in argv), a "--" line, then the prompt. "@PROMPT@" in the agent's
// argv is replaced by the prompt. ASB_MCP_CONFIG, when set, is written to
// the turn's inbox.MCPConfigName (mode 0600, removed when the agent exits) and taken
// out of the agent's environment; "@MCPCONFIG@" is replaced by its path. Creating the turn folder is the lock
// that makes a second launch of the same turn do nothing.
const launchScript = `d=$1; wd=$2; shift 2
mkdir -p "$(dirname "$d")"
mkdir "$d" 2>/dev/null || exit 0
while IFS= read -r line; do
  [ "$line" = "--" ] && break
  k=${line%%=*}; v=${line#*=}
  v=$(printf '%s' "$v" | base64 -d) || exit 90
  export "$k=$v"
done
cat > "$d/prompt"
if [ -n "${ASB_MCP_CONFIG:-}" ]; then
  (umask 077; printf '%s' "$ASB_MCP_CONFIG" > "$d/` + inbox.MCPConfigName + `") || exit 92
fi
unset ASB_MCP_CONFIG
rm -f ` + inbox.QuestionFile + `
cp "$d/prompt" ` + inbox.TaskFile + `
cd "$wd" || exit 91
n=$#; i=0
while [ "$i" -lt "$n" ]; do
  a=$1; shift
  case $a in
    @PROMPT@) set -- "$@" "$(cat "$d/prompt")" ;;
    @MCPCONFIG@) set -- "$@" "$d/` + inbox.MCPConfigName + `" ;;
    *) set -- "$@" "$a" ;;
  esac
  i=$((i+1))
done
run='"$@" > "$0/events.ndjson" 2> "$0/stderr.log" < /dev/null; c=$?; rm -f "$0/` + inbox.MCPConfigName + `"; echo "$c" > "$0/exit.tmp"; mv "$0/exit.tmp" "$0/exit"'
if command -v setsid >/dev/null 2>&1; then
  setsid nohup sh -c "$run" "$d" "$@" > /dev/null 2>&1 &
else
  nohup sh -c "$run" "$d" "$@" > /dev/null 2>&1 &
fi
echo $! > "$d/pid"`

// agentArgv is the agent's command line for a driver or ask turn.
func (s *Sandbox) agentArgv(resume, policy, tools, model string) []string {
	argv := []string{s.cfg.AgentCommand, "-p", "@PROMPT@", "--output-format", "stream-json", "--verbose",
		"--setting-sources", "user", "--append-system-prompt", policy, "--allowedTools", tools}
	if model != "" {
		argv = append(argv, "--model", model)
	}
	if resume != "" {
		argv = append(argv, "--resume", resume)
	}
	return argv
}

// turnInput renders the launcher's stdin.
func turnInput(env ...map[string]string) func(prompt string) io.Reader {
	merged := map[string]string{}
	for _, e := range env {
		for k, v := range e {
			merged[k] = v
		}
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return func(prompt string) io.Reader {
		var b bytes.Buffer
		for _, k := range keys {
			b.WriteString(k + "=" + base64.StdEncoding.EncodeToString([]byte(merged[k])) + "\n")
		}
		b.WriteString("--\n")
		b.WriteString(prompt)
		return &b
	}
}

// Launch starts a driver turn detached in the box. A box that stopped
// while its run waited for an answer is started first: an exec into a
// stopped box would boot it only for the exec and stop it again, taking
// the detached agent with it.
func (s *Sandbox) Launch(ctx context.Context, box app.BoxRef, t app.Turn) error {
	m, err := s.msb(box)
	if err != nil {
		return err
	}
	if err := s.fleet.ensureRunning(ctx, s.fleet.host(box.Host), box.Name); err != nil {
		return err
	}
	for k := range t.Secrets {
		if err := app.CheckSecretName(k); err != nil {
			return err
		}
	}
	// Hooks reach the agent through its settings file, as with Claude Code.
	env := map[string]string{"HOME": inbox.Home}
	tools := s.cfg.AllowedTools
	for _, m := range t.MCPServers {
		tools += ",mcp__" + m.Name // the owner added the server for their agents to use
	}
	argv := s.agentArgv(t.ResumeAgentSession, s.cfg.Policy, tools, s.cfg.Model)
	if len(t.MCPServers) > 0 {
		cfg, err := mcpConfig(t.MCPServers)
		if err != nil {
			return err
		}
		// After the agent command and before -p, so that the variadic flag
		// ends at the next option.
		argv = slices.Insert(argv, 1, "--mcp-config", "@MCPCONFIG@")
		env[mcpConfigEnv] = cfg
	}
	stdin := turnInput(env, s.cfg.AgentEnv, s.cfg.AgentSecrets, t.Secrets)(t.Prompt)
	wd := t.Workdir
	if wd == "" {
		wd = inbox.Workspace
	}
	args := append([]string{"sh", "-c", launchScript, "asb-launch", turnDir(t.TurnRef), wd}, argv...)
	res, err := m.Exec(ctx, box.Name, ExecSpec{Stdin: stdin}, args...)
	return execFailed(res, err, "launch the agent")
}

// pollScript reads a turn's state and new output in one round trip. The
// exit file is read before the output: once it exists the output is final.
// A wrapper found dead is asked for its exit file once more: it writes the
// file just before it ends, possibly between the first read and the
// liveness check, and missing it would call a finished turn killed.
const pollScript = `d=$1; off=$2; max=$3; q=$4
e=; [ -f "$d/exit" ] && e=$(cat "$d/exit")
a=0; p=$(cat "$d/pid" 2>/dev/null)
if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then a=1; fi
[ "$a" = 0 ] && [ -z "$e" ] && [ -f "$d/exit" ] && e=$(cat "$d/exit")
l=0; [ -d "$d" ] && l=1
n=0; [ -f "$d/events.ndjson" ] && n=$(wc -c < "$d/events.ndjson")
ql=0; [ -s "$q" ] && ql=$(wc -c < "$q")
printf 'asb-poll 1\nlaunched=%s\nexit=%s\nalive=%s\nsize=%s\nqlen=%s\n\n' "$l" "$e" "$a" "$((n+0))" "$((ql+0))"
if [ "$ql" -gt 0 ]; then head -c "$ql" "$q"; fi
if [ "$n" -gt "$off" ]; then tail -c +"$((off+1))" "$d/events.ndjson" | head -c "$max"; fi
exit 0`

// pollResult is the parsed answer of pollScript.
type pollResult struct {
	launched bool
	exited   bool
	exitCode int
	alive    bool
	size     int64
	question string
	chunk    []byte
}

func parsePoll(out []byte) (pollResult, error) {
	var r pollResult
	header, body, ok := bytes.Cut(out, []byte("\n\n"))
	if !ok || !bytes.HasPrefix(header, []byte("asb-poll 1\n")) {
		return r, fmt.Errorf("unexpected poll answer %q", clipText(string(out), 80))
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(header), "\n")[1:] {
		k, v, _ := strings.Cut(line, "=")
		fields[k] = strings.TrimSpace(v)
	}
	r.launched = fields["launched"] == "1"
	r.alive = fields["alive"] == "1"
	if e := fields["exit"]; e != "" {
		code, err := strconv.Atoi(e)
		if err != nil {
			return r, fmt.Errorf("bad exit code %q", clipText(e, 20))
		}
		r.exited, r.exitCode = true, code
	}
	var err error
	if r.size, err = strconv.ParseInt(fields["size"], 10, 64); err != nil {
		return r, fmt.Errorf("bad size %q", fields["size"])
	}
	ql, err := strconv.Atoi(fields["qlen"])
	if err != nil || ql < 0 || ql > len(body) {
		return r, fmt.Errorf("bad question length %q", fields["qlen"])
	}
	r.question = strings.TrimSpace(string(body[:ql]))
	r.chunk = body[ql:]
	return r, nil
}

// Poll reads a turn's new output and state in one exec.
func (s *Sandbox) Poll(ctx context.Context, box app.BoxRef, ref app.TurnRef, offset int64) (app.Progress, error) {
	m, err := s.msb(box)
	if err != nil {
		return app.Progress{}, err
	}
	res, err := m.Exec(ctx, box.Name, ExecSpec{MaxOutput: int(s.cfg.MaxChunk) + 64<<10}, "sh", "-c", pollScript, "asb-poll",
		turnDir(ref), strconv.FormatInt(offset, 10), strconv.FormatInt(s.cfg.MaxChunk, 10), inbox.QuestionFile)
	if err := execFailed(res, err, "read the agent's progress"); err != nil {
		return app.Progress{}, err
	}
	pr, err := parsePoll(res.Stdout)
	if err != nil {
		return app.Progress{}, app.WrapError(app.EUNAVAILABLE, err, "the box answered the progress read with something unexpected")
	}
	if !pr.launched {
		return app.Progress{}, app.Errorf(app.ENOTFOUND, "turn %s/%d was never launched in box %s", ref.RunID, ref.Turn, box.Name)
	}
	p := progressFrom(pr, offset)
	if !pr.exited && !pr.alive && pr.size == offset+int64(len(pr.chunk)) {
		// The wrapper is gone without writing an exit code: the box was
		// restarted or the process killed. The turn is over.
		p.Exited, p.ExitCode = true, -1
	}
	return p, nil
}

// progressFrom splits a chunk into complete records. A final line without
// a newline counts only once the agent has exited (the stream is final).
func progressFrom(pr pollResult, offset int64) app.Progress {
	p := app.Progress{Offset: offset, Exited: pr.exited, ExitCode: pr.exitCode}
	chunk := pr.chunk
	complete := bytes.LastIndexByte(chunk, '\n') + 1
	final := pr.exited && offset+int64(len(chunk)) >= pr.size
	if final {
		complete = len(chunk)
	} else {
		// More output follows; the turn is not over from the reader's view.
		p.Exited = false
	}
	sc := bufio.NewScanner(bytes.NewReader(chunk[:complete]))
	sc.Buffer(make([]byte, 0, 64<<10), len(chunk)+1)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rec := append([]byte(nil), line...)
		p.Records = append(p.Records, rec)
		events, err := agent.ParseAll(rec)
		if err != nil {
			continue
		}
		for _, e := range events {
			if e.Kind == agent.KindSystemInit && e.SessionID != "" && p.AgentSessionID == "" {
				p.AgentSessionID = e.SessionID
			}
			if e.Kind == agent.KindResult {
				p.Result = resultOf(e)
			}
		}
	}
	p.Offset = offset + int64(complete)
	if p.Exited {
		p.Question = pr.question
	}
	return p
}

// resultOf turns the agent's result event into the core's summary.
func resultOf(e agent.Event) *app.AgentResult {
	r := &app.AgentResult{Summary: e.Text, IsError: e.IsError, Usage: app.Usage{CostUSD: e.TotalCostUSD, Turns: e.NumTurns}}
	if e.Usage != nil {
		r.Usage.InputTokens = e.Usage.InputTokens + e.Usage.CacheCreationInputTokens + e.Usage.CacheReadInputTokens
		r.Usage.OutputTokens = e.Usage.OutputTokens
	}
	return r
}

// Kill stops a turn's agent and everything it started.
func (s *Sandbox) Kill(ctx context.Context, box app.BoxRef, ref app.TurnRef) error {
	m, err := s.msb(box)
	if err != nil {
		return err
	}
	const script = `p=$(cat "$1/pid" 2>/dev/null) || exit 0
[ -f "$1/exit" ] && exit 0
kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null
exit 0`
	res, err := m.Exec(ctx, box.Name, ExecSpec{}, "sh", "-c", script, "asb-kill", turnDir(ref))
	if IsKind(err, KindNotFound) {
		return nil
	}
	return execFailed(res, err, "stop the agent")
}

// Remove destroys the box.
func (s *Sandbox) Remove(ctx context.Context, box app.BoxRef) error { return s.fleet.Remove(ctx, box) }

// Collect bundles each source's new commits (since the base recorded at
// shipping) out of the box into BundleDir.
func (s *Sandbox) Collect(ctx context.Context, box app.BoxRef, sources []app.Source) ([]app.Bundle, error) {
	m, err := s.msb(box)
	if err != nil {
		return nil, err
	}
	var out []app.Bundle
	for _, src := range sources {
		d := inbox.Workspace + "/" + src.Dir
		res, err := m.Exec(ctx, box.Name, ExecSpec{}, "sh", "-c",
			`git -C "$1" rev-parse -q --verify refs/asb/base >/dev/null 2>&1 || exit 0; git -C "$1" rev-list --reverse refs/asb/base..HEAD`, "asb-commits", d)
		if err := execFailed(res, err, "list the agent's commits in "+src.Dir); err != nil {
			return nil, err
		}
		commits := strings.Fields(string(res.Stdout))
		if len(commits) == 0 {
			continue
		}
		if err := os.MkdirAll(s.cfg.BundleDir, 0o700); err != nil {
			return nil, fmt.Errorf("bundle folder: %w", err)
		}
		path := filepath.Join(s.cfg.BundleDir, fmt.Sprintf("%s-%s-%s.bundle", box.Name, src.Dir, commits[len(commits)-1][:12]))
		f, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("bundle file: %w", err)
		}
		res, err = m.Exec(ctx, box.Name, ExecSpec{Stdout: f}, "git", "-C", d, "bundle", "create", "-", "refs/asb/base..HEAD")
		closeErr := f.Close()
		if err := execFailed(res, err, "bundle the agent's commits in "+src.Dir); err != nil {
			os.Remove(path + ".tmp")
			return nil, err
		}
		if closeErr != nil {
			return nil, closeErr
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return nil, err
		}
		out = append(out, app.Bundle{Source: src, Path: path, Commits: commits})
	}
	return out, nil
}

// OpenBundle opens a bundle Collect wrote, by base name, confined to
// BundleDir: the name is checked to be a plain file name first.
func (s *Sandbox) OpenBundle(name string) (io.ReadCloser, int64, error) {
	if err := app.CheckBundleName(name); err != nil {
		return nil, 0, err
	}
	if s.cfg.BundleDir == "" {
		return nil, 0, app.Errorf(app.ENOTFOUND, "bundle %s not found", name)
	}
	p := filepath.Join(s.cfg.BundleDir, name)
	// Collect writes plain files: anything else (a symlink out of the
	// folder) is not one of its bundles.
	if st, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, 0, app.Errorf(app.ENOTFOUND, "bundle %s is no longer on the controller", name)
	} else if err != nil {
		return nil, 0, fmt.Errorf("open bundle: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, 0, app.Errorf(app.ENOTFOUND, "bundle %s not found", name)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, fmt.Errorf("open bundle: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("open bundle: %w", err)
	}
	return f, st.Size(), nil
}

// Ask runs one co-pilot turn synchronously in /ask with ASK_LANE=1.
func (s *Sandbox) Ask(ctx context.Context, box app.BoxRef, req app.AskRequest) (app.AskAnswer, error) {
	m, err := s.msb(box)
	if err != nil {
		return app.AskAnswer{}, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = 45 * time.Second
	}
	env := map[string]string{"HOME": inbox.Home, inbox.AskLaneEnv: "1"}
	stdin := turnInput(env, s.cfg.AgentEnv, s.cfg.AgentSecrets)(req.Question)
	const script = `while IFS= read -r line; do
  [ "$line" = "--" ] && break
  k=${line%%=*}; v=${line#*=}
  v=$(printf '%s' "$v" | base64 -d) || exit 90
  export "$k=$v"
done
prompt=$(cat)
mkdir -p /ask; cd /ask || exit 91
n=$#; i=0
while [ "$i" -lt "$n" ]; do
  a=$1; shift
  if [ "$a" = "@PROMPT@" ]; then set -- "$@" "$prompt"; else set -- "$@" "$a"; fi
  i=$((i+1))
done
exec "$@" 2>/dev/null`
	model := s.cfg.AskModel
	if model == "" {
		model = s.cfg.Model
	}
	args := append([]string{"sh", "-c", script, "asb-ask"},
		s.agentArgv(req.ResumeAskSession, AskPolicy, "Read,Grep,Glob,LS,Bash", model)...)
	actx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	res, err := m.Exec(actx, box.Name, ExecSpec{Stdin: stdin, Timeout: timeout}, args...)
	if IsKind(err, KindExecTimeout) {
		return app.AskAnswer{Answer: "The co-pilot did not answer in time.", TimedOut: true}, nil
	}
	if err != nil {
		return app.AskAnswer{}, err
	}
	var ans app.AskAnswer
	var texts []string
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		events, err := agent.ParseAll(sc.Bytes())
		if err != nil {
			continue
		}
		for _, e := range events {
			switch e.Kind {
			case agent.KindSystemInit:
				if ans.AgentSessionID == "" {
					ans.AgentSessionID = e.SessionID
				}
			case agent.KindResult:
				if e.Text != "" {
					ans.Answer = e.Text
				}
			case agent.KindAssistantText:
				if e.Text != "" {
					texts = append(texts, e.Text)
				}
			}
		}
	}
	if ans.Answer == "" && len(texts) > 0 {
		ans.Answer = texts[len(texts)-1]
	}
	if ans.Answer == "" {
		return app.AskAnswer{}, app.Errorf(app.EUNAVAILABLE, "the co-pilot gave no answer (exit %d)", res.ExitCode)
	}
	return ans, nil
}

// confineScript resolves a path in the box and refuses anything that,
// after symlinks, is outside /workspace.
const confineScript = `p=$(realpath -e -- "$1" 2>/dev/null) || { echo "no such file" >&2; exit 3; }
case "$p" in /workspace|/workspace/*) ;; *) echo "outside the workspace" >&2; exit 4;; esac
`

// ListFiles lists a folder under /workspace.
func (s *Sandbox) ListFiles(ctx context.Context, box app.BoxRef, dir string) ([]app.FileInfo, error) {
	m, err := s.msb(box)
	if err != nil {
		return nil, err
	}
	script := confineScript + `[ -d "$p" ] || { echo "not a folder" >&2; exit 5; }
find "$p" -mindepth 1 -maxdepth 1 -printf '%y\t%s\t%T@\t%f\0'`
	res, err := m.Exec(ctx, box.Name, ExecSpec{}, "sh", "-c", script, "asb-ls", dir)
	if err != nil {
		return nil, err
	}
	if err := fileError(res, dir); err != nil {
		return nil, err
	}
	var out []app.FileInfo
	for _, rec := range strings.Split(string(res.Stdout), "\x00") {
		parts := strings.SplitN(rec, "\t", 4)
		if len(parts) != 4 {
			continue
		}
		size, _ := strconv.ParseInt(parts[1], 10, 64)
		secs, _ := strconv.ParseFloat(parts[2], 64)
		name := parts[3]
		if dir == inbox.Workspace && strings.HasPrefix(name, ".agent.") {
			continue // asb's own state is not the agent's output
		}
		out = append(out, app.FileInfo{Name: name, Path: strings.TrimSuffix(dir, "/") + "/" + name, Dir: parts[0] == "d",
			Size: size, ModTime: time.Unix(int64(secs), 0).UTC()})
	}
	slices.SortFunc(out, func(a, b app.FileInfo) int {
		if a.Dir != b.Dir {
			if a.Dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func fileError(res Result, p string) error {
	switch res.ExitCode {
	case 0:
		return nil
	case 3:
		return app.Errorf(app.ENOTFOUND, "%s does not exist in the box", p)
	case 4:
		return app.Errorf(app.EINVALID, "%s points outside /workspace", p)
	case 5:
		return app.Errorf(app.EINVALID, "%s is not a folder", p)
	case 6:
		return app.Errorf(app.EINVALID, "%s is not a regular file", p)
	case 7:
		return app.Errorf(app.ETOOLARGE, "%s is larger than the download limit", p)
	}
	return app.Errorf(app.EUNAVAILABLE, "reading %s failed in the box (exit %d)", p, res.ExitCode)
}

// ReadFile streams a file under /workspace, refusing files over max bytes.
func (s *Sandbox) ReadFile(ctx context.Context, box app.BoxRef, p string, max int64, w io.Writer) error {
	m, err := s.msb(box)
	if err != nil {
		return err
	}
	script := confineScript + `[ -f "$p" ] || exit 6
[ "$(wc -c < "$p")" -le "$2" ] || exit 7
cat -- "$p"`
	var stderr bytes.Buffer
	res, err := m.Exec(ctx, box.Name, ExecSpec{Stdout: w, Stderr: &stderr}, "sh", "-c", script, "asb-cat", p, strconv.FormatInt(max, 10))
	if err != nil {
		return err
	}
	return fileError(res, p)
}

// HookSettings is Claude Code's settings.json for a box: every tool call
// goes through the gate (no tools while a question waits; skipped in the
// ask lane), the guard (control plane and credentials), and, in the ask
// lane only, the read-only hook.
func HookSettings() string {
	hook := func(mode string) map[string]any {
		return map[string]any{"type": "command", "command": inbox.HookBinary + " " + mode, "timeout": 30}
	}
	settings := map[string]any{
		"hooks": map[string]any{
			"PreToolUse": []any{map[string]any{
				"matcher": "*",
				"hooks":   []any{hook("gate"), hook("guard"), hook("ro")},
			}},
		},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		panic(err) // a literal map
	}
	return string(b)
}
