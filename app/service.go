package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config tunes the Service.
type Config struct {
	Limits Limits
	// PollInterval is how often a running turn's output is read.
	PollInterval time.Duration
	// WaitTimeout bounds a blocking Wait when the caller gives none.
	WaitTimeout time.Duration
	// MaxActiveRuns caps runs that are starting or running at once across
	// all sessions (waiting runs hold a box but no agent process).
	MaxActiveRuns int
	// AskTimeout bounds one co-pilot answer.
	AskTimeout time.Duration
	// Accounts is the multi-user policy (sign-up, trials, quotas).
	Accounts AccountPolicy
}

func (c Config) withDefaults() Config {
	if c.Limits == (Limits{}) {
		c.Limits = DefaultLimits
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 50 * time.Second
	}
	if c.MaxActiveRuns <= 0 {
		c.MaxActiveRuns = 16
	}
	if c.AskTimeout <= 0 {
		c.AskTimeout = 45 * time.Second
	}
	return c
}

// Deps are the ports the Service works through.
type Deps struct {
	Store   Store
	Sandbox Sandbox
	// Forge may be nil when no forge is configured; runs then finish
	// without publishing and say so.
	Forge  Forge
	Clock  Clock
	Bus    *Bus
	Logger *slog.Logger
	// Workspaces may be nil; uploaded working trees are then refused.
	Workspaces Workspaces
	// Secrets and GitHub, when both set, let owners store personal GitHub
	// tokens (see identity.go).
	Secrets Secrets
	GitHub  GitHubProber
	// Passwords, when set, enables accounts with passwords (accounts.go).
	Passwords PasswordHasher
}

// Service is the one set of handlers every surface calls. All methods are
// safe for concurrent use. Methods that act for a caller read the Actor
// from the context and return ENOTFOUND for objects the actor may not see.
type Service struct {
	store   Store
	sandbox Sandbox
	forge   Forge
	clock   Clock
	bus     *Bus
	log     *slog.Logger
	cfg     Config
	// workspaces may be nil (no uploads accepted).
	workspaces Workspaces
	sealer     Secrets
	github     GitHubProber
	passwords  PasswordHasher
	throttle   *signInThrottle
	dummyOnce  sync.Once
	dummy      string

	wake chan struct{}

	mu      sync.Mutex
	workers map[RunID]context.CancelFunc
	// secrets holds one-step secrets between an answer and the launch that
	// consumes them; they are never persisted.
	secrets map[TurnRef]map[string]string
	running bool
	wg      sync.WaitGroup
	// rootCtx is the scheduler's context while Run is active.
	rootCtx atomic.Pointer[context.Context]
}

