package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
)

// RepoInput is one repository of a multi-repo task.
type RepoInput struct {
	Repo string `json:"repo" jsonschema:"GitHub repository as owner/name"`
	Ref  string `json:"ref,omitempty" jsonschema:"branch, tag or commit to start from (default: the default branch)"`
}

// DelegateInput is the input of delegate.
type DelegateInput struct {
	Task         string      `json:"task,omitempty" jsonschema:"what the sandbox agent should do, in plain words; if missing it is asked back"`
	Repo         string      `json:"repo,omitempty" jsonschema:"GitHub repository as owner/name; optional (a task without a repo runs in an empty workspace)"`
	Repos        []RepoInput `json:"repos,omitempty" jsonschema:"several repositories for one task; each lands in /workspace/<name> in ONE box and gets its own PR"`
	Ref          string      `json:"ref,omitempty" jsonschema:"branch, tag or commit of repo to start from"`
	AllowDomains []string    `json:"allowDomains,omitempty" jsonschema:"extra internet domains the box may reach (egress is deny-by-default), e.g. api.example.com or *.example.com"`
	Source       string      `json:"source,omitempty" jsonschema:"local: work on the user's local working tree (uncommitted changes included), shipped by asb mcp when WORKSPACE_DIR is set; git: check repo/repos out from GitHub. Default: local when WORKSPACE_DIR is set and no repo is given, otherwise git"`
	Workspace    string      `json:"workspace,omitempty" jsonschema:"id of an uploaded working tree (ws_…); set by asb mcp when WORKSPACE_DIR is set; do not invent"`
	Account      string      `json:"githubAccount,omitempty" jsonschema:"the stored GitHub login to push as, when several can; provide when delegate asks"`
}

// SessionInput names a session.
type SessionInput struct {
	Session string `json:"session" jsonschema:"the session id (ses_…) returned by delegate"`
}

// ResumeInput is the input of resume.
type ResumeInput struct {
	Session string            `json:"session" jsonschema:"the session id (ses_…) returned by delegate"`
	Message string            `json:"message" jsonschema:"the answer to the sandbox agent's question, or a follow-up instruction"`
	Secrets map[string]string `json:"secrets,omitempty" jsonschema:"credentials the agent asked for, NAME → value; injected as env for THIS step only, never stored, gone on teardown"`
}

// WatchInput is the input of watch.
type WatchInput struct {
	Session string `json:"session" jsonschema:"the session id (ses_…) returned by delegate"`
	Lines   int    `json:"lines,omitempty" jsonschema:"how many of the latest events to show (default 40)"`
}

// AskInput is the input of ask.
type AskInput struct {
	Session   string `json:"session" jsonschema:"the session id (ses_…) returned by delegate"`
	Question  string `json:"question" jsonschema:"what you want to know about the run (the co-pilot reads the workspace, diff and log)"`
	NewThread bool   `json:"newThread,omitempty" jsonschema:"start a fresh co-pilot thread instead of continuing the last one"`
}

// EmptyInput is the input of tools without arguments.
type EmptyInput struct{}

// RunOutput is the structured result of delegate, resume and status.
type RunOutput struct {
	// State is done, waiting, running, queued, starting, failed,
	// cancelled, closed or idle; needs_input when input was asked back.
	State    string `json:"state"`
	Session  string `json:"session,omitempty"`
	Question string `json:"question,omitempty"`
	Summary  string `json:"summary,omitempty"`
	Error    string `json:"error,omitempty"`
	// Outcome is what resume did: answered or queued.
	Outcome string `json:"outcome,omitempty"`
}

// TeardownOutput is the result of teardown.
type TeardownOutput struct {
	Session string `json:"session"`
	State   string `json:"state"`
}

// FleetEntry is one session in monitor.
type FleetEntry struct {
	Session  string `json:"session"`
	State    string `json:"state"`
	Title    string `json:"title"`
	Repos    string `json:"repos,omitempty"`
	Question string `json:"question,omitempty"`
	Queued   int    `json:"queued,omitempty"`
}

