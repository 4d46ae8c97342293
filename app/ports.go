package app

import (
	"context"
	"io"
	"time"
)

// Store persists everything the core knows. Every state change happens in
// a transaction (Tx) that also appends the events describing it, so an
// event exists if and only if its change was committed.
//
// Contract:
//   - Tx runs fn in one serialisable transaction. If fn returns an error
//     nothing it did is kept and the error is returned unchanged. Store
//     implementations may run fn only once (no automatic retries).
//   - Reads outside Tx see only committed data.
//   - Methods return *Error with ENOTFOUND for a missing object and
//     ECONFLICT for a uniqueness violation; anything else is internal.
//   - Safe for concurrent use.
type Store interface {
	Tx(ctx context.Context, fn func(tx Tx) error) error
	// View runs fn with read access outside any write transaction.
	View(ctx context.Context, fn func(tx Tx) error) error
	Close() error
}

// Tx is the set of operations available inside a transaction. The
// transaction is bound to the context given to Store.Tx.
type Tx interface {
	GetSession(id SessionID) (Session, error)
	// ActiveSessionByThread returns the active session for a thread key, if any.
	ActiveSessionByThread(key string) (Session, bool, error)
	// InsertSession stores a new session; ECONFLICT when its thread already
	// has an active session or the id exists.
	InsertSession(s *Session) error
	UpdateSession(s *Session) error
	ListSessions(f SessionFilter) ([]Session, error)

	GetRun(id RunID) (Run, error)
	// ListRuns returns a session's runs ordered by Seq.
	ListRuns(session SessionID) ([]Run, error)
	// ListRunsByState returns runs in any of the states, oldest first.
	ListRunsByState(states ...RunState) ([]Run, error)
	// NextSeq returns the Seq the next run of the session gets.
	NextSeq(session SessionID) (int64, error)
	InsertRun(r *Run) error
	UpdateRun(r *Run) error
	// CountRunsByState returns how many runs are in each state.
	CountRunsByState() (map[RunState]int, error)

	InsertQuestion(q *Question) error
	UpdateQuestion(q *Question) error
	// PendingQuestion returns the latest unanswered question of a run.
	PendingQuestion(run RunID) (Question, bool, error)
	ListQuestions(run RunID) ([]Question, error)

	// AppendEvents stores events in order, assigning each a fresh,
	// increasing ID, and returns them.
	AppendEvents(events []Event) ([]Event, error)
	ListEvents(f EventFilter) ([]Event, error)

	// PutSecret stores a sealed value under a name; GetSecret returns it.
	PutSecret(name string, sealed []byte) error
	GetSecret(name string) ([]byte, bool, error)
	DeleteSecret(name string) error

	AppendAudit(a AuditEntry) error
	ListAudit(limit int) ([]AuditEntry, error)

	UpsertBox(b Box) error
	DeleteBox(ref BoxRef) error
	ListBoxes(host string) ([]Box, error)

	// PutGitHubAccount inserts or replaces (by ID) a stored GitHub account
	// with its sealed token; ECONFLICT when the owner already has another
	// account for the same login (compared case-insensitively).
	PutGitHubAccount(a GitHubAccount, sealedToken []byte) error
	// GetGitHubAccount returns an account and its sealed token; ENOTFOUND
	// when missing.
	GetGitHubAccount(id string) (GitHubAccount, []byte, error)
	// GitHubAccountByLogin finds an owner's account by login, case-insensitively.
	GitHubAccountByLogin(owner AccountID, login string) (GitHubAccount, []byte, bool, error)
	// ListGitHubAccounts lists an owner's accounts ("" for every owner) by login.
	ListGitHubAccounts(owner AccountID) ([]GitHubAccount, error)
	// DeleteGitHubAccount removes an account; ENOTFOUND when missing.
	DeleteGitHubAccount(id string) error

	// PutMCPServer inserts or replaces (by ID) an MCP server with its
	// sealed headers; ECONFLICT when the owner already has another server
	// of the same name (compared case-insensitively).
	PutMCPServer(m MCPServer, sealedHeaders []byte) error
	// GetMCPServer returns a server and its sealed headers; ENOTFOUND when missing.
	GetMCPServer(id string) (MCPServer, []byte, error)
	// ListMCPServers lists an owner's servers ("" for every owner) by name.
	ListMCPServers(owner AccountID) ([]MCPServer, error)
	// DeleteMCPServer removes a server; ENOTFOUND when missing.
	DeleteMCPServer(id string) error
	AccountStore
}