// NewService builds a Service. Call Run to start scheduling.
func NewService(d Deps, cfg Config) *Service {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.Bus == nil {
		d.Bus = NewBus(0)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{
		store:      d.Store,
		sandbox:    d.Sandbox,
		forge:      d.Forge,
		clock:      d.Clock,
		bus:        d.Bus,
		log:        d.Logger,
		cfg:        cfg.withDefaults(),
		workspaces: d.Workspaces,
		sealer:     d.Secrets,
		github:     d.GitHub,
		passwords:  d.Passwords,
		throttle:   newSignInThrottle(),
		wake:       make(chan struct{}, 1),
		workers:    make(map[RunID]context.CancelFunc),
		secrets:    make(map[TurnRef]map[string]string),
	}
}

// Bus returns the event bus the Service publishes on.
func (s *Service) Bus() *Bus { return s.bus }

// Limits returns the input limits in force.
func (s *Service) Limits() Limits { return s.cfg.Limits }

func (s *Service) actor(ctx context.Context) (Actor, error) {
	a, ok := ActorFrom(ctx)
	if !ok {
		return Actor{}, Errorf(EUNAUTHORIZED, "no caller identity")
	}
	return a, nil
}

// visibleSession loads a session the actor may see; others are "not found"
// so that their existence does not leak.
func (s *Service) visibleSession(tx Tx, a Actor, id SessionID) (Session, error) {
	sess, err := tx.GetSession(id)
	if err != nil {
		return Session{}, err
	}
	if !a.sees(sess.Owner) {
		return Session{}, Errorf(ENOTFOUND, "session %s not found", id)
	}
	return sess, nil
}

// commit runs fn in a transaction and publishes the events it appended
// once the transaction has committed.
func (s *Service) commit(ctx context.Context, fn func(tx Tx, emit func(Event)) error) error {
	var pending []Event
	err := s.store.Tx(ctx, func(tx Tx) error {
		pending = pending[:0]
		var evs []Event
		if err := fn(tx, func(e Event) { evs = append(evs, e) }); err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		stored, err := tx.AppendEvents(evs)
		if err != nil {
			return err
		}
		pending = stored
		return nil
	})
	if err != nil {
		return err
	}
	s.bus.Publish(pending...)
	return nil
}

func (s *Service) event(sess SessionID, run RunID, typ EventType, data any) Event {
	e := Event{SessionID: sess, RunID: run, Type: typ, At: s.clock.Now()}
	if data != nil {
		e.Data = mustJSON(data)
	}
	return e
}

func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// DelegateRequest asks for a new task.
type DelegateRequest struct {
	Task    string
	Sources []Source
	Origin  Origin
	// AllowDomains are extra egress domains for the box.
	AllowDomains []string
	// NewSession closes the thread's active session (if any) and starts a
	// fresh one instead of continuing it.
	NewSession bool
}

// Delegation is the outcome of Delegate or FollowUp.
type Delegation struct {
	Session Session `json:"session"`
	Run     Run     `json:"run"`
	// Position is how many runs are ahead of this one in its session.
	Position int `json:"position"`
	// Continued is true when the task joined an existing session.
	Continued bool `json:"continued"`
}

func (s *Service) checkDelegate(req *DelegateRequest) error {
	l := s.cfg.Limits
	if err := CheckText("task", req.Task, l.MaxTaskBytes); err != nil {
		return err
	}
	if req.Origin.Kind == "" {
		req.Origin.Kind = OriginAPI
	}
	if !req.Origin.Kind.Valid() {
		return Errorf(EINVALID, "unknown origin %q", clip(string(req.Origin.Kind), 40))
	}
	if req.Origin.Repo != "" {
		if _, _, err := ParseRepo(req.Origin.Repo); err != nil {
			return err
		}
	}
	if a := req.Origin.GitHubAccount; a != "" && !ValidLogin(a) {
		return Errorf(EINVALID, "githubAccount %q is not a GitHub login", clip(a, 40))
	}
	if len(req.Sources) > l.MaxSources {
		return Errorf(EINVALID, "at most %d repositories per task", l.MaxSources)
	}
	seen := map[string]bool{}
	for i := range req.Sources {
		src := &req.Sources[i]
		if src.Repo != "" {
			_, name, err := ParseRepo(src.Repo)
			if err != nil {
				return err
			}
			if src.Dir == "" {
				src.Dir = name
			}
		}
		if src.Workspace != "" {
			if err := CheckWorkspaceID(src.Workspace); err != nil {
				return err
			}
			if src.Repo != "" || src.LocalPath != "" || src.Ref != "" {
				return Errorf(EINVALID, "a source is either a repository or an uploaded workspace, not both")
			}
		}
		if src.Repo == "" && src.LocalPath == "" && src.Workspace == "" {
			return Errorf(EINVALID, "a source needs a repository")
		}
		if src.Ref != "" {
			if err := CheckRef(src.Ref); err != nil {
				return err
			}
		}
		if src.Dir == "" {
			src.Dir = "work"
		}
		if err := CheckDirName(src.Dir); err != nil {
			return err
		}
		if seen[src.Dir] {
			return Errorf(EINVALID, "two sources want /workspace/%s", src.Dir)
		}
		seen[src.Dir] = true
	}
	if len(req.AllowDomains) > l.MaxAllowDomains {
		return Errorf(EINVALID, "at most %d extra domains", l.MaxAllowDomains)
	}
	for _, d := range req.AllowDomains {
		if err := CheckDomain(d); err != nil {
			return err
		}
	}
	return nil
}

// Delegate starts a task. A task from a thread (a pull request or issue)
// that already has an active session is queued there as a follow-up,
// unless NewSession asks for a fresh session.
func (s *Service) Delegate(ctx context.Context, req DelegateRequest) (Delegation, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Delegation{}, err
	}
	if err := s.checkDelegate(&req); err != nil {
		return Delegation{}, err
	}
	// Copied so the caller's slice never sees the controller's paths.
	req.Sources = append([]Source(nil), req.Sources...)
	release, err := s.takeWorkspaces(ctx, a.Account, req.Sources)
	if err != nil {
		return Delegation{}, err
	}
	now := s.clock.Now()
	var out Delegation
	var closed []Session
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		out, closed = Delegation{}, nil
		key := req.Origin.ThreadKey()
		if key != "" {
			cur, ok, err := tx.ActiveSessionByThread(key)
			if err != nil {
				return err
			}
			if ok && !a.sees(cur.Owner) {
				// Someone else's session holds this thread: neither join nor replace it.
				return Errorf(ECONFLICT, "another person's session is active on this thread; it must be torn down (by them or an admin) before you start one here")
			}
			if ok && !req.NewSession {
				if err := s.gate(tx, a, false, now); err != nil {
					return err
				}
				d, err := s.enqueue(tx, emit, cur, RunFollowUp, req.Task, req.Origin, now)
				d.Continued = true
				out = d
				return err
			}
			if ok {
				if err := s.closeSession(tx, emit, &cur, a, "replaced by a new session", now); err != nil {
					return err
				}
				closed = append(closed, cur)
			}
		}
		if err := s.gate(tx, a, true, now); err != nil {
			return err
		}
		sess := Session{
			ID:           NewSessionID(),
			Owner:        a.Account,
			State:        SessionActive,
			Title:        firstLine(req.Task, 120),
			Origin:       req.Origin,
			Sources:      req.Sources,
			ThreadKey:    key,
			AllowDomains: req.AllowDomains,
			CreatedAt:    now,
			UpdatedAt:    now,
		}
		if err := tx.InsertSession(&sess); err != nil {
			return err
		}
		emit(s.event(sess.ID, "", EventSessionCreated, SessionData{Title: sess.Title, State: sess.State}))
		d, err := s.enqueue(tx, emit, sess, RunTask, req.Task, req.Origin, now)
		out = d
		return err
	})
	if err != nil || out.Continued {
		// A workspace is only kept for the new session that ships it.
		release()
	}
	if err != nil {
		return Delegation{}, err
	}
	s.removeBoxes(ctx, closed)
	s.kick()
	return out, nil
}

