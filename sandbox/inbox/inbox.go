// Package inbox names the in-box protocol between the controller, the
// agent, the scripted test agent and the asb-hook binary: where things
// live inside a box and what the files mean. Everything here is a fixed
// path inside the guest; nothing is configurable, so every party agrees.
package inbox

const (
	// Workspace holds the repositories (Workspace/<name>) and asb's state
	// files (Workspace/.agent.*).
	Workspace = "/workspace"

	// StatePrefix starts every asb state path in the workspace. The agent
	// may write only QuestionFile among them.
	StatePrefix = "/workspace/.agent."

	// QuestionFile is the agent's only way to reach its caller: it writes
	// the question here and ends its turn. While the file exists, the gate
	// hook denies every tool call (except in the ask lane).
	QuestionFile = "/workspace/.agent.question"

	// TaskFile holds the current turn's instruction, for the agent and the
	// co-pilot to read.
	TaskFile = "/workspace/.agent.task"

	// RunsDir holds one folder per agent turn, named "<run id>-<turn>":
	//
	//	prompt         the turn's prompt (written by the launcher)
	//	events.ndjson  the agent's stdout: Claude Code stream-json, one event a line
	//	stderr.log     the agent's stderr
	//	pid            the agent wrapper's pid, written when it starts
	//	exit           the agent's exit code, written (atomically) when it ends
	//	MCPConfigName  the owner's MCP servers, headers included, while the agent runs
	RunsDir = "/workspace/.agent.runs"

	// MCPConfigName is the file in a turn's folder that Claude Code's
	// --mcp-config reads. It holds credentials: the guard treats it as secret.
	MCPConfigName = "asb-mcp-servers.json"

	// AskDir is the read-only co-pilot's working directory.
	AskDir = "/ask"

	// Home is the agent's home folder (boxes run as root).
	Home = "/root"
	// ClaudeDir holds Claude Code's settings; ClaudeSettings registers the
	// hooks. Both are control plane: the guard hook denies edits to them.
	ClaudeDir      = "/root/.claude"
	ClaudeSettings = "/root/.claude/settings.json"

	// ToolDir holds what asb installs into a box (the hook binary).
	ToolDir    = "/opt/asb"
	HookBinary = "/opt/asb/bin/asb-hook"

	// AskLaneEnv is set to "1" in the co-pilot's environment; the gate
	// hook skips that lane and the ro hook applies to it.
	AskLaneEnv = "ASK_LANE"
)