// MonitorOutput is the result of monitor.
type MonitorOutput struct {
	Sessions []FleetEntry `json:"sessions"`
}

// WatchOutput is the result of watch.
type WatchOutput struct {
	Session string   `json:"session"`
	State   string   `json:"state"`
	Lines   []string `json:"lines"`
}

// AskOutput is the result of ask.
type AskOutput struct {
	Session  string `json:"session"`
	Answer   string `json:"answer"`
	TimedOut bool   `json:"timedOut,omitempty"`
}

// PoolOutput is the result of pool_status.
type PoolOutput struct {
	RunsByState map[string]int `json:"runsByState"`
	QueueDepth  int            `json:"queueDepth"`
	Workers     int            `json:"workers"`
	Sessions    int            `json:"sessions"`
}

const protocol = `
WHAT THE RESULT MEANS (the text starts with one of these):
- 'run:done' → the agent FINISHED; report its summary to the user.
- 'run:waiting — … QUESTION FROM THE SANDBOX: …' → the agent PAUSED to ask and is STILL running. You MUST NOT end your turn. Answer it from context if you can, otherwise ask the USER with your native question UI (e.g. AskQuestion), then call resume({session, message:<answer>}). resume blocks again, so keep answering→resuming until you get run:done.
- 'run:running — still working after Ns' → NOT done, NOT cancelled: call status({session}) right away and keep reconnecting until run:done.
NEVER say the delegation was cancelled or declined, and never say you'll "report back later": you are the one who must keep calling.`

const delegateDesc = `Delegate a coding task to an agent in an isolated sandbox (a microVM with the repo checked out).
INTERACTIVE — this call ships the repo, launches the in-box agent, and BLOCKS until the agent either FINISHES or PAUSES to ask a question (or the wait timeout passes).
Use repo for one GitHub repository (owner/name, optional ref), repos for several (each lands in /workspace/<name> in ONE box and gets its own PR), or neither for a task-only run. source "local" ("delegate THIS") ships the user's local working tree instead, uncommitted changes included: that needs the local entry (asb mcp) started with WORKSPACE_DIR, which then fills workspace; never invent a workspace id. Missing info is asked back, not failed: if the result asks you something, answer it and call delegate again.` + protocol

const statusDesc = `Reconnect to a delegated session and BLOCK until it FINISHES or PAUSES to ask (or the wait timeout passes).
Use it when a delegate or resume call was interrupted or returned run:running. A waiting session is never cancelled: answer its question with resume.` + protocol

const resumeDesc = `Resume a delegated session — primarily to ANSWER a question it asked (run:waiting); otherwise the message is queued as a follow-up instruction in the same conversation.
BLOCKING: returns at the next question or when the agent finishes (or the wait timeout passes). Use secrets for credentials the agent asked for: they are injected as env for THIS step only, never stored, gone on teardown.` + protocol

const teardownDesc = `Tear a session down: stop its agent and remove its box. Only do this when the user asks or the work is finished and no longer needed.`

const monitorDesc = `List your sessions: waiting ones (which need your answer) first, then running, then the rest, with their state, task and pending question.`

const watchDesc = `Show the latest events of a session (state changes, questions, answers, agent output). Richer than status and never blocks. Use watch for raw output and ask for interpretation.`

const askDesc = `Ask a read-only co-pilot about a session: it reads the workspace, the git diff and the agent's log and answers. It can only LOOK, never steer: the driving agent is not paused and never sees the question. Works while the agent is running and while it is parked on a question. To steer, use resume.`

const poolDesc = `Report the sandbox pool: runs by state, queue depth and active workers. Pool and host details come from the fleet (see monitor for sessions).`