// enqueue adds a run at the tail of a session's FIFO.
func (s *Service) enqueue(tx Tx, emit func(Event), sess Session, kind RunKind, prompt string, origin Origin, now time.Time) (Delegation, error) {
	if sess.State != SessionActive {
		return Delegation{}, Errorf(ECONFLICT, "session %s is closed; start a new one", sess.ID)
	}
	seq, err := tx.NextSeq(sess.ID)
	if err != nil {
		return Delegation{}, err
	}
	run := Run{
		ID: NewRunID(), SessionID: sess.ID, Seq: seq, Kind: kind, Prompt: prompt,
		State: StateQueued, Origin: origin, CreatedAt: now, UpdatedAt: now,
	}
	if err := tx.InsertRun(&run); err != nil {
		return Delegation{}, err
	}
	runs, err := tx.ListRuns(sess.ID)
	if err != nil {
		return Delegation{}, err
	}
	pos := position(runs, run)
	emit(s.event(sess.ID, run.ID, EventRunQueued, QueuedData{Seq: seq, Kind: kind, Position: pos, Prompt: clip(prompt, 2000)}))
	return Delegation{Session: sess, Run: run, Position: pos}, nil
}

// position counts the runs ahead of r in its session's FIFO.
func position(runs []Run, r Run) int {
	n := 0
	for _, o := range runs {
		if o.Seq < r.Seq && (o.State == StateQueued || o.State.Active()) {
			n++
		}
	}
	return n
}

