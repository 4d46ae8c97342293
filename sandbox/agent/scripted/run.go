package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/asb-dev/asb/sandbox/inbox"
)

// defaultModel is reported when neither --model nor ANTHROPIC_MODEL is set.
const defaultModel = "claude-sonnet-4-5-20250929"

// toolList is the init event's tool list (Claude Code 2.0's built-ins).
var toolList = []string{
	"Task", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write", "NotebookEdit",
	"WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell", "SlashCommand",
}

// turn is one invocation: one turn of a conversation.
type turn struct {
	o      options
	out    *emitter
	stderr io.Writer
	start  time.Time

	cwd       string // the working directory as reported
	cwdKey    string // the same with symlinks resolved (the state's key)
	home      string
	sessionID string // the id reported in the stream
	st        *state
	resumed   bool
	model     string
	hooks     []hookCommand

	questionFile string
	messages     int
	usage        usage
	denials      []permissionDenial
	lastText     string
	lastWasText  bool
	todos        []todo
	stop         bool
	stopReason   string
}

func newTurn(o options, stdout, stderr io.Writer) *turn {
	return &turn{o: o, out: &emitter{w: stdout, format: o.OutputFormat}, stderr: stderr, start: time.Now()}
}

// action is what a directive tells the turn to do next.
type action int

const (
	next action = iota
	endTurn
	failTurn
	crashTurn
)

func (t *turn) run() int {
	if err := t.setup(); err != nil {
		fmt.Fprintln(t.stderr, err)
		return 1
	}
	t.emitInit()

	var (
		dirs     []directive
		answer   bool
		noScript bool
	)
	if lines, ok := findScript(t.o.Prompt); ok {
		parsed, err := parseScript(lines)
		if err != nil {
			t.st.Remaining = nil
			t.saveState()
			return t.fail(1, "scripted agent: "+err.Error())
		}
		dirs = parsed
	} else if t.resumed && len(t.st.Remaining) > 0 {
		parsed, err := parseDirectives(t.st.Remaining)
		if err != nil {
			t.st.Remaining = nil
			t.saveState()
			return t.fail(1, "scripted agent: saved state: "+err.Error())
		}
		dirs, answer = parsed, true
		t.st.Answers = append(t.st.Answers, t.o.Prompt)
	} else {
		noScript = true
	}
	t.st.Question = ""
	t.st.Remaining = texts(dirs)
	t.saveState()

	if answer {
		t.say("answer received: " + t.o.Prompt)
	}
	if noScript {
		t.say("I did the task: " + firstLine(t.o.Prompt))
	}
	for i, d := range dirs {
		// A directive counts as done once started, so a turn killed in the
		// middle of one does not repeat it when resumed.
		t.st.Remaining = texts(dirs[i+1:])
		t.saveState()
		act, code, msg := t.do(d)
		switch act {
		case endTurn:
			return t.succeed()
		case failTurn:
			return t.fail(code, msg)
		case crashTurn:
			return code
		}
		if t.stop {
			if t.stopReason != "" {
				t.say(t.stopReason)
			}
			return t.succeed()
		}
	}
	if !t.lastWasText {
		t.say("Done.")
	}
	return t.succeed()
}

// setup resolves the cwd and the conversation state.
func (t *turn) setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("Error: %v", err)
	}
	t.cwd = wd
	t.cwdKey = wd
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		t.cwdKey = real
	}
	if t.home, err = os.UserHomeDir(); err != nil {
		return fmt.Errorf("Error: %v", err)
	}
	t.questionFile = inbox.QuestionFile
	if q := os.Getenv("SCRIPTED_AGENT_QUESTION_FILE"); q != "" {
		t.questionFile = t.abs(q)
	}
	t.model = t.o.Model
	if t.model == "" {
		t.model = os.Getenv("ANTHROPIC_MODEL")
	}
	if t.model == "" {
		t.model = defaultModel
	}

	switch {
	case t.o.Resume != "":
		t.st, err = loadState(t.o.Resume, t.cwdKey)
		if errors.Is(err, errNoConversation) {
			return fmt.Errorf("No conversation found with session ID: %s", t.o.Resume)
		}
		t.resumed = true
	case t.o.Continue:
		t.st, err = latestState(t.cwdKey)
		if errors.Is(err, errNoConversation) {
			return errors.New("No conversation found to continue")
		}
		t.resumed = true
	default:
		id := t.o.SessionID
		if id == "" {
			id = newUUID()
		} else if _, perr := statePath(id); perr != nil {
			return fmt.Errorf("Error: Invalid session ID %q", id)
		} else if stateExists(id) {
			return fmt.Errorf("Error: Session ID %s is already in use.", id)
		}
		t.st = &state{SessionID: id, Cwd: t.cwdKey}
	}
	if err != nil {
		return fmt.Errorf("Error: %v", err)
	}
	t.st.Turns++
	t.st.Prompts = append(t.st.Prompts, t.o.Prompt)
	t.sessionID = t.st.SessionID
	if t.resumed && os.Getenv("SCRIPTED_AGENT_FORK_SESSION_ON_RESUME") == "1" {
		t.sessionID = newUUID()
	}
	t.loadHooks()
	return nil
}