func (s *server) register(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: "delegate", Description: delegateDesc}, s.delegate)
	sdk.AddTool(srv, &sdk.Tool{Name: "status", Description: statusDesc,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, s.status)
	sdk.AddTool(srv, &sdk.Tool{Name: "resume", Description: resumeDesc}, s.resume)
	sdk.AddTool(srv, &sdk.Tool{Name: "teardown", Description: teardownDesc,
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true)}}, s.teardown)
	sdk.AddTool(srv, &sdk.Tool{Name: "monitor", Description: monitorDesc,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, s.monitor)
	sdk.AddTool(srv, &sdk.Tool{Name: "watch", Description: watchDesc,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, s.watch)
	sdk.AddTool(srv, &sdk.Tool{Name: "ask", Description: askDesc,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, s.ask)
	sdk.AddTool(srv, &sdk.Tool{Name: "pool_status", Description: poolDesc,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, s.poolStatus)
	s.registerIdentity(srv)
}

func ptr[T any](v T) *T { return &v }

func (s *server) delegate(ctx context.Context, req *sdk.CallToolRequest, in DelegateInput) (*sdk.CallToolResult, RunOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, RunOutput{}, err
	}
	if strings.TrimSpace(in.Task) == "" {
		return textResult("Which task should the sandbox agent do? Ask the user if it is not clear from context, " +
				"then call delegate again with task (and repo as owner/name if the work is in a repository)."),
			RunOutput{State: "needs_input", Question: "Which task should the sandbox agent do?"}, nil
	}
	sources, err := workspaceSource(in)
	if err != nil {
		return nil, RunOutput{}, err
	}
	if in.Repo != "" {
		if _, _, err := app.ParseRepo(in.Repo); err != nil {
			return nil, RunOutput{}, toolError("repo", "%s", app.ErrorMessage(err))
		}
		sources = append(sources, app.Source{Repo: in.Repo, Ref: in.Ref})
	} else if in.Ref != "" {
		return nil, RunOutput{}, toolError("ref", "ref needs repo; for repos give each entry its own ref")
	}
	if in.Ref != "" {
		if err := app.CheckRef(in.Ref); err != nil {
			return nil, RunOutput{}, toolError("ref", "%s", app.ErrorMessage(err))
		}
	}
	for i, r := range in.Repos {
		if _, _, err := app.ParseRepo(r.Repo); err != nil {
			return nil, RunOutput{}, toolError(fmt.Sprintf("repos[%d].repo", i), "%s", app.ErrorMessage(err))
		}
		if r.Ref != "" {
			if err := app.CheckRef(r.Ref); err != nil {
				return nil, RunOutput{}, toolError(fmt.Sprintf("repos[%d].ref", i), "%s", app.ErrorMessage(err))
			}
		}
		sources = append(sources, app.Source{Repo: r.Repo, Ref: r.Ref})
	}
	for i, d := range in.AllowDomains {
		if err := app.CheckDomain(d); err != nil {
			return nil, RunOutput{}, toolError(fmt.Sprintf("allowDomains[%d]", i), "%s", app.ErrorMessage(err))
		}
	}
	if in.Account != "" && !app.ValidLogin(in.Account) {
		return nil, RunOutput{}, toolError("githubAccount", "must be a GitHub login (letters, digits, '-')")
	}
	d, err := s.svc.Delegate(ctx, app.DelegateRequest{
		Task:         in.Task,
		Sources:      sources,
		Origin:       app.Origin{Kind: app.OriginMCP, GitHubAccount: in.Account},
		AllowDomains: in.AllowDomains,
	})
	if err != nil {
		return nil, RunOutput{}, s.coreError("delegate", err)
	}
	head := fmt.Sprintf("Delegated. session=%s", d.Session.ID)
	if d.Position > 0 {
		head += fmt.Sprintf(" (queued behind %d run(s))", d.Position)
	}
	return s.block(ctx, req, d.Session.ID, head)
}

// workspaceSource checks source and workspace and returns the uploaded
// working tree as a source, if the call names one.
func workspaceSource(in DelegateInput) ([]app.Source, error) {
	switch in.Source {
	case "", "git", "local":
	default:
		return nil, toolError("source", "must be local or git")
	}
	if in.Workspace == "" {
		if in.Source == "local" {
			return nil, toolError("source", "local needs the local working tree, which only asb mcp started with WORKSPACE_DIR "+
				"can upload: tell the user to set WORKSPACE_DIR (their project's absolute path) in this MCP server's env, "+
				"or delegate with source git and repo owner/name")
		}
		return nil, nil
	}
	if err := app.CheckWorkspaceID(in.Workspace); err != nil {
		return nil, toolError("workspace", "%s", app.ErrorMessage(err))
	}
	switch {
	case in.Source == "git":
		return nil, toolError("workspace", "an uploaded working tree is a local source; drop workspace or use source local")
	case in.Repo != "" || len(in.Repos) > 0:
		return nil, toolError("repo", "the uploaded working tree is the repository of this task; leave repo and repos empty (or use source git without workspace)")
	case in.Ref != "":
		return nil, toolError("ref", "the working tree is shipped as it is, on its current branch; leave ref empty")
	}
	return []app.Source{{Workspace: in.Workspace}}, nil
}

func (s *server) status(ctx context.Context, req *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, RunOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, RunOutput{}, err
	}
	id, err := parseSession(in.Session)
	if err != nil {
		return nil, RunOutput{}, err
	}
	return s.block(ctx, req, id, "")
}

func (s *server) resume(ctx context.Context, req *sdk.CallToolRequest, in ResumeInput) (*sdk.CallToolResult, RunOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, RunOutput{}, err
	}
	id, err := parseSession(in.Session)
	if err != nil {
		return nil, RunOutput{}, err
	}
	names := make([]string, 0, len(in.Secrets))
	for k := range in.Secrets {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := app.CheckSecretName(k); err != nil {
			return nil, RunOutput{}, toolError("secrets", "%s", app.ErrorMessage(err))
		}
	}
	if strings.TrimSpace(in.Message) == "" {
		return textResult(fmt.Sprintf("What should I tell the sandbox agent in session=%s? Answer its question "+
				"(or ask the user), then call resume again with message.", id)),
			RunOutput{State: "needs_input", Session: string(id), Question: "What should I tell the sandbox agent?"}, nil
	}
	outcome, _, err := s.svc.Resume(ctx, id, in.Message, in.Secrets, app.Origin{Kind: app.OriginMCP})
	if err != nil {
		return nil, RunOutput{}, s.coreError("resume", err)
	}
	head := fmt.Sprintf("Resumed session=%s", id)
	if outcome == app.ResumedFollowUp {
		head = fmt.Sprintf("Queued a follow-up in session=%s", id)
	}
	res, out, err := s.block(ctx, req, id, head)
	out.Outcome = string(outcome)
	return res, out, err
}