// FollowUp queues another instruction in an active session's conversation,
// behind any run that is still going.
func (s *Service) FollowUp(ctx context.Context, id SessionID, message string, origin Origin) (Delegation, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Delegation{}, err
	}
	if err := CheckText("message", message, s.cfg.Limits.MaxTaskBytes); err != nil {
		return Delegation{}, err
	}
	if origin.Kind == "" {
		origin.Kind = OriginAPI
	}
	var out Delegation
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		sess, err := s.visibleSession(tx, a, id)
		if err != nil {
			return err
		}
		if err := s.gate(tx, a, false, s.clock.Now()); err != nil {
			return err
		}
		out, err = s.enqueue(tx, emit, sess, RunFollowUp, message, origin, s.clock.Now())
		out.Continued = true
		return err
	})
	if err != nil {
		return Delegation{}, err
	}
	s.kick()
	return out, nil
}

// Answer answers the question a waiting run asked and resumes the same
// agent conversation. secrets reach that one step's environment only.
func (s *Service) Answer(ctx context.Context, id SessionID, answer string, secrets map[string]string) (Run, error) {
	return s.AnswerFrom(ctx, id, answer, secrets, Origin{})
}

// AnswerFrom is Answer with the origin of the answer recorded on the
// question (see AnsweredWith).
func (s *Service) AnswerFrom(ctx context.Context, id SessionID, answer string, secrets map[string]string, origin Origin) (Run, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Run{}, err
	}
	if err := CheckText("answer", answer, s.cfg.Limits.MaxTaskBytes); err != nil {
		return Run{}, err
	}
	if err := CheckSecrets(secrets, s.cfg.Limits); err != nil {
		return Run{}, err
	}
	now := s.clock.Now()
	var run Run
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		sess, err := s.visibleSession(tx, a, id)
		if err != nil {
			return err
		}
		if err := s.gate(tx, a, false, now); err != nil {
			return err
		}
		r, ok, err := activeRun(tx, sess.ID)
		if err != nil {
			return err
		}
		if !ok || r.State != StateWaiting {
			return Errorf(ECONFLICT, "session %s has no question waiting for an answer", id)
		}
		q, ok, err := tx.PendingQuestion(r.ID)
		if err != nil {
			return err
		}
		if ok {
			q.Answer, q.AnsweredBy, q.AnsweredAt = answer, a.Name, now
			q.AnswerDelivery, q.AnswerComment = origin.DeliveryID, origin.CommentID
			if err := tx.UpdateQuestion(&q); err != nil {
				return err
			}
		}
		emit(s.event(sess.ID, r.ID, EventRunAnswered, QuestionData{Answer: clip(answer, 2000), AnsweredBy: a.Name}))
		r.Question = ""
		r.Turn++
		r.AgentOffset = 0
		if err := s.moveRun(tx, emit, &r, StateRunning, "answered by "+a.Name, now); err != nil {
			return err
		}
		run = r
		return nil
	})
	if err != nil {
		return Run{}, err
	}
	if len(secrets) > 0 {
		s.mu.Lock()
		s.secrets[TurnRef{run.ID, run.Turn}] = secrets
		s.mu.Unlock()
	}
	s.startWorker(run.ID)
	return run, nil
}

// ResumeOutcome says what Resume did.
type ResumeOutcome string

const (
	ResumedAnswer   ResumeOutcome = "answered"
	ResumedFollowUp ResumeOutcome = "queued"
)

