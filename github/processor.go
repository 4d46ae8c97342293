package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// GitHubAPI is what the Processor and the Tracker need from GitHub, for
// one installation of the App. NewClientsAPI implements it over go-github.
type GitHubAPI interface {
	// Permission returns login's permission on repo ("admin", "maintain",
	// "write", "triage", "read" or "none").
	Permission(ctx context.Context, inst int64, repo, login string) (string, error)
	// React adds a reaction ("eyes", …) to an issue comment.
	React(ctx context.Context, inst int64, repo string, commentID int64, content string) error
	// IssueReact adds a reaction to an issue or pull request body.
	IssueReact(ctx context.Context, inst int64, repo string, number int, content string) error
	// CreateComment comments on an issue or pull request and returns the
	// new comment's id.
	CreateComment(ctx context.Context, inst int64, repo string, number int, body string) (int64, error)
	// EditComment replaces an issue comment's body.
	EditComment(ctx context.Context, inst int64, repo string, commentID int64, body string) error
	// AddLabels adds labels to an issue or pull request (labels it
	// already carries are kept; missing repository labels are created).
	AddLabels(ctx context.Context, inst int64, repo string, number int, labels []string) error
	// RemoveLabel removes a label from an issue or pull request; a label
	// it does not carry is not an error.
	RemoveLabel(ctx context.Context, inst int64, repo string, number int, label string) error
	// ListComments returns the most recent comments of an issue or pull
	// request (at least the last 100, oldest first).
	ListComments(ctx context.Context, inst int64, repo string, number int) ([]ThreadComment, error)
	// Thread describes an issue or, when pullRequest, a pull request
	// (whose head branch it includes).
	Thread(ctx context.Context, inst int64, repo string, number int, pullRequest bool) (ThreadInfo, error)
}

// ClientsFunc returns a go-github client authenticated as an installation.
type ClientsFunc func(ctx context.Context, installationID int64) (*gh.Client, error)

// NewClientsAPI implements GitHubAPI over go-github clients built per
// installation by clients.
func NewClientsAPI(clients ClientsFunc) GitHubAPI { return clientsAPI{clients: clients} }

type clientsAPI struct{ clients ClientsFunc }

func (a clientsAPI) client(ctx context.Context, inst int64, repo string) (*gh.Client, string, string, error) {
	owner, name, err := app.ParseRepo(repo)
	if err != nil {
		return nil, "", "", err
	}
	c, err := a.clients(ctx, inst)
	if err != nil {
		return nil, "", "", err
	}
	return c, owner, name, nil
}

func (a clientsAPI) Permission(ctx context.Context, inst int64, repo, login string) (string, error) {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return "", err
	}
	// go-github v62 does not decode role_name, which tells "maintain"
	// from "write" (the legacy permission folds them).
	req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission",
		url.PathEscape(owner), url.PathEscape(name), url.PathEscape(login)), nil)
	if err != nil {
		return "", err
	}
	var out struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.Do(ctx, req, &out); err != nil {
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
			return "none", nil
		}
		return "", err
	}
	switch out.RoleName {
	case "admin", "maintain", "write", "triage", "read":
		return out.RoleName, nil
	}
	if out.Permission == "" {
		return "none", nil
	}
	return out.Permission, nil
}

func (a clientsAPI) React(ctx context.Context, inst int64, repo string, commentID int64, content string) error {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return err
	}
	_, _, err = c.Reactions.CreateIssueCommentReaction(ctx, owner, name, commentID, content)
	return err
}

func (a clientsAPI) IssueReact(ctx context.Context, inst int64, repo string, number int, content string) error {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return err
	}
	_, _, err = c.Reactions.CreateIssueReaction(ctx, owner, name, number, content)
	return err
}

func (a clientsAPI) CreateComment(ctx context.Context, inst int64, repo string, number int, body string) (int64, error) {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return 0, err
	}
	cm, _, err := c.Issues.CreateComment(ctx, owner, name, number, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return 0, err
	}
	return cm.GetID(), nil
}

func (a clientsAPI) EditComment(ctx context.Context, inst int64, repo string, commentID int64, body string) error {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return err
	}
	_, _, err = c.Issues.EditComment(ctx, owner, name, commentID, &gh.IssueComment{Body: gh.String(body)})
	return err
}