// block waits for the session to reach a boundary or the wait timeout,
// sending progress notifications while it waits, and renders the outcome
// in the calling-agent protocol.
func (s *server) block(ctx context.Context, req *sdk.CallToolRequest, id app.SessionID, head string) (*sdk.CallToolResult, RunOutput, error) {
	start := time.Now()
	deadline := start.Add(s.wait)
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	var res app.WaitResult
	for {
		left := time.Until(deadline)
		slice := min(left, s.progress)
		if slice <= 0 {
			break
		}
		var err error
		res, err = s.svc.Wait(ctx, id, slice)
		if err != nil {
			return nil, RunOutput{}, s.coreError("wait", err)
		}
		if res.Reached {
			break
		}
		if token != nil && req.Session != nil {
			secs := time.Since(start).Seconds()
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      secs,
				Message:       fmt.Sprintf("still working… %ds (state %s)", int(secs), res.View.State()),
			})
		}
	}
	out, text := render(res, id, time.Since(start))
	if head != "" {
		text = head + "\n\n" + text
	}
	return textResult(text), out, nil
}

// render turns a wait result into the protocol text and structured output.
func render(res app.WaitResult, id app.SessionID, waited time.Duration) (RunOutput, string) {
	v := res.View
	out := RunOutput{State: v.State(), Session: string(id)}
	if v.Current != nil {
		out.Summary = v.Current.Summary
		out.Error = v.Current.Error
	}
	if !res.Reached {
		out.State = "running"
		return out, fmt.Sprintf("run:running — still working after %ds; NOT done, NOT cancelled. session=%s (state %s)\n"+
			"Call status({session:%q}) RIGHT AWAY and keep reconnecting until run:done. "+
			"Do NOT end your turn and never say you'll report back later.",
			int(waited.Round(time.Second).Seconds()), id, v.State(), string(id))
	}
	if v.Current != nil && v.Current.State == app.StateWaiting {
		out.State = "waiting"
		out.Question = v.Question
		return out, fmt.Sprintf("run:waiting — the sandbox agent PAUSED and is waiting for an answer (it is NOT cancelled/done). session=%s\n\n"+
			"QUESTION FROM THE SANDBOX:\n%s\n\n"+
			"WHAT YOU (the calling agent) MUST DO NOW — do NOT end your turn:\n"+
			"1. Ask the USER this exact question with your native question UI (e.g. AskQuestion), unless you can answer confidently from context.\n"+
			"2. Call resume({session:%q, message:\"<answer>\"}).\n"+
			"3. resume blocks until the next question or completion, so repeat until run:done.\n"+
			"Never report this run as cancelled, declined or \"I'll check back later\".",
			id, v.Question, string(id))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run:%s — session=%s", out.State, id)
	if v.Current != nil {
		r := v.Current
		// The run id names the run's results, such as the bundles
		// `asb mcp` downloads to bring commits back.
		fmt.Fprintf(&b, " run=%s", r.ID)
		if r.Result.Branch != "" {
			fmt.Fprintf(&b, " branch=%s", r.Result.Branch)
		}
		if r.Summary != "" {
			fmt.Fprintf(&b, "\n\n%s", r.Summary)
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "\n\nerror: %s", r.Error)
		}
		// A done run always ends with its result, even an empty one, so
		// the last result line is render's own and never a summary's
		// (the bridge reads the bundles from it).
		if pr, _ := json.Marshal(r.Result); r.State == app.StateDone || len(pr) > 2 && string(pr) != "{}" {
			fmt.Fprintf(&b, "\n\nresult: %s", pr)
		}
	}
	return out, b.String()
}