// Resume answers the session's pending question if there is one, and
// otherwise queues message as a follow-up. It is what MCP's resume and the
// dashboard's reply box do.
func (s *Service) Resume(ctx context.Context, id SessionID, message string, secrets map[string]string, origin Origin) (ResumeOutcome, Delegation, error) {
	run, err := s.Answer(ctx, id, message, secrets)
	if err == nil {
		sess, _ := s.getSession(ctx, id)
		return ResumedAnswer, Delegation{Session: sess, Run: run, Continued: true}, nil
	}
	if ErrorCode(err) != ECONFLICT {
		return "", Delegation{}, err
	}
	if len(secrets) > 0 {
		return "", Delegation{}, Errorf(ECONFLICT, "secrets can only be given with an answer to a pending question")
	}
	d, err := s.FollowUp(ctx, id, message, origin)
	return ResumedFollowUp, d, err
}

func (s *Service) getSession(ctx context.Context, id SessionID) (Session, error) {
	var sess Session
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		sess, err = tx.GetSession(id)
		return err
	})
	return sess, err
}

// activeRun returns the session's run that is starting, running or waiting.
func activeRun(tx Tx, id SessionID) (Run, bool, error) {
	runs, err := tx.ListRuns(id)
	if err != nil {
		return Run{}, false, err
	}
	for _, r := range runs {
		if r.State.Active() {
			return r, true, nil
		}
	}
	return Run{}, false, nil
}

// moveRun validates and applies a transition inside a transaction, and
// emits its event.
func (s *Service) moveRun(tx Tx, emit func(Event), r *Run, to RunState, reason string, now time.Time) error {
	if err := CheckTransition(r.State, to); err != nil {
		return err
	}
	from := r.State
	r.State = to
	r.UpdatedAt = now
	if to == StateStarting && r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	if to.Terminal() {
		r.FinishedAt = now
	}
	if err := tx.UpdateRun(r); err != nil {
		return err
	}
	emit(s.event(r.SessionID, r.ID, EventRunState, StateChange{From: from, To: to, Reason: clip(reason, 500)}))
	return nil
}

// Transition moves a run from one state to another with a reason. It is
// the state machine's single entry point for surfaces and tests; the
// scheduler uses the same path. The transition is refused with ECONFLICT
// if the run is not in state from any more.
func (s *Service) Transition(ctx context.Context, id RunID, from, to RunState, reason string) (Run, error) {
	var out Run
	err := s.commit(ctx, func(tx Tx, emit func(Event)) error {
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		if r.State != from {
			return Errorf(ECONFLICT, "run %s is %s, not %s", id, r.State, from)
		}
		if err := s.moveRun(tx, emit, &r, to, reason, s.clock.Now()); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err == nil && !to.Active() {
		s.kick()
	}
	return out, err
}

// Cancel cancels the session's active run (or, with none active, its
// queued runs) and stops the agent.
func (s *Service) Cancel(ctx context.Context, id SessionID) ([]Run, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	var cancelled []Run
	var box BoxRef
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		cancelled = nil
		sess, err := s.visibleSession(tx, a, id)
		if err != nil {
			return err
		}
		box = sess.Box
		runs, err := tx.ListRuns(sess.ID)
		if err != nil {
			return err
		}
		var targets []Run
		for _, r := range runs {
			if r.State.Active() {
				targets = []Run{r}
				break
			}
			if r.State == StateQueued {
				targets = append(targets, r)
			}
		}
		if len(targets) == 0 {
			return Errorf(ECONFLICT, "session %s has nothing to cancel", id)
		}
		now := s.clock.Now()
		for _, r := range targets {
			if err := s.moveRun(tx, emit, &r, StateCancelled, "cancelled by "+a.Name, now); err != nil {
				return err
			}
			cancelled = append(cancelled, r)
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "run.cancel", Target: string(id)})
	})
	if err != nil {
		return nil, err
	}
	for _, r := range cancelled {
		s.stopWorker(r.ID)
		if !box.IsZero() && r.Turn > 0 {
			if err := s.sandbox.Kill(ctx, box, TurnRef{r.ID, r.Turn}); err != nil {
				s.log.Warn("stop agent after cancel", "run", r.ID, "err", err)
			}
		}
	}
	s.kick()
	return cancelled, nil
}