// ---------------------------------------------------------------------
// Processor.

// ProcessorOptions configure a Processor.
type ProcessorOptions struct {
	// Service is the core every trigger is handed to. Required.
	Service *app.Service
	// Deliveries marks deliveries processed. Required.
	Deliveries DeliveryStore
	// API talks to GitHub; when nil, Clients builds it (NewClientsAPI).
	API GitHubAPI
	// Clients builds an installation's client; used when API is nil.
	Clients ClientsFunc
	// Trigger configures Classify (command prefix, label, App slug).
	Trigger TriggerConfig
	// Allow lists logins that may trigger whatever their repository
	// permission (case-insensitive).
	Allow []string
	// Pending lists stored deliveries not yet processed. It is scanned
	// when Run starts and every ScanInterval, so a delivery dropped by a
	// full queue or a crash is processed eventually. Optional.
	Pending func(ctx context.Context) ([]Delivery, error)
	// ScanInterval is how often Pending is scanned (default one minute).
	ScanInterval time.Duration
	// QueueSize bounds the deliveries Accept queues (default 256).
	QueueSize int
	// Sources says what to put in the box for a trigger; the default is
	// the trigger's repository at its default branch.
	Sources func(ctx context.Context, t Trigger) ([]app.Source, error)
	// UserClient returns a client acting as a stored login, for
	// deliveries of that login's events feed (Trigger.AsLogin): replies
	// and the tracking comment are then posted with their token. Without
	// it such deliveries are refused.
	UserClient UserClientFunc
	// Tracker, when set, is told about each new tracking comment so it
	// renders it right away (and learns the repository's installation).
	Tracker *Tracker
	// PublicURL and WebURL feed RenderTracking (see TrackingData).
	PublicURL, WebURL string
	Logger            *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Processor turns stored webhook deliveries into Service calls. It is the
// webhook's EventSink: Accept queues, and Run's worker does the work.
type Processor struct {
	opts  ProcessorOptions
	api   GitHubAPI
	svc   *app.Service
	log   *slog.Logger
	queue chan Delivery
	allow map[string]bool

	mu     sync.Mutex
	queued map[string]bool
	// recent remembers deliveries processed by this process, so a
	// delivery queued twice (Accept and a scan) is handled once.
	recent *recentIDs
	// failures counts transient failures of deliveries still pending,
	// for the backoff of their early retry (see retryLater).
	failures map[string]int
}

var _ EventSink = (*Processor)(nil)

const processorRecent = 4096

// NewProcessor checks the options and returns a Processor; call Run.
func NewProcessor(opts ProcessorOptions) (*Processor, error) {
	if opts.Service == nil {
		return nil, errors.New("github: processor needs a Service")
	}
	if opts.Deliveries == nil {
		return nil, errors.New("github: processor needs a DeliveryStore")
	}
	api := opts.API
	if api == nil {
		if opts.Clients == nil && opts.UserClient == nil {
			return nil, errors.New("github: processor needs API, Clients or UserClient")
		}
		api = NewClientsAPI(orNoApp(opts.Clients))
	}
	if opts.ScanInterval <= 0 {
		opts.ScanInterval = time.Minute
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Trigger = opts.Trigger.withDefaults()
	p := &Processor{
		opts: opts, api: api, svc: opts.Service, log: opts.Logger,
		queue:    make(chan Delivery, opts.QueueSize),
		allow:    map[string]bool{},
		queued:   map[string]bool{},
		recent:   newRecentIDs(processorRecent),
		failures: map[string]int{},
	}
	for _, l := range opts.Allow {
		if l = strings.TrimSpace(l); l != "" {
			p.allow[strings.ToLower(l)] = true
		}
	}
	return p, nil
}

// Accept queues a delivery for processing without blocking. On a full
// queue the delivery stays pending in the store for the next scan.
func (p *Processor) Accept(ctx context.Context, d Delivery) {
	p.enqueue(d)
}

func (p *Processor) enqueue(d Delivery) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queued[d.ID] || p.recent.has(d.ID) {
		return true
	}
	select {
	case p.queue <- d:
		p.queued[d.ID] = true
		return true
	default:
		p.log.Warn("github delivery queue full; left pending for the next scan", "delivery", clipLog(d.ID))
		return false
	}
}

// Run processes queued deliveries until ctx ends, scanning pending ones
// at start and every ScanInterval. It returns nil when ctx ends.
func (p *Processor) Run(ctx context.Context) error {
	p.scan(ctx)
	tick := time.NewTicker(p.opts.ScanInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			p.scan(ctx)
		case d := <-p.queue:
			p.process(ctx, d)
			p.mu.Lock()
			delete(p.queued, d.ID)
			p.mu.Unlock()
		}
	}
}

