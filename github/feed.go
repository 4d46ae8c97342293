package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// feedPages bounds the pages of a feed read per round (GitHub serves at
// most 300 events, 100 per page).
const feedPages = 3

func feedKey(login string) string { return "poll:feed:" + strings.ToLower(login) }

type feedEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Repo      struct {
		Name string `json:"name"`
	} `json:"repo"`
	Payload struct {
		Action  string          `json:"action"`
		Issue   json.RawMessage `json:"issue"`
		Comment json.RawMessage `json:"comment"`
	} `json:"payload"`
}

// pollFeeds polls every stored login's events feed; one failing feed
// does not stop the others.
func (p *Poller) pollFeeds(ctx context.Context) []error {
	if p.opts.Feeds == nil {
		return nil
	}
	logins, err := p.opts.Feeds(ctx)
	if err != nil {
		return []error{fmt.Errorf("github poller: list stored logins: %w", err)}
	}
	var errs []error
	for _, login := range logins {
		if ctx.Err() != nil {
			return append(errs, ctx.Err())
		}
		if !app.ValidLogin(login) {
			continue
		}
		if err := p.pollFeed(ctx, login); err != nil {
			p.log.Warn("github events feed poll failed", "login", login, "err", err)
			errs = append(errs, fmt.Errorf("poll %s's events: %w", login, err))
		}
	}
	return errs
}

// pollFeed reads a login's own events feed (newest first) down to the
// stored cursor, conditionally so an unchanged feed costs one 304, and
// hands on the issue comments the login created, oldest first.
func (p *Poller) pollFeed(ctx context.Context, login string) error {
	c, err := p.opts.FeedClient(ctx, login)
	if err != nil {
		return err
	}
	return pollEvents(ctx, p, eventPoll[feedEvent]{
		client:  c,
		key:     feedKey(login),
		path:    fmt.Sprintf("users/%s/events?per_page=100", url.PathEscape(login)),
		pages:   feedPages,
		what:    "feed",
		logArgs: []any{"login", login},
		id: func(e feedEvent) (int64, bool) {
			id, err := strconv.ParseInt(e.ID, 10, 64)
			return id, err == nil && id > 0
		},
		created: func(e feedEvent) time.Time { return e.CreatedAt },
		deliver: func(ctx context.Context, e feedEvent) error { return p.deliverFeedComment(ctx, c, login, e) },
	})
}

// deliverFeedComment hands on a comment the login created, as the
// issue_comment delivery a webhook would carry, marked with the login
// (feedLoginField) and without an installation. Its delivery id is the
// repository poller's for the same comment, so a comment found both ways
// is recorded once; the processor's comment-id check covers the webhook.
func (p *Poller) deliverFeedComment(ctx context.Context, c *gh.Client, login string, e feedEvent) error {
	if e.Type != "IssueCommentEvent" || e.Payload.Action != "created" || len(e.Payload.Comment) == 0 || len(e.Payload.Issue) == 0 {
		return nil
	}
	owner, name, err := splitRepo(e.Repo.Name)
	if err != nil {
		return nil
	}
	var pc polledComment
	if err := json.Unmarshal(e.Payload.Comment, &pc); err != nil || pc.ID == 0 {
		p.log.Warn("github poller: skip undecodable feed comment", "login", login, "err", err)
		return nil
	}
	if pc.User == nil || !strings.EqualFold(pc.User.Login, login) {
		return nil // only the login's own comments act with its token
	}
	id := fmt.Sprintf("poll:comment:%d:%d", pc.ID, pc.UpdatedAt.UnixNano())
	if p.wasSent(id) {
		return nil
	}
	var full struct {
		User json.RawMessage `json:"user"`
	}
	_ = json.Unmarshal(e.Payload.Comment, &full)
	t := pollTarget{InstalledRepo: InstalledRepo{Repo: owner + "/" + name}, owner: owner, name: name, client: c}
	payload, err := json.Marshal(map[string]any{
		"action":       "created",
		"comment":      e.Payload.Comment,
		"issue":        e.Payload.Issue,
		"repository":   t.repoJSON(),
		"sender":       full.User,
		feedLoginField: login,
	})
	if err != nil {
		return err
	}
	return p.hand(ctx, Delivery{ID: id, Event: "issue_comment", Action: "created", Payload: payload})
}