// SessionFilter selects sessions. Zero fields match everything.
type SessionFilter struct {
	Owner AccountID
	State SessionState
	// Limit caps the result (newest first); 0 means a default of 200.
	Limit int
}

// EventFilter selects events, always in ID order.
type EventFilter struct {
	SessionID SessionID
	RunID     RunID
	// AfterID returns only events with a greater ID.
	AfterID int64
	// Limit caps the result; 0 means a default of 1000.
	Limit int
}

// AuditEntry records a security-relevant action.
type AuditEntry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Target string    `json:"target,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// Sandbox runs agents in boxes on one or more hosts.
//
// Contract: every method is safe for concurrent use, honours ctx, and is
// idempotent as documented so that the core can repeat a step after a
// controller restart without duplicating work. Errors are *Error with
// caller-safe messages (no argv, no secrets).
type Sandbox interface {
	// EnsureBox returns a running box for the session with its sources in
	// /workspace, booting or claiming one if needed, or starting the
	// session's box again if it idle-stopped. Called again for the same
	// session it returns the same box.
	EnsureBox(ctx context.Context, spec BoxSpec) (BoxRef, error)
	// Launch starts one agent turn detached in the box and returns at once.
	// A second Launch for the same (RunID, Turn) does nothing.
	Launch(ctx context.Context, box BoxRef, turn Turn) error
	// Poll returns the agent output of a turn written after offset, and the
	// turn's state, in one round trip.
	Poll(ctx context.Context, box BoxRef, turn TurnRef, offset int64) (Progress, error)
	// Collect brings the agent's commits out of the box as git bundles on
	// the controller, one per source that has new commits.
	Collect(ctx context.Context, box BoxRef, sources []Source) ([]Bundle, error)
	// Kill stops a turn's agent process; the box stays. Killing a turn
	// that has ended is not an error.
	Kill(ctx context.Context, box BoxRef, turn TurnRef) error
	// Remove destroys the box. Removing a box that is gone is not an error.
	Remove(ctx context.Context, box BoxRef) error
	// Ask runs one read-only co-pilot turn in the box's ask lane and
	// returns its answer. It never pauses or touches the driver's turn.
	Ask(ctx context.Context, box BoxRef, req AskRequest) (AskAnswer, error)
	// ListFiles lists a folder under /workspace.
	ListFiles(ctx context.Context, box BoxRef, path string) ([]FileInfo, error)
	// ReadFile copies at most max bytes of a file under /workspace to w.
	ReadFile(ctx context.Context, box BoxRef, path string, max int64, w io.Writer) error
	// OpenBundle opens a bundle Collect wrote, by its base name (a
	// BundleInfo.Name), and returns its size. It opens nothing outside the
	// bundle folder; an unknown name is ENOTFOUND, a malformed one EINVALID.
	OpenBundle(name string) (io.ReadCloser, int64, error)
}

// AskRequest is one question to the co-pilot.
type AskRequest struct {
	Question string
	// ResumeAskSession continues the co-pilot's thread; empty starts one.
	ResumeAskSession string
	Timeout          time.Duration
}

// AskAnswer is the co-pilot's reply.
type AskAnswer struct {
	Answer string `json:"answer"`
	// AgentSessionID is the co-pilot thread, for follow-up asks.
	AgentSessionID string `json:"-"`
	TimedOut       bool   `json:"timed_out,omitempty"`
}

// FileInfo describes one entry of a listed folder.
type FileInfo struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Dir     bool      `json:"dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time,omitzero"`
}

// BoxSpec describes the box a session needs.
type BoxSpec struct {
	Session      SessionID
	Owner        AccountID
	Sources      []Source
	AllowDomains []string
}

// TurnRef identifies one agent launch.
type TurnRef struct {
	RunID RunID
	Turn  int
}

// Turn is one agent launch.
type Turn struct {
	TurnRef
	Prompt string
	// ResumeAgentSession continues the agent's conversation (--resume).
	ResumeAgentSession string
	// Workdir is the agent's working directory inside the box.
	Workdir string
	// Secrets are injected into this turn's environment only; never stored.
	Secrets map[string]string
	// MCPServers are the session owner's MCP servers, headers opened; like
	// Secrets they are for this launch only and never logged.
	MCPServers []BoxMCPServer
}

// Progress is what one poll of a turn found.
type Progress struct {
	// Records are complete lines of the agent's event stream, in order.
	Records [][]byte
	// Offset is the stream offset just after the last complete record.
	Offset int64
	// AgentSessionID is the agent's conversation id, once known.
	AgentSessionID string
	// Exited is true when the agent process has ended.
	Exited   bool
	ExitCode int
	// Question is the pending question file's content, if any.
	Question string
	// Result is the agent's final result record. It is reported only by
	// the poll whose Records contain it, so it is never counted twice.
	Result *AgentResult
}

// AgentResult is the summary the agent reports when a turn ends.
type AgentResult struct {
	Summary string
	IsError bool
	Usage   Usage
}

// Bundle is a git bundle of new commits for one source.
type Bundle struct {
	Source Source
	// Path is the bundle file on the controller.
	Path    string
	Commits []string
}

// Forge publishes results where the run came from (GitHub).
type Forge interface {
	// Publish pushes the bundles and opens or updates what the origin
	// needs (a PR branch push, a draft PR). It must be idempotent: called
	// again after a restart it pushes nothing twice and opens no second PR.
	Publish(ctx context.Context, req PublishRequest) (PublishResult, error)
}

// PublishRequest carries a finished run's output.
type PublishRequest struct {
	Session Session
	Run     Run
	Bundles []Bundle
}

// PublishResult says what publishing did.
type PublishResult struct {
	Branch         string   `json:"branch,omitempty"`
	Commits        []string `json:"commits,omitempty"`
	PullRequestURL string   `json:"pull_request_url,omitempty"`
	FilesChanged   int      `json:"files_changed,omitempty"`
	// PushedAs is the GitHub login whose token pushed, or "app" for the
	// GitHub App installation.
	PushedAs string `json:"pushed_as,omitempty"`
	// Bundles are the commits made on uploaded working trees, which name
	// no repository to push to: the caller that uploaded the tree
	// downloads them (GET /bundle) and brings them back itself.
	Bundles []BundleInfo `json:"bundles,omitempty"`
}

// BundleInfo names a collected bundle without its controller path.
type BundleInfo struct {
	// Dir is the source's folder under /workspace.
	Dir     string   `json:"dir"`
	Commits []string `json:"commits"`
	// Name is the bundle file's base name, for Sandbox.OpenBundle.
	Name string `json:"name"`
}

// Clock is the core's only source of time.
type Clock interface {
	Now() time.Time
	// After behaves like time.After.
	After(d time.Duration) <-chan time.Time
}

// Secrets seals and opens values at rest. The label binds a sealed value
// to its purpose so a value cannot be moved to another row.
type Secrets interface {
	Seal(plaintext []byte, label string) ([]byte, error)
	Open(sealed []byte, label string) ([]byte, error)
}

// SystemClock is the real clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time                         { return time.Now().UTC() }
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