func (p *Processor) scan(ctx context.Context) {
	if p.opts.Pending == nil {
		return
	}
	list, err := p.opts.Pending(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("list pending github deliveries", "err", err)
		}
		return
	}
	for _, d := range list {
		if !p.enqueue(d) {
			return
		}
	}
}

func (p *Processor) remember(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recent.add(id)
	delete(p.failures, id)
}

// retryLater queues a delivery that failed transiently again after a
// backoff (1s, doubling, at most ScanInterval), so a passing GitHub
// hiccup delays the acknowledgement by seconds rather than a whole scan.
// Beyond processorRecent failing deliveries the scan alone retries them.
func (p *Processor) retryLater(d Delivery) {
	p.mu.Lock()
	n, known := p.failures[d.ID]
	if !known && len(p.failures) >= processorRecent {
		p.mu.Unlock()
		return
	}
	p.failures[d.ID] = n + 1
	p.mu.Unlock()
	delay := min(time.Second<<min(n, 6), p.opts.ScanInterval)
	time.AfterFunc(delay, func() { p.enqueue(d) })
}

// errRetry marks a failure worth retrying: the delivery stays pending.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

func retry(err error) error {
	if err == nil {
		return nil
	}
	return errRetry{err}
}

// process handles one delivery and marks it processed unless a
// transient failure means a later scan should try again.
func (p *Processor) process(ctx context.Context, d Delivery) {
	p.mu.Lock()
	seen := p.recent.has(d.ID)
	p.mu.Unlock()
	if seen {
		return
	}
	err := p.handle(ctx, d)
	if ctx.Err() != nil {
		return // shutting down: the delivery stays pending
	}
	var rt errRetry
	if errors.As(err, &rt) {
		p.log.Warn("github delivery failed; will retry", "delivery", clipLog(d.ID), "err", err)
		p.retryLater(d)
		return
	}
	errText := ""
	if err != nil {
		errText = clip(err.Error(), 500)
		p.log.Warn("github delivery failed", "delivery", clipLog(d.ID), "err", err)
	}
	if err := p.opts.Deliveries.MarkDeliveryProcessed(context.WithoutCancel(ctx), d.ID, p.opts.Now(), errText); err != nil {
		p.log.Warn("mark github delivery processed", "delivery", clipLog(d.ID), "err", err)
		return
	}
	p.remember(d.ID)
}

// MayTrigger reports whether permission (as GitHubAPI.Permission returns
// it) lets someone start runs: write, maintain or admin.
func MayTrigger(permission string) bool {
	switch strings.ToLower(permission) {
	case "write", "maintain", "admin":
		return true
	}
	return false
}

