// Package app is asb's core: the domain (sessions, runs, questions,
// origins, hosts, boxes, accounts), the run state machine, the per-session
// queue and scheduler, the event bus, and Service — the one set of handlers
// every surface (GitHub, MCP, dashboard, JSON routes) calls.
//
// app imports only the standard library. Everything slow or external is a
// port declared here (Store, Sandbox, Forge, Clock, Secrets) and
// implemented by an adapter package.
package app

import (
	"strconv"
	"time"
)

// SessionID identifies a session: "ses_" followed by lowercase base32.
type SessionID string

// RunID identifies a run: "run_" followed by lowercase base32.
type RunID string

// AccountID identifies an owner. OperatorAccount owns everything in
// single-operator mode.
type AccountID string

// OperatorAccount is the built-in owner of objects created with the
// operator token.
const OperatorAccount AccountID = "operator"

// OriginKind says which surface a run came from.
type OriginKind string

const (
	OriginGitHubComment OriginKind = "github_comment"
	OriginGitHubLabel   OriginKind = "github_label"
	OriginDashboard     OriginKind = "dashboard"
	OriginMCP           OriginKind = "mcp"
	OriginAPI           OriginKind = "api"
)

// Valid reports whether k is a known origin kind.
func (k OriginKind) Valid() bool {
	switch k {
	case OriginGitHubComment, OriginGitHubLabel, OriginDashboard, OriginMCP, OriginAPI:
		return true
	}
	return false
}

// Origin records where a run came from, with the coordinates needed to
// reply there.
type Origin struct {
	Kind OriginKind `json:"kind"`
	// Repo is "owner/name" for GitHub origins.
	Repo string `json:"repo,omitempty"`
	// Number is the pull request or issue number.
	Number int `json:"number,omitempty"`
	// PullRequest is true when Number is a pull request.
	PullRequest bool `json:"pull_request,omitempty"`
	// CommentID is the triggering comment, if any.
	CommentID int64 `json:"comment_id,omitempty"`
	// TrackingCommentID is the one comment asb edits in place for this run.
	TrackingCommentID int64 `json:"tracking_comment_id,omitempty"`
	// DeliveryID is the GitHub webhook delivery that carried the trigger.
	DeliveryID string `json:"delivery_id,omitempty"`
	// Login is the GitHub login (or local user name) that asked.
	Login string `json:"login,omitempty"`
	// URL links back to the trigger (comment, issue, PR).
	URL string `json:"url,omitempty"`
	// GitHubAccount is the stored GitHub login the caller chose to push
	// as (MCP delegate's githubAccount); see Service.GitHubPusher.
	GitHubAccount string `json:"github_account,omitempty"`
}

// ThreadKey names the conversation a session belongs to, so follow-ups on
// the same pull request or issue continue the same session. Empty for
// origins that start a fresh session every time (dashboard, MCP, API).
func (o Origin) ThreadKey() string {
	if (o.Kind == OriginGitHubComment || o.Kind == OriginGitHubLabel) && o.Repo != "" && o.Number > 0 {
		return "github:" + o.Repo + "#" + strconv.Itoa(o.Number)
	}
	return ""
}

// Source is one repository (or local tree) that is put into the box at
// /workspace/<Dir>.
type Source struct {
	// Repo is "owner/name".
	Repo string `json:"repo,omitempty"`
	// Ref is the branch, tag or commit to check out; empty means the default branch.
	Ref string `json:"ref,omitempty"`
	// Dir is the folder name under /workspace; defaults to the repo's name.
	Dir string `json:"dir"`
	// LocalPath is a tree on the controller shipped as-is (the MCP stdio
	// entry's working directory). Surfaces never take it from a network
	// request; it is stored so a restarted controller can still ship it.
	LocalPath string `json:"local_path,omitempty"`
	// Workspace is an uploaded working tree (Workspaces) that a network
	// caller may name instead of a path; Delegate claims it and fills
	// LocalPath, and it is deleted once the box holds it.
	Workspace string `json:"workspace,omitempty"`
}

// SessionState is the lifecycle of a session's box and conversation.
type SessionState string

const (
	// SessionActive sessions may have a box and accept follow-ups.
	SessionActive SessionState = "active"
	// SessionClosed sessions were torn down; their record and events stay.
	SessionClosed SessionState = "closed"
)

// BoxRef names a box on a host.
type BoxRef struct {
	Host string `json:"host"`
	Name string `json:"name"`
}

// IsZero reports whether no box is assigned.
func (b BoxRef) IsZero() bool { return b.Name == "" }