// Teardown closes a session: its live runs are cancelled, the session is
// marked closed and its box removed. The session's record and events stay.
func (s *Service) Teardown(ctx context.Context, id SessionID) (Session, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Session{}, err
	}
	var sess Session
	var stopped []Run
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		var err error
		sess, err = s.visibleSession(tx, a, id)
		if err != nil {
			return err
		}
		if sess.State == SessionClosed {
			return nil // idempotent: tearing down twice is fine
		}
		runs, err := tx.ListRuns(sess.ID)
		if err != nil {
			return err
		}
		stopped = runs
		return s.closeSession(tx, emit, &sess, a, "torn down by "+a.Name, s.clock.Now())
	})
	if err != nil {
		return Session{}, err
	}
	for _, r := range stopped {
		s.stopWorker(r.ID)
	}
	s.removeBoxes(ctx, []Session{sess})
	return sess, nil
}

// closeSession cancels every live run of the session and marks it closed.
func (s *Service) closeSession(tx Tx, emit func(Event), sess *Session, a Actor, reason string, now time.Time) error {
	runs, err := tx.ListRuns(sess.ID)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.State.Terminal() {
			continue
		}
		if err := s.moveRun(tx, emit, &r, StateCancelled, reason, now); err != nil {
			return err
		}
	}
	sess.State = SessionClosed
	sess.ClosedAt = now
	sess.UpdatedAt = now
	if err := tx.UpdateSession(sess); err != nil {
		return err
	}
	emit(s.event(sess.ID, "", EventSessionClosed, SessionData{State: SessionClosed, Reason: reason}))
	return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "session.teardown", Target: string(sess.ID), Detail: reason})
}

// removeBoxes removes closed sessions' boxes after the closing commit. A
// failure is logged; the reconciler removes boxes of closed sessions later.
func (s *Service) removeBoxes(ctx context.Context, sessions []Session) {
	for _, sess := range sessions {
		if sess.Box.IsZero() {
			continue
		}
		if err := s.sandbox.Remove(ctx, sess.Box); err != nil {
			s.log.Warn("remove box of closed session", "session", sess.ID, "box", sess.Box.Name, "err", err)
		}
	}
}

// Pin marks a session's box as never reaped (or no longer).
func (s *Service) Pin(ctx context.Context, id SessionID, pinned bool) (Session, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Session{}, err
	}
	var sess Session
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		var err error
		sess, err = s.visibleSession(tx, a, id)
		if err != nil {
			return err
		}
		if sess.Pinned == pinned {
			return nil
		}
		sess.Pinned = pinned
		sess.UpdatedAt = s.clock.Now()
		if err := tx.UpdateSession(&sess); err != nil {
			return err
		}
		emit(s.event(sess.ID, "", EventSessionUpdated, SessionData{Pinned: &pinned}))
		action := "session.unpin"
		if pinned {
			action = "session.pin"
		}
		return tx.AppendAudit(AuditEntry{At: sess.UpdatedAt, Actor: a.Name, Action: action, Target: string(id)})
	})
	return sess, err
}

// RunView is a run with its queue position.
type RunView struct {
	Run
	Position int `json:"position"`
}

// SessionView is everything a surface shows about one session.
type SessionView struct {
	Session Session   `json:"session"`
	Runs    []RunView `json:"runs"`
	// Current is the active run, else the latest run.
	Current *Run `json:"current,omitempty"`
	// Question is the pending question, if a run is waiting.
	Question string `json:"question,omitempty"`
	// Queued counts runs waiting behind the current one.
	Queued int `json:"queued"`
}

// State is the session's effective state: its current run's state, or
// "closed".
func (v SessionView) State() string {
	if v.Session.State == SessionClosed {
		return string(SessionClosed)
	}
	if v.Current == nil {
		return "idle"
	}
	return string(v.Current.State)
}