func (p *Processor) handle(ctx context.Context, d Delivery) error {
	t, ok, err := Classify(d.Event, d.Payload, p.opts.Trigger)
	if err != nil {
		return err
	}
	if !ok {
		p.log.Debug("github delivery is not a trigger", "delivery", clipLog(d.ID), "reason", t.Reason)
		return nil
	}
	if t.AsLogin != "" {
		switch {
		case p.opts.UserClient == nil:
			return fmt.Errorf("github: %s delivery for %s's token, but no stored tokens are configured", t.Event, clip(t.AsLogin, 64))
		case !strings.EqualFold(t.AsLogin, t.Sender):
			// A feed acts only on its own login's comments.
			return nil
		}
	} else if t.InstallationID == 0 {
		return fmt.Errorf("github: %s delivery has no installation", t.Event)
	}
	if p.opts.Tracker != nil {
		p.opts.Tracker.RememberInstallation(t.Repo, t.InstallationID)
	}
	// The commenter's account when one claims the login (multi-user mode), else the operator.
	ctx = app.WithActor(ctx, p.svc.ActorForGitHubLogin(ctx, t.Sender))

	if !p.allow[strings.ToLower(t.Sender)] {
		perm, err := p.apiFor(t).Permission(ctx, t.InstallationID, t.Repo, t.Sender)
		if err != nil {
			return retry(fmt.Errorf("check permission of %s: %w", clip(t.Sender, 64), err))
		}
		if !MayTrigger(perm) {
			p.log.Info("github trigger refused", "repo", t.Repo, "login", clip(t.Sender, 64), "permission", perm)
			if t.AsLogin != "" {
				return nil // never post a refusal as the person themself
			}
			_, err := p.apiFor(t).CreateComment(ctx, t.InstallationID, t.Repo, t.Number, refusalText(p.opts.Trigger.Trigger))
			return retry(err)
		}
	}

	c := t.Command
	switch c.Kind {
	case CommandHelp:
		p.ack(ctx, t)
		reply := c.Reply
		if reply == "" {
			reply = HelpText(p.opts.Trigger.Trigger)
		}
		return p.reply(ctx, t, reply)
	case CommandStatus:
		p.ack(ctx, t)
		return p.status(ctx, t)
	case CommandCancel:
		return p.cancel(ctx, t)
	case CommandNew:
		return p.delegate(ctx, t, d, c.Text, true)
	case CommandUnknown:
		if c.Text != "" {
			if done, err := p.answer(ctx, t, d.ID, c.Text); done || err != nil {
				return err
			}
		}
		return p.reply(ctx, t, c.Reply)
	case CommandAsk:
		if t.Kind == TriggerComment {
			if done, err := p.answer(ctx, t, d.ID, c.Text); done || err != nil {
				return err
			}
		}
		return p.delegate(ctx, t, d, c.Text, false)
	}
	return nil
}

func refusalText(trigger string) string {
	return "Thanks for the request! Only people with write access to this repository can start " +
		codeSpan(trigger) + " runs, so nothing was started. A maintainer can ask on your behalf."
}

// ack puts 👀 on the triggering comment (or the issue, for a label). It
// is best effort: a missing reaction must not stop the run.
func (p *Processor) ack(ctx context.Context, t Trigger) {
	var err error
	if t.Kind == TriggerComment && t.CommentID != 0 {
		err = p.apiFor(t).React(ctx, t.InstallationID, t.Repo, t.CommentID, "eyes")
	} else {
		err = p.apiFor(t).IssueReact(ctx, t.InstallationID, t.Repo, t.Number, "eyes")
	}
	if err != nil {
		p.log.Warn("github reaction", "repo", t.Repo, "number", t.Number, "err", err)
	}
}

func (p *Processor) reply(ctx context.Context, t Trigger, body string) error {
	if body == "" {
		return nil
	}
	_, err := p.apiFor(t).CreateComment(ctx, t.InstallationID, t.Repo, t.Number, body)
	return retry(err)
}

func threadKey(t Trigger) string { return t.Origin("").ThreadKey() }

// answer answers the thread's waiting run with text, if there is one. A
// comment that already answered a question (seen again after a restart,
// a redelivery or through the poller) counts as handled: it must neither
// answer twice nor turn into a follow-up.
func (p *Processor) answer(ctx context.Context, t Trigger, deliveryID, text string) (bool, error) {
	v, ok, err := p.svc.SessionForThread(ctx, threadKey(t))
	if err != nil {
		return false, retry(err)
	}
	if !ok {
		return false, nil
	}
	used, err := p.svc.AnsweredWith(ctx, v.Session.ID, deliveryID, t.CommentID)
	if err != nil {
		return false, retry(err)
	}
	if used {
		return true, nil
	}
	if v.Current == nil || v.Current.State != app.StateWaiting {
		return false, nil
	}
	p.ack(ctx, t)
	if _, err := p.svc.AnswerFrom(ctx, v.Session.ID, text, nil, t.Origin(deliveryID)); err != nil {
		if app.ErrorCode(err) == app.ECONFLICT {
			return false, nil // answered meanwhile: queue it as a follow-up
		}
		if app.ErrorCode(err) == app.EINVALID || app.ErrorCode(err) == app.ETOOLARGE {
			return true, p.reply(ctx, t, "Could not take that as the answer: "+escapeInline(app.ErrorMessage(err), 300))
		}
		return false, retry(err)
	}
	return true, nil
}