// Session is one box plus the agent conversation that lives in it.
type Session struct {
	ID    SessionID    `json:"id"`
	Owner AccountID    `json:"owner"`
	State SessionState `json:"state"`
	// Title is the first task's first line, for lists.
	Title   string   `json:"title"`
	Origin  Origin   `json:"origin"`
	Sources []Source `json:"sources,omitempty"`
	// ThreadKey is Origin.ThreadKey() at creation; at most one active
	// session exists per non-empty key.
	ThreadKey string `json:"thread_key,omitempty"`
	Box       BoxRef `json:"box"`
	// AgentSessionID is the agent's own conversation id (Claude Code's
	// session_id from the init event), used with --resume.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	// AskSessionID is the read-only co-pilot's thread in this box.
	AskSessionID string `json:"ask_session_id,omitempty"`
	// AllowDomains are extra egress domains for this session's box.
	AllowDomains []string  `json:"allow_domains,omitempty"`
	Pinned       bool      `json:"pinned"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	ClosedAt     time.Time `json:"closed_at,omitzero"`
}

// RunKind says why a run exists.
type RunKind string

const (
	RunTask     RunKind = "task"     // the first task of a session
	RunFollowUp RunKind = "followup" // a later instruction in the same conversation
)

// Usage is what the agent reported in its result event.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Turns        int     `json:"turns"`
}

// Run is one agent turn inside a session (the first task or a follow-up),
// including any question-and-answer pauses it goes through.
type Run struct {
	ID        RunID     `json:"id"`
	SessionID SessionID `json:"session_id"`
	// Seq orders runs within a session (1, 2, …): the session's FIFO.
	Seq    int64    `json:"seq"`
	Kind   RunKind  `json:"kind"`
	Prompt string   `json:"prompt"`
	State  RunState `json:"state"`
	Origin Origin   `json:"origin"`
	// Question is the pending question while State is waiting.
	Question string `json:"question,omitempty"`
	// Turn counts agent launches in this run (1 for the first, +1 per answer);
	// with the run id it makes each launch idempotent.
	Turn int `json:"turn"`
	// AgentOffset is how many bytes of the agent's event stream for the
	// current turn have been stored.
	AgentOffset int64 `json:"agent_offset"`
	// Publishing is set, persisted, before results are pushed, so a restart
	// knows a push may have happened and relies on the forge's idempotency.
	Publishing bool   `json:"publishing,omitempty"`
	Summary    string `json:"summary,omitempty"`
	Error      string `json:"error,omitempty"`
	ExitCode   int    `json:"exit_code"`
	Usage      Usage  `json:"usage"`
	// Result holds what publishing produced (commit shas, PR URL).
	Result     PublishResult `json:"result"`
	CreatedAt  time.Time     `json:"created_at"`
	UpdatedAt  time.Time     `json:"updated_at"`
	StartedAt  time.Time     `json:"started_at,omitzero"`
	FinishedAt time.Time     `json:"finished_at,omitzero"`
}

// Question is one question the agent asked during a run, with its answer.
type Question struct {
	ID         int64     `json:"id"`
	RunID      RunID     `json:"run_id"`
	Text       string    `json:"text"`
	AskedAt    time.Time `json:"asked_at"`
	Answer     string    `json:"answer,omitempty"`
	AnsweredBy string    `json:"answered_by,omitempty"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	// AnswerDelivery and AnswerComment name the GitHub delivery and comment
	// that carried the answer, so a surface that sees the same comment again
	// (a redelivery, the poller, a restart) does not use it twice.
	AnswerDelivery string `json:"answer_delivery,omitempty"`
	AnswerComment  int64  `json:"answer_comment,omitempty"`
}

// Host is a machine with msb, reached over SSH or locally.
type Host struct {
	// Name is the configured spec ("local" or "ssh://user@host:port").
	Name    string `json:"name"`
	Healthy bool   `json:"healthy"`
	// Draining hosts take no new boxes (SANDBOX_DRAIN).
	Draining bool      `json:"draining,omitempty"`
	Capacity int       `json:"capacity"`
	Boxes    int       `json:"boxes"`
	FreeMiB  int       `json:"free_mib"`
	Checked  time.Time `json:"checked,omitzero"`
	Problem  string    `json:"problem,omitempty"`
}

// BoxRole is what a box is for.
type BoxRole string

const (
	BoxSession     BoxRole = "session"
	BoxPoolFree    BoxRole = "pool-free"
	BoxPoolClaimed BoxRole = "pool-claimed"
)

// Box is a microVM as asb tracks it.
type Box struct {
	BoxRef
	Role      BoxRole   `json:"role"`
	SessionID SessionID `json:"session_id,omitempty"`
	Status    string    `json:"status"`
	Pinned    bool      `json:"pinned"`
	CPUPct    float64   `json:"cpu_pct"`
	MemMiB    int       `json:"mem_mib"`
	// Image is what the box booted from ("image:node" or "snapshot:base"),
	// and Egress its network policy key: a warm box is handed only to a
	// request that needs exactly this image and policy.
	Image     string    `json:"image,omitempty"`
	Egress    string    `json:"egress,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Account is someone who owns sessions (see accounts.go).
type Account struct {
	ID          AccountID `json:"id"`
	Username    string    `json:"username"`
	Email       string    `json:"email,omitempty"`
	GitHubLogin string    `json:"github_login,omitempty"`
	Admin       bool      `json:"admin"`
	// Plan is "" (free, or on trial while TrialEndsAt is ahead) or PlanPro.
	Plan        string    `json:"plan,omitempty"`
	TrialEndsAt time.Time `json:"trial_ends_at,omitzero"`
	Disabled    bool      `json:"disabled,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// PasswordHash is the PasswordHasher's encoding; never serialised.
	PasswordHash string `json:"-"`
}