func (t *turn) saveState() {
	if err := t.st.save(); err != nil {
		fmt.Fprintf(t.stderr, "scripted agent: saving state: %v\n", err)
	}
}

func (t *turn) emitInit() {
	tools := toolList
	if len(t.o.Tools) > 0 {
		tools = t.o.Tools
	}
	keySource := "none"
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		keySource = "ANTHROPIC_API_KEY"
	}
	t.out.event(initEvent{
		Type: "system", Subtype: "init", Cwd: t.cwd, SessionID: t.sessionID,
		Tools: tools, MCPServers: []mcpServer{}, Model: t.model, PermissionMode: t.o.PermissionMode,
		SlashCommands: []string{"compact", "context", "cost", "init", "review"}, APIKeySource: keySource,
		ClaudeCodeVersion: strings.Fields(version)[0], OutputStyle: "default",
		Agents: []string{"general-purpose"}, Skills: []string{}, Plugins: []string{}, UUID: newUUID(),
	})
}

// assistant emits one assistant message with one content block.
func (t *turn) assistant(b contentBlock) {
	t.messages++
	size := 0
	if b.Text != nil {
		size = len(*b.Text)
	} else if data, err := json.Marshal(b.Input); err == nil {
		size = len(data)
	}
	u := usage{
		InputTokens:          4,
		CacheReadInputTokens: 12000 + 150*int64(t.messages),
		OutputTokens:         int64(size/4 + 8),
		ServiceTier:          "standard",
	}
	if t.messages == 1 {
		u.CacheCreationInputTokens = int64((len(t.o.Prompt)+len(t.o.AppendSystemPrompt))/4 + 500)
	}
	t.usage = t.usage.add(u)
	t.out.event(assistantEvent{
		Type: "assistant",
		Message: apiMessage{
			ID: newID("msg_"), Type: "message", Role: "assistant", Model: t.model,
			Content: []contentBlock{b}, Usage: u,
		},
		SessionID: t.sessionID, UUID: newUUID(),
	})
	t.lastWasText = b.Text != nil
}

func (t *turn) say(text string) {
	t.assistant(contentBlock{Type: "text", Text: ptr(text)})
	t.lastText = text
}

// useTool makes one tool call: the tool_use, the PreToolUse hooks, the
// permission check, then the tool itself unless denied, and the
// tool_result. It reports whether the tool ran.
func (t *turn) useTool(name string, input any, exec func() outcome) (outcome, bool) {
	id := newID("toolu_")
	t.assistant(contentBlock{Type: "tool_use", ID: id, Name: name, Input: input})
	raw, _ := json.Marshal(input)
	var in map[string]any
	_ = json.Unmarshal(raw, &in)

	v := t.preToolUse(name, id, raw)
	if v.stop {
		t.stop, t.stopReason = true, v.stopReason
	}
	deny, reason := v.deny, v.reason
	if !deny && len(t.o.Tools) > 0 && !contains(t.o.Tools, name) {
		deny, reason = true, "<tool_use_error>Error: No such tool available: "+name+"</tool_use_error>"
	}
	if !deny && !v.allow && !t.permitted(name, in) {
		deny, reason = true, fmt.Sprintf("Claude requested permissions to use %s, but you haven't granted it yet.", name)
	}
	if deny {
		t.denials = append(t.denials, permissionDenial{ToolName: name, ToolUseID: id, ToolInput: input})
		res := outcome{content: reason, isError: true, result: "Error: " + reason}
		t.toolResult(id, res)
		return res, false
	}
	res := exec()
	t.toolResult(id, res)
	return res, true
}

func (t *turn) toolResult(id string, r outcome) {
	t.out.event(userEvent{
		Type: "user",
		Message: userMessage{Role: "user", Content: []toolResultBlock{{
			ToolUseID: id, Type: "tool_result", Content: r.content, IsError: r.isError,
		}}},
		SessionID: t.sessionID, UUID: newUUID(), ToolUseResult: r.result,
	})
}