func buildView(sess Session, runs []Run) SessionView {
	v := SessionView{Session: sess, Runs: make([]RunView, 0, len(runs))}
	for i := range runs {
		r := runs[i]
		v.Runs = append(v.Runs, RunView{Run: r, Position: position(runs, r)})
		if r.State.Active() {
			cur := r
			v.Current = &cur
		}
		if r.State == StateQueued {
			v.Queued++
		}
	}
	if v.Current == nil && len(runs) > 0 {
		last := runs[len(runs)-1]
		v.Current = &last
	}
	if v.Current != nil && v.Current.State == StateWaiting {
		v.Question = v.Current.Question
	}
	return v
}

// Session returns one session with its runs.
func (s *Service) Session(ctx context.Context, id SessionID) (SessionView, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return SessionView{}, err
	}
	var v SessionView
	err = s.store.View(ctx, func(tx Tx) error {
		sess, err := s.visibleSession(tx, a, id)
		if err != nil {
			return err
		}
		runs, err := tx.ListRuns(id)
		if err != nil {
			return err
		}
		v = buildView(sess, runs)
		return nil
	})
	return v, err
}

// FleetFilter selects sessions for Fleet.
type FleetFilter struct {
	// IncludeClosed lists torn-down sessions too.
	IncludeClosed bool
	Limit         int
}

