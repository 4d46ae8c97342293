package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/sandbox/inbox"
)

// gitRun runs git in dir with a fixed identity and no user configuration.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@example.com",
		"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestMCPStdioShipsTheLocalWorkingTree is the IDE handoff of a local
// checkout: `asb mcp` runs as a subprocess with WORKSPACE_DIR set to a git
// repository holding a committed file, an uncommitted change, an
// untracked file and an ignored file; an SDK client delegates over stdio;
// the controller (asb serve with the fake msb and the scripted agent)
// puts the tree in the box, where the agent sees the uncommitted change,
// the untracked file and the history, and not the ignored file. The
// commit the agent makes there comes back as the local branch
// asb/<session>, on top of the local HEAD, while the checked-out branch
// and the working tree stay as they were.
func TestMCPStdioShipsTheLocalWorkingTree(t *testing.T) {
	fake := agentHost(t)
	data := filepath.Join(t.TempDir(), "data")
	env, _, logs := testEnv(t, data,
		"SANDBOX_HOSTS=local", "MSB_PATH="+fake.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M", "POOL_SIZE=0",
		"AGENT_COMMAND="+inbox.ToolDir+"/bin/claude", "MCP_HTTP_TOKEN="+e2eToken)
	env.hookBinary = buildHook(t)
	addr, stop := startServe(t, env)
	defer stop()

	repo := t.TempDir()
	gitRun(t, repo, "init", "-q", "-b", "topic")
	writeTestFile(t, filepath.Join(repo, "hello.txt"), "COMMITTED-LINE-1\n")
	writeTestFile(t, filepath.Join(repo, ".gitignore"), "*.env\n")
	gitRun(t, repo, "add", ".")
	gitRun(t, repo, "commit", "-q", "-m", "FIRST-COMMIT-SUBJECT")
	writeTestFile(t, filepath.Join(repo, "hello.txt"), "COMMITTED-LINE-1\nUNCOMMITTED-EDIT-42\n")
	writeTestFile(t, filepath.Join(repo, "notes/todo.txt"), "UNTRACKED-NOTE-7\n")
	writeTestFile(t, filepath.Join(repo, "local.env"), "IGNORED-SECRET-9\n")
	localHead := gitRun(t, repo, "rev-parse", "HEAD")
	localStatus := gitRun(t, repo, "status", "--porcelain", "--untracked-files=all", "--ignored")

	cmd := exec.Command(asbBinary(t), "mcp")
	cmd.Env = []string{"ASB_URL=http://" + addr, "MCP_HTTP_TOKEN=" + e2eToken, "ASB_DATA_DIR=" + data,
		"WORKSPACE_DIR=" + repo, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.Dir = t.TempDir()
	var mu sync.Mutex
	var progress []string
	client := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "ide", Version: "1"}, &sdkmcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdkmcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &sdkmcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	const w = "/workspace/work"
	task := strings.Join([]string{
		"Look at my local changes.",
		"#!asb-script",
		"run cat " + w + "/hello.txt " + w + "/notes/todo.txt " + w + "/local.env; ls -a " + w,
		"run git -C " + w + " log --format=%s; git -C " + w + " branch --show-current",
		"write " + w + "/agent.txt from the box\\n",
		"run cd " + w + " && git add agent.txt && git commit -q -m agent-change && git log --oneline | wc -l",
		"say finished",
	}, "\n")
	// No repo and no source: with WORKSPACE_DIR this is "delegate this".
	res, err := session.CallTool(ctx, &sdkmcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"task": task},
		Meta: sdkmcp.Meta{"progressToken": "p1"}})
	if err != nil || res.IsError {
		t.Fatalf("delegate: %v %+v\n%s", err, res, logs)
	}
	text := res.Content[0].(*sdkmcp.TextContent).Text
	sid := ""
	if _, rest, ok := strings.Cut(text, "session="); ok {
		sid = strings.Fields(rest)[0]
	}
	for strings.Contains(text, "run:running") {
		res, err = session.CallTool(ctx, &sdkmcp.CallToolParams{Name: "status", Arguments: map[string]any{"session": sid}})
		if err != nil || res.IsError {
			t.Fatalf("status: %v %+v", err, res)
		}
		text = res.Content[0].(*sdkmcp.TextContent).Text
	}
	if !strings.Contains(text, "run:done") {
		t.Fatalf("the run did not finish: %s\n%s", text, logs)
	}
	mu.Lock()
	got := strings.Join(progress, "\n")
	mu.Unlock()
	if !strings.Contains(got, "uploading workspace (") || !strings.Contains(got, " files, ") {
		t.Fatalf("no upload progress; progress was:\n%s", got)
	}

	// What the agent saw in the box.
	c := &e2eClient{t: t, base: "http://" + addr}
	var view json.RawMessage
	if code := c.do("GET", "/watch.json?session="+sid+"&events=1000", nil, &view); code != 200 {
		t.Fatalf("watch.json: %d", code)
	}
	events := string(view)
	for _, want := range []string{"COMMITTED-LINE-1", "UNCOMMITTED-EDIT-42", "UNTRACKED-NOTE-7", "FIRST-COMMIT-SUBJECT", "topic"} {
		if !strings.Contains(events, want) {
			t.Errorf("the box did not show %s:\n%s", want, events)
		}
	}
	if strings.Contains(events, "IGNORED-SECRET-9") {
		t.Errorf("the ignored file reached the box:\n%s", events)
	}
	if !strings.Contains(events, "local.env: No such file") {
		t.Errorf("cat of the ignored file did not fail:\n%s", events)
	}
	// The upload is gone from the controller once the box has it.
	if left, _ := os.ReadDir(filepath.Join(data, "workspaces")); len(left) != 0 {
		t.Errorf("uploaded workspaces left on the controller: %v", left)
	}
	// The user's checkout is untouched.
	if b, _ := os.ReadFile(filepath.Join(repo, "local.env")); string(b) != "IGNORED-SECRET-9\n" {
		t.Errorf("local.env changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(repo, "agent.txt")); err == nil {
		t.Error("the agent's file appeared in the local checkout")
	}

	// The agent's commit is back, on a branch of its own.
	branch := "asb/" + sid
	if !strings.Contains(text, "The agent's 1 commit(s) are on your local branch "+branch) {
		t.Errorf("the result does not say the commits came back:\n%s", text)
	}
	if got := gitRun(t, repo, "rev-parse", branch+"^"); got != localHead {
		t.Errorf("%s's parent is %s, want the local HEAD %s", branch, got, localHead)
	}
	if got := gitRun(t, repo, "show", branch+":agent.txt"); got != "from the box" {
		t.Errorf("agent.txt on %s: %q", branch, got)
	}
	if got := gitRun(t, repo, "log", "-1", "--format=%s", branch); got != "agent-change" {
		t.Errorf("tip of %s: %q", branch, got)
	}
	if got := gitRun(t, repo, "branch", "--show-current"); got != "topic" {
		t.Errorf("the checked-out branch is now %q", got)
	}
	if got := gitRun(t, repo, "rev-parse", "HEAD"); got != localHead {
		t.Errorf("HEAD moved from %s to %s", localHead, got)
	}
	if got := gitRun(t, repo, "status", "--porcelain", "--untracked-files=all", "--ignored"); got != localStatus {
		t.Errorf("the working tree changed:\nbefore:\n%s\nafter:\n%s", localStatus, got)
	}
	// A repeated status of the finished run says the same and fetches
	// nothing twice.
	res, err = session.CallTool(ctx, &sdkmcp.CallToolParams{Name: "status", Arguments: map[string]any{"session": sid}})
	if err != nil || res.IsError {
		t.Fatalf("status: %v %+v", err, res)
	}
	if again := res.Content[0].(*sdkmcp.TextContent).Text; !strings.Contains(again, "on your local branch "+branch) {
		t.Errorf("status after done does not name the branch:\n%s", again)
	}
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMCPStdioRefusesAFolderWithoutGit checks that a WORKSPACE_DIR that is
// not a git checkout is reported at start and refuses "delegate this" with
// a message saying why, and that nothing is uploaded or started.
func TestMCPStdioRefusesAFolderWithoutGit(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env, _, _ := testEnv(t, data, "MCP_HTTP_TOKEN="+e2eToken, "WAIT_TIMEOUT_MS=1000")
	addr, stop := startServe(t, env)
	defer stop()
	plain := t.TempDir()
	writeTestFile(t, filepath.Join(plain, ".ssh", "id_ed25519"), "PRIVATE-KEY")

	cmd := exec.Command(asbBinary(t), "mcp")
	cmd.Env = []string{"ASB_URL=http://" + addr, "MCP_HTTP_TOKEN=" + e2eToken, "ASB_DATA_DIR=" + data,
		"WORKSPACE_DIR=" + plain, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := sdkmcp.NewClient(&sdkmcp.Implementation{Name: "ide", Version: "1"}, nil).
		Connect(ctx, &sdkmcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &sdkmcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"task": "look at this"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdkmcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "not inside a git repository") || !strings.Contains(text, "git init") {
		t.Fatalf("delegate in a folder without git: %v %s", res.IsError, text)
	}
	if !strings.Contains(stderr.String(), "warning: WORKSPACE_DIR") {
		t.Fatalf("no start-up warning on stderr: %q", stderr.String())
	}
	c := &e2eClient{t: t, base: "http://" + addr}
	var fleet struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if code := c.do("GET", "/fleet.json", nil, &fleet); code != 200 || len(fleet.Sessions) != 0 {
		t.Fatalf("fleet: %d, %d sessions", code, len(fleet.Sessions))
	}
	if left, _ := os.ReadDir(filepath.Join(data, "workspaces")); len(left) != 0 {
		t.Fatalf("something was uploaded: %v", left)
	}
}
