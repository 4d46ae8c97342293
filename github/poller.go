package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"
)

// DefaultPollInterval is how often the Poller looks at every repository
// when PollerOptions.Interval is zero.
const DefaultPollInterval = time.Minute

// InstalledRepo is one repository the Poller watches and the App
// installation that covers it.
type InstalledRepo struct {
	// Repo is "owner/name".
	Repo           string
	InstallationID int64
}

// CursorStore keeps the Poller's positions; app/sqlite.Store implements
// it. A missing key reads as empty strings and no error.
type CursorStore interface {
	Cursor(ctx context.Context, key string) (value, etag string, err error)
	PutCursor(ctx context.Context, key, value, etag string, at time.Time) error
}

// PollerOptions configure NewPoller.
type PollerOptions struct {
	// Clients returns an installation's client. Required.
	Clients func(ctx context.Context, installationID int64) (*gh.Client, error)
	// Installations lists the repositories to poll. Required; see
	// AppInstallations for the default over the App's JWT client.
	Installations func(ctx context.Context) ([]InstalledRepo, error)
	// Feeds lists the stored logins whose own events feed is polled
	// (GET /users/{login}/events), so their /agent comments work on
	// repositories the App is not installed on. Optional; with it,
	// Clients and Installations may be nil (no App at all).
	Feeds func(ctx context.Context) ([]string, error)
	// FeedClient acts as a feed's login. Required with Feeds.
	FeedClient UserClientFunc
	// Cursors persists positions and ETags. Required.
	Cursors CursorStore
	// Sink receives each synthesized delivery. Required.
	Sink EventSink
	// Deliveries, when set, records each synthesized delivery before it
	// is handed to Sink, exactly as the webhook does: a delivery id seen
	// before is not handed on again, and the processor can mark it
	// processed. A recording failure stops the round without advancing
	// the cursor.
	Deliveries DeliveryStore
	// Label is the issue label that triggers runs (DefaultLabel when
	// empty); only its "labeled" events are delivered.
	Label string
	// Interval is the time between rounds (DefaultPollInterval when zero).
	// A server's X-Poll-Interval, when larger, wins.
	Interval time.Duration
	// Backfill is how far back a repository without a stored cursor is
	// read (default one hour), so a first start does not replay a
	// repository's whole history.
	Backfill time.Duration
	// InstallationsTTL is how long the Installations answer is reused
	// (default five minutes).
	InstallationsTTL time.Duration
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Poller finds the triggers a webhook would deliver by polling GitHub:
// per repository, the issue comments updated since a stored cursor and
// the issue events (labels), with conditional requests so an idle
// repository costs 304s, which do not count against the rate limit.
//
// Every comment version (id, updated_at) and every label event is handed
// to the sink at most once by a poller; cursors are stored only after the
// sink took the delivery, so a crash re-delivers at worst, and the
// processor never runs one comment twice.
type Poller struct {
	opts PollerOptions
	log  *slog.Logger

	mu         sync.Mutex
	serverPoll time.Duration // largest X-Poll-Interval seen
	repos      []InstalledRepo
	reposAt    time.Time
	issues     map[string]cachedBody // issue API URL → last body and ETag
	sent       *recentIDs            // delivery ids handed to the sink
}

type cachedBody struct {
	etag string
	body json.RawMessage
}

const (
	pollerSentMax   = 4096
	pollerIssuesMax = 2048
	// pollerAdvanceAt is the number of listed comments from which the
	// comment query's since moves up to the newest comment seen. Below
	// it, since stays put so the stored ETag keeps matching and idle
	// rounds cost only 304s.
	pollerAdvanceAt = 50
	// pollerEventPages bounds how many pages of issue events one round
	// reads looking for its cursor.
	pollerEventPages = 10
)

// NewPoller checks the options and returns a Poller; call Run.
func NewPoller(opts PollerOptions) (*Poller, error) {
	switch {
	case opts.Feeds == nil && opts.Clients == nil:
		return nil, errors.New("github: poller needs Clients")
	case opts.Feeds == nil && opts.Installations == nil:
		return nil, errors.New("github: poller needs Installations")
	case (opts.Clients == nil) != (opts.Installations == nil):
		return nil, errors.New("github: poller needs both Clients and Installations, or neither")
	case opts.Feeds != nil && opts.FeedClient == nil:
		return nil, errors.New("github: poller needs a FeedClient for Feeds")
	case opts.Cursors == nil:
		return nil, errors.New("github: poller needs a CursorStore")
	case opts.Sink == nil:
		return nil, errors.New("github: poller needs a Sink")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultPollInterval
	}
	if opts.Backfill <= 0 {
		opts.Backfill = time.Hour
	}
	if opts.InstallationsTTL <= 0 {
		opts.InstallationsTTL = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Label = strings.TrimSpace(opts.Label); opts.Label == "" {
		opts.Label = DefaultLabel
	}
	return &Poller{
		opts: opts, log: opts.Logger,
		issues: map[string]cachedBody{}, sent: newRecentIDs(pollerSentMax),
	}, nil
}

// AppInstallations lists every repository of every installation of the
// App: installations through the App's JWT client, their repositories
// through each installation's client.
func AppInstallations(a *App) func(ctx context.Context) ([]InstalledRepo, error) {
	return func(ctx context.Context) ([]InstalledRepo, error) {
		var out []InstalledRepo
		opt := &gh.ListOptions{PerPage: 100}
		for {
			list, resp, err := a.AppClient().Apps.ListInstallations(ctx, opt)
			if err != nil {
				return nil, APIError(err, "list the App's installations")
			}
			for _, in := range list {
				if in.GetSuspendedAt().Time.IsZero() {
					repos, err := installationRepos(ctx, a, in.GetID())
					if err != nil {
						return nil, err
					}
					out = append(out, repos...)
				}
			}
			if resp.NextPage == 0 {
				return out, nil
			}
			opt.Page = resp.NextPage
		}
	}
}

func installationRepos(ctx context.Context, a *App, id int64) ([]InstalledRepo, error) {
	c, err := a.InstallationClient(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []InstalledRepo
	opt := &gh.ListOptions{PerPage: 100}
	for {
		list, resp, err := c.Apps.ListRepos(ctx, opt)
		if err != nil {
			return nil, APIError(err, fmt.Sprintf("list the repositories of installation %d", id))
		}
		for _, r := range list.Repositories {
			if r.GetFullName() != "" && !r.GetArchived() {
				out = append(out, InstalledRepo{Repo: r.GetFullName(), InstallationID: id})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// Run polls every Interval (or the server's X-Poll-Interval, when
// larger) until ctx ends, then returns nil. A failed round never stops
// it: rate limits wait for their reset or Retry-After, other failures
// back off.
func (p *Poller) Run(ctx context.Context) error {
	failures := 0
	for {
		err := p.PollOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := p.interval()
		if err != nil {
			failures++
			p.log.Warn("github poll round failed", "err", err, "failures", failures)
			if d := p.retryDelay(err, failures); d > wait {
				wait = d
			}
		} else {
			failures = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// interval is the time between rounds: Interval, or the server's
// X-Poll-Interval when that is longer.
func (p *Poller) interval() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.opts.Interval, p.serverPoll)
}

// retryDelay is how long to wait after a failed round: until a primary
// limit resets, a secondary limit's Retry-After, or an exponential
// back-off (capped at 15 minutes) for anything else.
func (p *Poller) retryDelay(err error, failures int) time.Duration {
	if d, ok := rateLimitWait(err, p.opts.Now()); ok {
		return d
	}
	d := 5 * time.Second << min(failures-1, 8)
	return min(d, 15*time.Minute)
}

// rateLimitWait reports how long a rate-limit error asks to wait.
func rateLimitWait(err error, now time.Time) (time.Duration, bool) {
	var rle *gh.RateLimitError
	if errors.As(err, &rle) {
		return max(rle.Rate.Reset.Sub(now)+time.Second, time.Second), true
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		if abuse.RetryAfter != nil {
			return max(*abuse.RetryAfter, time.Second), true
		}
		return time.Minute, true
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		ra := er.Response.Header.Get("Retry-After")
		code := er.Response.StatusCode
		if code == http.StatusTooManyRequests || (code == http.StatusForbidden && ra != "") {
			if s, perr := strconv.Atoi(strings.TrimSpace(ra)); perr == nil && s >= 0 {
				return max(time.Duration(s)*time.Second, time.Second), true
			}
			return time.Minute, true
		}
	}
	return 0, false
}

// PollOnce runs one round over every repository. A failing repository
// does not stop the others, except that a rate limit skips the rest of
// its installation; the errors of the round are returned joined.
func (p *Poller) PollOnce(ctx context.Context) error {
	errs := p.pollFeeds(ctx)
	if p.opts.Installations == nil {
		return errors.Join(errs...)
	}
	repos, err := p.installed(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	limited := map[int64]bool{}
	for _, r := range repos {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if limited[r.InstallationID] {
			continue
		}
		if err := p.pollRepo(ctx, r); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.log.Warn("github poll failed", "repo", r.Repo, "installation", r.InstallationID, "err", err)
			errs = append(errs, fmt.Errorf("poll %s: %w", r.Repo, err))
			if _, ok := rateLimitWait(err, p.opts.Now()); ok {
				limited[r.InstallationID] = true
			}
		}
	}
	return errors.Join(errs...)
}

func (p *Poller) installed(ctx context.Context) ([]InstalledRepo, error) {
	now := p.opts.Now()
	p.mu.Lock()
	if p.repos != nil && now.Sub(p.reposAt) < p.opts.InstallationsTTL && !now.Before(p.reposAt) {
		repos := p.repos
		p.mu.Unlock()
		return repos, nil
	}
	p.mu.Unlock()
	repos, err := p.opts.Installations(ctx)
	if err != nil {
		return nil, fmt.Errorf("github poller: list installed repositories: %w", err)
	}
	repos = slices.Clone(repos)
	if repos == nil {
		repos = []InstalledRepo{}
	}
	p.mu.Lock()
	p.repos, p.reposAt = repos, now
	p.mu.Unlock()
	return repos, nil
}

func (p *Poller) pollRepo(ctx context.Context, r InstalledRepo) error {
	owner, name, err := splitRepo(r.Repo)
	if err != nil {
		return err
	}
	c, err := p.opts.Clients(ctx, r.InstallationID)
	if err != nil {
		return err
	}
	t := pollTarget{InstalledRepo: r, owner: owner, name: name, client: c}
	errC := p.pollComments(ctx, t)
	if _, limited := rateLimitWait(errC, p.opts.Now()); limited {
		return errC
	}
	return errors.Join(errC, p.pollLabels(ctx, t))
}

type pollTarget struct {
	InstalledRepo
	owner, name string
	client      *gh.Client
}

func (t pollTarget) repoJSON() map[string]any {
	return map[string]any{
		"name": t.name, "full_name": t.owner + "/" + t.name,
		"owner": map[string]any{"login": t.owner},
	}
}

// notModified reports a 304 answer to a conditional request.
func notModified(err error) bool {
	var er *gh.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotModified
}

// get sends a GET with If-None-Match and decodes the answer into v.
func (p *Poller) get(ctx context.Context, c *gh.Client, u, etag string, v any) (*gh.Response, error) {
	req, err := c.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := c.Do(ctx, req, v)
	if resp != nil && resp.Response != nil {
		if s, perr := strconv.Atoi(resp.Header.Get("X-Poll-Interval")); perr == nil && s > 0 {
			p.mu.Lock()
			p.serverPoll = max(p.serverPoll, time.Duration(s)*time.Second)
			p.mu.Unlock()
		}
	}
	return resp, err
}

// commentCursor is the stored position of a repository's comment poll.
type commentCursor struct {
	// Since is the query's since (kept while the window is small so the
	// stored ETag still applies).
	Since time.Time `json:"since"`
	// Seen is the newest updated_at handed on; IDs are the comments
	// handed on with exactly that updated_at (since is inclusive).
	Seen time.Time `json:"seen"`
	IDs  []int64   `json:"ids,omitempty"`
}

func (cc *commentCursor) isNew(id int64, updated time.Time) bool {
	return updated.After(cc.Seen) || (updated.Equal(cc.Seen) && !slices.Contains(cc.IDs, id))
}

func (cc *commentCursor) advance(id int64, updated time.Time) {
	if updated.After(cc.Seen) {
		cc.Seen, cc.IDs = updated, []int64{id}
		return
	}
	cc.IDs = append(cc.IDs, id)
}

func commentsKey(repo string) string { return "poll:comments:" + strings.ToLower(repo) }
func labelsKey(repo string) string   { return "poll:labels:" + strings.ToLower(repo) }

type polledComment struct {
	ID        int64     `json:"id"`
	IssueURL  string    `json:"issue_url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	User      *struct {
		Login string `json:"login"`
	} `json:"user"`
}

func (p *Poller) pollComments(ctx context.Context, t pollTarget) error {
	key := commentsKey(t.Repo)
	value, etag, err := p.opts.Cursors.Cursor(ctx, key)
	if err != nil {
		return err
	}
	var cur commentCursor
	if value != "" {
		if err := json.Unmarshal([]byte(value), &cur); err != nil {
			p.log.Warn("github poller: unreadable comment cursor; starting over", "repo", t.Repo, "err", err)
			cur, etag = commentCursor{}, ""
		}
	}
	if cur.Since.IsZero() {
		cur.Since = p.opts.Now().Add(-p.opts.Backfill).UTC().Truncate(time.Second)
		etag = ""
	}
	next := cur
	next.IDs = slices.Clone(cur.IDs)
	save := func(newETag string) error {
		if next.Since.Equal(cur.Since) && next.Seen.Equal(cur.Seen) && slices.Equal(next.IDs, cur.IDs) && newETag == etag && value != "" {
			return nil
		}
		b, _ := json.Marshal(next)
		return p.opts.Cursors.PutCursor(context.WithoutCancel(ctx), key, string(b), newETag, p.opts.Now())
	}
	base := fmt.Sprintf("repos/%s/%s/issues/comments?since=%s&sort=updated&direction=asc&per_page=100",
		url.PathEscape(t.owner), url.PathEscape(t.name), url.QueryEscape(cur.Since.UTC().Format(time.RFC3339)))
	page, listed, newETag := 1, 0, ""
	for {
		u, sendETag := base, ""
		if page > 1 {
			u += "&page=" + strconv.Itoa(page)
		} else {
			sendETag = etag
		}
		var raws []json.RawMessage
		resp, err := p.get(ctx, t.client, u, sendETag, &raws)
		if page == 1 && notModified(err) {
			return nil
		}
		if err != nil {
			// Keep what was handed on; the ETag no longer describes it.
			return errors.Join(err, save(""))
		}
		if page == 1 {
			newETag = resp.Header.Get("ETag")
		}
		for _, raw := range raws {
			listed++
			var pc polledComment
			if err := json.Unmarshal(raw, &pc); err != nil || pc.ID == 0 {
				p.log.Warn("github poller: skip undecodable comment", "repo", t.Repo, "err", err)
				continue
			}
			if !next.isNew(pc.ID, pc.UpdatedAt) {
				continue
			}
			if err := p.deliverComment(ctx, t, raw, pc); err != nil {
				return errors.Join(err, save(""))
			}
			next.advance(pc.ID, pc.UpdatedAt)
		}
		if resp.NextPage == 0 || len(raws) == 0 {
			break
		}
		page = resp.NextPage
	}
	if (page > 1 || listed >= pollerAdvanceAt) && !next.Seen.IsZero() {
		// The window has grown: move since up (the ETag was for the old
		// query, so the next round reads once and then gets 304s).
		next.Since, newETag = next.Seen.UTC().Truncate(time.Second), ""
	}
	return save(newETag)
}

func (p *Poller) deliverComment(ctx context.Context, t pollTarget, raw json.RawMessage, pc polledComment) error {
	id := fmt.Sprintf("poll:comment:%d:%d", pc.ID, pc.UpdatedAt.UnixNano())
	if p.wasSent(id) {
		return nil
	}
	issue, err := p.issue(ctx, t, pc.IssueURL)
	if err != nil {
		return err
	}
	action := "created"
	if !pc.UpdatedAt.Equal(pc.CreatedAt) {
		action = "edited" // never a trigger; delivered so the record is complete
	}
	var sender any = map[string]any{}
	if pc.User != nil {
		var full struct {
			User json.RawMessage `json:"user"`
		}
		_ = json.Unmarshal(raw, &full)
		sender = full.User
	}
	payload, err := json.Marshal(map[string]any{
		"action":       action,
		"comment":      raw,
		"issue":        issue,
		"repository":   t.repoJSON(),
		"sender":       sender,
		"installation": map[string]any{"id": t.InstallationID},
	})
	if err != nil {
		return err
	}
	return p.hand(ctx, Delivery{ID: id, Event: "issue_comment", Action: action, Payload: payload})
}

// issue fetches an issue (or pull request) by its API URL, conditionally
// against the last answer for it.
func (p *Poller) issue(ctx context.Context, t pollTarget, issueURL string) (json.RawMessage, error) {
	rel, err := t.issuePath(issueURL)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	cached, ok := p.issues[rel]
	p.mu.Unlock()
	var body json.RawMessage
	resp, err := p.get(ctx, t.client, rel, cached.etag, &body)
	switch {
	case ok && notModified(err):
		return cached.body, nil
	case err != nil:
		return nil, err
	}
	p.mu.Lock()
	if len(p.issues) >= pollerIssuesMax {
		clear(p.issues)
	}
	if e := resp.Header.Get("ETag"); e != "" {
		p.issues[rel] = cachedBody{etag: e, body: body}
	}
	p.mu.Unlock()
	return body, nil
}

// issuePath turns a comment's issue_url into a request path relative to
// the client's base URL, checking it names an issue of this repository.
func (t pollTarget) issuePath(issueURL string) (string, error) {
	i := strings.LastIndex(issueURL, "/issues/")
	if i < 0 {
		return "", fmt.Errorf("github poller: comment without a usable issue_url %q", clip(issueURL, 200))
	}
	n, err := strconv.Atoi(issueURL[i+len("/issues/"):])
	if err != nil || n <= 0 {
		return "", fmt.Errorf("github poller: comment without a usable issue_url %q", clip(issueURL, 200))
	}
	return fmt.Sprintf("repos/%s/%s/issues/%d", url.PathEscape(t.owner), url.PathEscape(t.name), n), nil
}

type polledEvent struct {
	ID        int64           `json:"id"`
	Event     string          `json:"event"`
	CreatedAt time.Time       `json:"created_at"`
	Actor     json.RawMessage `json:"actor"`
	Label     *struct {
		Name string `json:"name"`
	} `json:"label"`
	Issue json.RawMessage `json:"issue"`
}

func (p *Poller) pollLabels(ctx context.Context, t pollTarget) error {
	return pollEvents(ctx, p, eventPoll[polledEvent]{
		client:  t.client,
		key:     labelsKey(t.Repo),
		path:    fmt.Sprintf("repos/%s/%s/issues/events?per_page=100", url.PathEscape(t.owner), url.PathEscape(t.name)),
		pages:   pollerEventPages,
		what:    "label",
		logArgs: []any{"repo", t.Repo},
		id:      func(e polledEvent) (int64, bool) { return e.ID, true },
		created: func(e polledEvent) time.Time { return e.CreatedAt },
		deliver: func(ctx context.Context, e polledEvent) error { return p.deliverLabel(ctx, t, e) },
	})
}

func (p *Poller) deliverLabel(ctx context.Context, t pollTarget, e polledEvent) error {
	if e.Event != "labeled" || e.Label == nil || !strings.EqualFold(e.Label.Name, p.opts.Label) || len(e.Issue) == 0 {
		return nil
	}
	var is struct {
		PullRequest json.RawMessage `json:"pull_request"`
	}
	if json.Unmarshal(e.Issue, &is) == nil && len(is.PullRequest) > 0 && string(is.PullRequest) != "null" {
		return nil // a labelled pull request is a pull_request event, not a trigger
	}
	id := fmt.Sprintf("poll:label:%d", e.ID)
	if p.wasSent(id) {
		return nil
	}
	var sender any = map[string]any{}
	if len(e.Actor) > 0 {
		sender = e.Actor
	}
	payload, err := json.Marshal(map[string]any{
		"action":       "labeled",
		"issue":        e.Issue,
		"label":        map[string]any{"name": e.Label.Name},
		"repository":   t.repoJSON(),
		"sender":       sender,
		"installation": map[string]any{"id": t.InstallationID},
	})
	if err != nil {
		return err
	}
	return p.hand(ctx, Delivery{ID: id, Event: "issues", Action: "labeled", Payload: payload})
}

func (p *Poller) wasSent(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent.has(id)
}

// hand records (when a DeliveryStore is set) and passes a delivery to
// the sink, once per delivery id.
func (p *Poller) hand(ctx context.Context, d Delivery) error {
	d.ReceivedAt = p.opts.Now()
	if p.opts.Deliveries != nil {
		fresh, err := p.opts.Deliveries.RecordDelivery(context.WithoutCancel(ctx), d.ID, d.Event, d.Action, d.Payload, d.ReceivedAt)
		if err != nil {
			return fmt.Errorf("github poller: store delivery %s: %w", d.ID, err)
		}
		if !fresh {
			p.markSent(d.ID)
			return nil
		}
	}
	p.opts.Sink.Accept(context.WithoutCancel(ctx), d)
	p.markSent(d.ID)
	p.log.Info("github poller: delivered", "delivery", d.ID, "event", d.Event, "action", d.Action)
	return nil
}

func (p *Poller) markSent(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent.add(id)
}