// Fleet lists the sessions the actor may see: waiting runs first, then
// running, then the rest, newest first within each group.
func (s *Service) Fleet(ctx context.Context, f FleetFilter) ([]SessionView, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	sf := SessionFilter{Limit: f.Limit}
	if !a.Operator && !a.Admin {
		sf.Owner = a.Account
	}
	if !f.IncludeClosed {
		sf.State = SessionActive
	}
	var out []SessionView
	err = s.store.View(ctx, func(tx Tx) error {
		list, err := tx.ListSessions(sf)
		if err != nil {
			return err
		}
		for _, sess := range list {
			runs, err := tx.ListRuns(sess.ID)
			if err != nil {
				return err
			}
			out = append(out, buildView(sess, runs))
		}
		return nil
	})
	rank := func(v SessionView) int {
		switch v.State() {
		case string(StateWaiting):
			return 0
		case string(StateRunning), string(StateStarting):
			return 1
		case string(SessionClosed):
			return 3
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out, err
}

// Events returns a session's stored events after an id.
func (s *Service) Events(ctx context.Context, id SessionID, afterID int64, limit int) ([]Event, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	var out []Event
	err = s.store.View(ctx, func(tx Tx) error {
		if _, err := s.visibleSession(tx, a, id); err != nil {
			return err
		}
		out, err = tx.ListEvents(EventFilter{SessionID: id, AfterID: afterID, Limit: limit})
		return err
	})
	return out, err
}

// Subscribe streams a session's events after afterID: first the stored
// ones, then live ones, without gaps or duplicates. The channel closes when
// ctx ends or the reader lags behind (the returned func then reports
// ErrLagged; resubscribe from the last id seen).
func (s *Service) Subscribe(ctx context.Context, id SessionID, afterID int64) (<-chan Event, func() error, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := s.store.View(ctx, func(tx Tx) error {
		_, err := s.visibleSession(tx, a, id)
		return err
	}); err != nil {
		return nil, nil, err
	}
	// Subscribe before reading the store so nothing committed in between is missed.
	sub := s.bus.Subscribe(func(e Event) bool { return e.SessionID == id })
	out := make(chan Event)
	var errMu sync.Mutex
	var streamErr error
	setErr := func(err error) {
		errMu.Lock()
		streamErr = err
		errMu.Unlock()
	}
	go func() {
		defer close(out)
		defer sub.Close()
		last := afterID
		send := func(e Event) bool {
			if e.ID <= last {
				return true
			}
			select {
			case out <- e:
				last = e.ID
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			var page []Event
			err := s.store.View(ctx, func(tx Tx) error {
				var err error
				page, err = tx.ListEvents(EventFilter{SessionID: id, AfterID: last, Limit: 500})
				return err
			})
			if err != nil {
				setErr(err)
				return
			}
			for _, e := range page {
				if !send(e) {
					return
				}
			}
			if len(page) < 500 {
				break
			}
		}
		for {
			select {
			case e, ok := <-sub.C():
				if !ok {
					setErr(sub.Err())
					return
				}
				if !send(e) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, func() error {
		errMu.Lock()
		defer errMu.Unlock()
		return streamErr
	}, nil
}

// WaitResult is the outcome of Wait.
type WaitResult struct {
	View SessionView `json:"view"`
	// Reached is true when the session reached a boundary: its current run
	// is waiting or has ended and nothing is queued behind it.
	Reached bool `json:"reached"`
}

// Wait blocks until the session reaches a boundary or timeout (the
// configured WaitTimeout when zero) passes.
func (s *Service) Wait(ctx context.Context, id SessionID, timeout time.Duration) (WaitResult, error) {
	if timeout <= 0 {
		timeout = s.cfg.WaitTimeout
	}
	if _, err := s.actor(ctx); err != nil {
		return WaitResult{}, err
	}
	sub := s.bus.Subscribe(func(e Event) bool { return e.SessionID == id })
	defer sub.Close()
	deadline := s.clock.After(timeout)
	for {
		v, err := s.Session(ctx, id)
		if err != nil {
			return WaitResult{}, err
		}
		if atBoundary(v) {
			return WaitResult{View: v, Reached: true}, nil
		}
		select {
		case _, ok := <-sub.C():
			if !ok {
				// Lagged: resubscribe and re-check.
				sub.Close()
				sub = s.bus.Subscribe(func(e Event) bool { return e.SessionID == id })
			}
		case <-deadline:
			return WaitResult{View: v, Reached: false}, nil
		case <-ctx.Done():
			return WaitResult{View: v}, ctx.Err()
		}
	}
}

func atBoundary(v SessionView) bool {
	if v.Session.State == SessionClosed {
		return true
	}
	if v.Current == nil {
		return true
	}
	if v.Current.State == StateWaiting {
		return true
	}
	return v.Current.State.Terminal() && v.Queued == 0
}

// Stats are counters for metrics.
type Stats struct {
	RunsByState map[RunState]int `json:"runs_by_state"`
	// QueueDepth counts queued runs.
	QueueDepth  int `json:"queue_depth"`
	Workers     int `json:"workers"`
	Subscribers int `json:"subscribers"`
}

// Stats returns current counters.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		st.RunsByState, err = tx.CountRunsByState()
		return err
	})
	st.QueueDepth = st.RunsByState[StateQueued]
	s.mu.Lock()
	st.Workers = len(s.workers)
	s.mu.Unlock()
	st.Subscribers = s.bus.Subscribers()
	return st, err
}

// Audit returns the latest audit entries; operator and admins only.
func (s *Service) Audit(ctx context.Context, limit int) ([]AuditEntry, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return nil, err
	}
	if !a.Operator && !a.Admin {
		return nil, Errorf(EFORBIDDEN, "only admins can read the audit log")
	}
	var out []AuditEntry
	err = s.store.View(ctx, func(tx Tx) error {
		out, err = tx.ListAudit(limit)
		return err
	})
	return out, err
}

// workdir is the agent's working directory: the repository when there is
// exactly one, else /workspace. It is derived from the session, so every
// turn of a conversation runs in the same place (the agent keys its
// conversations by directory).
func workdir(sess Session) string {
	if len(sess.Sources) == 1 {
		return "/workspace/" + sess.Sources[0].Dir
	}
	return "/workspace"
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// rawRecord keeps an agent record as JSON when it is JSON, and wraps it as
// a JSON string otherwise, so stored event data is always valid JSON.
func rawRecord(b []byte) json.RawMessage {
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	return mustJSON(string(b))
}