func (p *Processor) status(ctx context.Context, t Trigger) error {
	v, ok, err := p.svc.SessionForThread(ctx, threadKey(t))
	if err != nil {
		return retry(err)
	}
	return p.reply(ctx, t, statusText(v, ok, t, p.opts.PublicURL, p.opts.Trigger.Trigger))
}

func statusText(v app.SessionView, ok bool, t Trigger, publicURL, trigger string) string {
	thread := "issue"
	if t.PullRequest {
		thread = "pull request"
	}
	if !ok {
		return "No agent session is active on this " + thread + ". Start one with " + codeSpan(trigger+" <ask>") + "."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**asb status:** %s", v.State())
	if v.Current != nil {
		fmt.Fprintf(&b, " (run %s)", codeSpan(string(v.Current.ID)))
	}
	if v.Queued > 0 {
		fmt.Fprintf(&b, ", %d queued", v.Queued)
	}
	b.WriteString("\n")
	if v.Question != "" {
		b.WriteString("\nThe agent asks:\n\n" + fenced(v.Question, 2000, "") + "\nAnswer with " + codeSpan(trigger+" <answer>") + ".\n")
	}
	if publicURL != "" && safeURL(publicURL) && safeID(string(v.Session.ID)) {
		fmt.Fprintf(&b, "\n[Live view](%s/s/%s)\n", strings.TrimRight(publicURL, "/"), v.Session.ID)
	}
	return b.String()
}

func (p *Processor) cancel(ctx context.Context, t Trigger) error {
	v, ok, err := p.svc.SessionForThread(ctx, threadKey(t))
	if err != nil {
		return retry(err)
	}
	p.ack(ctx, t)
	if !ok {
		return p.reply(ctx, t, "There is nothing to cancel here.")
	}
	if _, err := p.svc.Cancel(ctx, v.Session.ID); err != nil {
		if app.ErrorCode(err) == app.ECONFLICT {
			return p.reply(ctx, t, "There is nothing to cancel here.")
		}
		return retry(err)
	}
	// The tracking comment of the cancelled run shows the rest.
	return nil
}

// taskFor is the ask, then a "---" line, then where it came from and
// the thread's context (see threadContext). The ask always comes first
// and is never cut for the sake of the context.
func (p *Processor) taskFor(ctx context.Context, t Trigger, ask string) string {
	what := "issue"
	if t.PullRequest {
		what = "pull request"
	}
	ctxLine := fmt.Sprintf("\n\n---\nGitHub %s %s#%d", what, t.Repo, t.Number)
	if title := strings.TrimSpace(Sanitize(t.Title)); title != "" {
		ctxLine += fmt.Sprintf(": %q", clip(title, 300))
	}
	if t.URL != "" {
		ctxLine += " (" + clip(t.URL, 500) + ")"
	}
	if t.Sender != "" {
		ctxLine += "\nRequested by " + clip(t.Sender, 64) + "."
	}
	extra := p.threadContext(ctx, t)
	limit := p.svc.Limits().MaxTaskBytes
	if limit > 0 && len(ask)+len(ctxLine)+len(extra) > limit {
		extra = truncateUTF8(extra, max(limit-len(ask)-len(ctxLine), 0))
	}
	if limit > 0 && len(ask)+len(ctxLine)+len(extra) > limit {
		ask = truncateUTF8(ask, max(limit-len(ctxLine), 0))
	}
	return ask + ctxLine + extra
}

// delegate starts (or queues) a run and posts its tracking comment. A
// delivery seen before (same delivery or same comment on this thread)
// never delegates twice; its missing tracking comment is posted.
func (p *Processor) delegate(ctx context.Context, t Trigger, d Delivery, ask string, fresh bool) error {
	p.ack(ctx, t)
	run, sess, found, err := p.findRun(ctx, t, d.ID)
	if err != nil {
		return retry(err)
	}
	if !found {
		var sources []app.Source
		if p.opts.Sources != nil {
			if sources, err = p.opts.Sources(ctx, t); err != nil {
				return retry(err)
			}
		} else {
			sources = []app.Source{{Repo: t.Repo}}
		}
		del, err := p.svc.Delegate(ctx, app.DelegateRequest{
			Task: p.taskFor(ctx, t, ask), Sources: sources, Origin: t.Origin(d.ID), NewSession: fresh,
		})
		if err != nil {
			switch app.ErrorCode(err) {
			case app.EINVALID, app.ETOOLARGE, app.ECONFLICT, app.EFORBIDDEN:
				if rerr := p.reply(ctx, t, "Could not start the agent: "+escapeInline(app.ErrorMessage(err), 500)); rerr != nil {
					return rerr
				}
				return err
			}
			return retry(err)
		}
		run, sess = del.Run, del.Session.ID
	}
	if run.Origin.TrackingCommentID != 0 {
		return nil
	}
	if found {
		// An earlier attempt may have posted the comment and lost GitHub's
		// answer: adopt that comment rather than post a second one.
		c, ok, err := p.postedTracking(ctx, t, run.ID)
		if err != nil {
			return retry(err)
		}
		if ok {
			if err := p.svc.SetTrackingComment(ctx, run.ID, c.ID); err != nil {
				return retry(err)
			}
			if p.opts.Tracker != nil {
				p.opts.Tracker.Tracked(sess, run.ID, t.InstallationID, c.Body)
			}
			return nil
		}
	}
	view, err := p.svc.Session(ctx, sess)
	if err != nil {
		return retry(err)
	}
	body := RenderTracking(TrackingData{
		View: view, RunID: run.ID, PublicURL: p.opts.PublicURL, WebURL: p.opts.WebURL,
		Trigger: p.opts.Trigger.Trigger, Now: p.opts.Now(),
	})
	id, err := p.apiFor(t).CreateComment(ctx, t.InstallationID, t.Repo, t.Number, body)
	if err != nil {
		return retry(err)
	}
	if err := p.svc.SetTrackingComment(ctx, run.ID, id); err != nil {
		return retry(err)
	}
	if p.opts.Tracker != nil {
		p.opts.Tracker.Tracked(sess, run.ID, t.InstallationID, body)
	}
	return nil
}

// postedTracking finds a tracking comment the App already posted for run
// on the trigger's thread. Only the App's own bot counts: anyone can write
// a marker into a comment.
func (p *Processor) postedTracking(ctx context.Context, t Trigger, run app.RunID) (ThreadComment, bool, error) {
	list, err := p.api.ListComments(ctx, t.InstallationID, t.Repo, t.Number)
	if err != nil {
		return ThreadComment{}, false, err
	}
	self := ""
	if slug := p.opts.Trigger.AppSlug; slug != "" {
		self = strings.ToLower(slug) + "[bot]"
	}
	for _, c := range list {
		if !botLogin(c.Login, c.UserType) || (self != "" && !strings.EqualFold(c.Login, self)) {
			continue
		}
		if m, ok := ParseTrackingMarker(c.Body); ok && m.RunID == run {
			return c, true, nil
		}
	}
	return ThreadComment{}, false, nil
}

// findRun looks for a run on the thread that this delivery (or its
// comment, which the poller may also have seen) already started.
func (p *Processor) findRun(ctx context.Context, t Trigger, deliveryID string) (app.Run, app.SessionID, bool, error) {
	v, ok, err := p.svc.SessionForThread(ctx, threadKey(t))
	if err != nil || !ok {
		return app.Run{}, "", false, err
	}
	for _, r := range v.Runs {
		o := r.Origin
		if (deliveryID != "" && o.DeliveryID == deliveryID) || (t.CommentID != 0 && o.CommentID == t.CommentID && o.Repo == t.Repo) {
			return r.Run, v.Session.ID, true, nil
		}
	}
	return app.Run{}, "", false, nil
}