// do runs one directive.
func (t *turn) do(d directive) (act action, code int, msg string) {
	switch d.Verb {
	case "say":
		t.say(d.Content)
	case "stderr":
		fmt.Fprintln(t.stderr, d.Content)
	case "echo-prompt":
		t.say(t.o.Prompt)
	case "echo-system-prompt":
		t.say(t.o.AppendSystemPrompt)
	case "echo-flags":
		data, _ := json.Marshal(struct {
			options
			Resumed bool `json:"resumed"`
		}{t.o, t.resumed})
		t.say(string(data))
	case "emit":
		for i := 1; i <= d.N; i++ {
			t.say(fmt.Sprintf("emit %d of %d", i, d.N))
		}
	case "sleep":
		time.Sleep(d.Duration)
	case "todo":
		old := t.todos
		t.useTool("TodoWrite", todoInput{Todos: d.Todos}, func() outcome {
			t.todos = d.Todos
			return outcome{
				content: "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable",
				result:  map[string]any{"oldTodos": nonNil(old), "newTodos": d.Todos},
			}
		})
	case "write":
		path := t.abs(d.Path)
		t.useTool("Write", writeInput{FilePath: path, Content: d.Content}, func() outcome { return writeFile(path, d.Content) })
	case "append":
		path := t.abs(d.Path)
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.say(fmt.Sprintf("I could not read %s: %v", path, err))
			break
		}
		content := string(old) + d.Content
		t.useTool("Write", writeInput{FilePath: path, Content: content}, func() outcome { return writeFile(path, content) })
	case "read":
		path := t.abs(d.Path)
		t.useTool("Read", readInput{FilePath: path}, func() outcome { return readFile(path) })
	case "run":
		t.useTool("Bash", bashInput{Command: d.Content}, func() outcome { return t.bash(d.Content) })
	case "commit":
		cmd := "git add -A && git commit -m " + shellQuote(d.Content)
		t.useTool("Bash", bashInput{Command: cmd, Description: "Commit the changes"}, func() outcome { return t.bash(cmd) })
	case "env":
		name := d.Content
		cmd := fmt.Sprintf(`if [ -n "${%[1]s+set}" ]; then echo "%[1]s is set (${#%[1]s} bytes)"; else echo "%[1]s is not set"; fi`, name)
		t.useTool("Bash", bashInput{Command: cmd, Description: "Check whether " + name + " is set"}, func() outcome {
			text := name + " is not set"
			if v, ok := os.LookupEnv(name); ok {
				text = fmt.Sprintf("%s is set (%d bytes)", name, len(v))
			}
			return outcome{content: text, result: bashResult{Stdout: text}}
		})
	case "ask":
		_, ran := t.useTool("Write", writeInput{FilePath: t.questionFile, Content: d.Content}, func() outcome {
			return writeFile(t.questionFile, d.Content)
		})
		t.st.Question = d.Content
		t.saveState()
		if ran {
			t.say("I need an answer before I can go on:\n\n" + d.Content)
		} else {
			t.say("I need an answer before I can go on, but could not write the question file:\n\n" + d.Content)
		}
		return endTurn, 0, ""
	case "fail":
		msg := d.Content
		if msg == "" {
			msg = fmt.Sprintf("scripted failure (exit code %d)", d.N)
		}
		return failTurn, d.N, msg
	case "crash":
		return crashTurn, d.N, ""
	}
	return next, 0, ""
}

// succeed ends the turn with a success result.
func (t *turn) succeed() int {
	t.saveState()
	t.out.final(t.result(agentResult{subtype: "success", text: t.lastText}))
	return 0
}

// fail ends the turn with an error_during_execution result and exit code.
func (t *turn) fail(code int, msg string) int {
	t.saveState()
	t.out.final(t.result(agentResult{subtype: "error_during_execution", isError: true, errors: []string{msg}}))
	return code
}

type agentResult struct {
	subtype string
	isError bool
	text    string
	errors  []string
}

func (t *turn) result(r agentResult) resultEvent {
	elapsed := time.Since(t.start).Milliseconds()
	u := t.usage
	u.ServiceTier = ""
	cost := u.costUSD()
	ev := resultEvent{
		Type: "result", Subtype: r.subtype, IsError: r.isError,
		DurationMS: elapsed, DurationAPIMS: elapsed * 6 / 10, NumTurns: t.messages,
		SessionID: t.sessionID, TotalCostUSD: cost, Usage: u,
		ModelUsage: map[string]modelUsage{t.model: {
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadInputTokens: u.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
			CostUSD: cost, ContextWindow: 200000,
		}},
		PermissionDenials: nonNil(t.denials),
		Errors:            r.errors,
		UUID:              newUUID(),
	}
	if !r.isError {
		ev.Result = ptr(r.text)
	}
	return ev
}

func texts(dirs []directive) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, d.Text)
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