func (s *server) teardown(ctx context.Context, req *sdk.CallToolRequest, in SessionInput) (*sdk.CallToolResult, TeardownOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, TeardownOutput{}, err
	}
	id, err := parseSession(in.Session)
	if err != nil {
		return nil, TeardownOutput{}, err
	}
	sess, err := s.svc.Teardown(ctx, id)
	if err != nil {
		return nil, TeardownOutput{}, s.coreError("teardown", err)
	}
	return textResult(fmt.Sprintf("Torn down session=%s (box removed).", id)),
		TeardownOutput{Session: string(id), State: string(sess.State)}, nil
}

func (s *server) monitor(ctx context.Context, req *sdk.CallToolRequest, _ EmptyInput) (*sdk.CallToolResult, MonitorOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, MonitorOutput{}, err
	}
	views, err := s.svc.Fleet(ctx, app.FleetFilter{Limit: 100})
	if err != nil {
		return nil, MonitorOutput{}, s.coreError("monitor", err)
	}
	out := MonitorOutput{Sessions: []FleetEntry{}}
	var b strings.Builder
	if len(views) == 0 {
		b.WriteString("No active sessions.")
	}
	for _, v := range views {
		var repos []string
		for _, src := range v.Session.Sources {
			repos = append(repos, src.Repo)
		}
		e := FleetEntry{Session: string(v.Session.ID), State: v.State(), Title: v.Session.Title,
			Repos: strings.Join(repos, ","), Question: v.Question, Queued: v.Queued}
		out.Sessions = append(out.Sessions, e)
		fmt.Fprintf(&b, "%s  %-9s  %s", e.Session, e.State, e.Title)
		if e.Repos != "" {
			fmt.Fprintf(&b, "  [%s]", e.Repos)
		}
		if e.Queued > 0 {
			fmt.Fprintf(&b, "  +%d queued", e.Queued)
		}
		if e.Question != "" {
			fmt.Fprintf(&b, "\n    QUESTION: %s", oneLine(e.Question, 200))
		}
		b.WriteString("\n")
	}
	return textResult(strings.TrimRight(b.String(), "\n")), out, nil
}

