package github

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	gh "github.com/google/go-github/v62/github"
)

// eventCursor is the stored position of an events listing GitHub serves
// newest first: a repository's issue events, a login's events feed.
type eventCursor struct {
	// Last is the newest event id looked at.
	Last int64 `json:"last"`
	// Start bounds the first round: older events are history.
	Start time.Time `json:"start"`
}

// eventPoll is one events listing for pollEvents.
type eventPoll[E any] struct {
	client *gh.Client
	key    string // the cursor's key
	path   string // the listing's request path, with its per_page query
	pages  int    // at most this many pages a round
	// what and logArgs name the listing in the unreadable-cursor warning.
	what    string
	logArgs []any
	// id returns an event's id; false skips the event.
	id      func(E) (int64, bool)
	created func(E) time.Time
	deliver func(context.Context, E) error
}

// pollEvents reads a listing down to its stored cursor, conditionally so
// an unchanged listing costs one 304, and delivers the unseen events
// oldest first. The cursor is stored only after the events were handed
// on; a failed delivery stores the progress so far without the ETag, so
// the next round reads the listing again.
func pollEvents[E any](ctx context.Context, p *Poller, ep eventPoll[E]) error {
	value, etag, err := p.opts.Cursors.Cursor(ctx, ep.key)
	if err != nil {
		return err
	}
	var cur eventCursor
	if value != "" {
		if err := json.Unmarshal([]byte(value), &cur); err != nil {
			p.log.Warn("github poller: unreadable "+ep.what+" cursor; starting over", append(ep.logArgs, "err", err)...)
			cur, etag = eventCursor{}, ""
		}
	}
	if cur.Last == 0 && cur.Start.IsZero() {
		cur.Start = p.opts.Now().Add(-p.opts.Backfill).UTC()
	}
	var fresh []E
	newest, newETag := cur.Last, ""
	page := 1
collect:
	for n := 0; n < ep.pages; n++ {
		u, sendETag := ep.path, ""
		if page > 1 {
			u += "&page=" + strconv.Itoa(page)
		} else {
			sendETag = etag
		}
		var list []E
		resp, err := p.get(ctx, ep.client, u, sendETag, &list)
		if page == 1 && notModified(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if page == 1 {
			newETag = resp.Header.Get("ETag")
		}
		for _, e := range list {
			id, ok := ep.id(e)
			if !ok {
				continue
			}
			if id <= cur.Last || (cur.Last == 0 && ep.created(e).Before(cur.Start)) {
				break collect
			}
			newest = max(newest, id)
			fresh = append(fresh, e)
		}
		if resp.NextPage == 0 || len(list) == 0 {
			break
		}
		page = resp.NextPage
	}
	next := cur
	save := func(etag string) error {
		b, _ := json.Marshal(next)
		return p.opts.Cursors.PutCursor(context.WithoutCancel(ctx), ep.key, string(b), etag, p.opts.Now())
	}
	for i := len(fresh) - 1; i >= 0; i-- {
		if err := ep.deliver(ctx, fresh[i]); err != nil {
			return errors.Join(err, save(""))
		}
		id, _ := ep.id(fresh[i])
		next.Last = max(next.Last, id)
	}
	next.Last = newest
	if next == cur && newETag == etag && value != "" {
		return nil
	}
	return save(newETag)
}