func (s *server) watch(ctx context.Context, req *sdk.CallToolRequest, in WatchInput) (*sdk.CallToolResult, WatchOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, WatchOutput{}, err
	}
	id, err := parseSession(in.Session)
	if err != nil {
		return nil, WatchOutput{}, err
	}
	n := in.Lines
	if n < 0 {
		return nil, WatchOutput{}, toolError("lines", "must be a positive number of lines")
	}
	if n == 0 {
		n = 40
	}
	n = min(n, 1000)
	v, err := s.svc.Session(ctx, id)
	if err != nil {
		return nil, WatchOutput{}, s.coreError("watch", err)
	}
	var events []app.Event
	var after int64
	for {
		page, err := s.svc.Events(ctx, id, after, 500)
		if err != nil {
			return nil, WatchOutput{}, s.coreError("watch", err)
		}
		events = append(events, page...)
		if len(events) > n {
			events = events[len(events)-n:]
		}
		if len(page) < 500 {
			break
		}
		after = page[len(page)-1].ID
	}
	out := WatchOutput{Session: string(id), State: v.State(), Lines: []string{}}
	for _, e := range events {
		out.Lines = append(out.Lines, fmt.Sprintf("%s %s %s", e.At.UTC().Format("15:04:05"), e.Type, oneLine(string(e.Data), 300)))
	}
	text := fmt.Sprintf("session=%s state=%s\n%s", id, v.State(), strings.Join(out.Lines, "\n"))
	if v.Question != "" {
		text += "\n\nQUESTION FROM THE SANDBOX: " + v.Question
	}
	return textResult(text), out, nil
}

func (s *server) ask(ctx context.Context, req *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, AskOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, AskOutput{}, err
	}
	id, err := parseSession(in.Session)
	if err != nil {
		return nil, AskOutput{}, err
	}
	if strings.TrimSpace(in.Question) == "" {
		return textResult("What do you want to know about session=" + string(id) + "? Call ask again with question."),
			AskOutput{Session: string(id)}, nil
	}
	ans, err := s.svc.Ask(ctx, id, in.Question, in.NewThread)
	if err != nil {
		return nil, AskOutput{}, s.coreError("ask", err)
	}
	text := ans.Answer
	if ans.TimedOut {
		text += "\n\n(the co-pilot ran out of time; this answer may be partial)"
	}
	return textResult(text), AskOutput{Session: string(id), Answer: ans.Answer, TimedOut: ans.TimedOut}, nil
}

func (s *server) poolStatus(ctx context.Context, req *sdk.CallToolRequest, _ EmptyInput) (*sdk.CallToolResult, PoolOutput, error) {
	ctx, err := s.withActor(ctx, req)
	if err != nil {
		return nil, PoolOutput{}, err
	}
	st, err := s.svc.Stats(ctx)
	if err != nil {
		return nil, PoolOutput{}, s.coreError("pool_status", err)
	}
	views, err := s.svc.Fleet(ctx, app.FleetFilter{})
	if err != nil {
		return nil, PoolOutput{}, s.coreError("pool_status", err)
	}
	out := PoolOutput{RunsByState: map[string]int{}, QueueDepth: st.QueueDepth, Workers: st.Workers, Sessions: len(views)}
	var parts []string
	for _, state := range app.AllStates {
		if n := st.RunsByState[state]; n > 0 {
			out.RunsByState[string(state)] = n
			parts = append(parts, fmt.Sprintf("%s=%d", state, n))
		}
	}
	text := fmt.Sprintf("pool: %d active session(s) visible to you, %d worker(s) driving runs, queue depth %d", len(views), st.Workers, st.QueueDepth)
	if len(parts) > 0 {
		text += "; runs " + strings.Join(parts, " ")
	}
	text += ". Host and warm-pool details come from the fleet (see monitor and the dashboard)."
	return textResult(text), out, nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
