package github

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	gh "github.com/google/go-github/v62/github"
)

// ThreadComment is one comment of an issue or pull request thread.
type ThreadComment struct {
	ID int64
	// Login and UserType ("User", "Bot", …) say who wrote it.
	Login, UserType string
	Body            string
}

// ThreadInfo describes an issue or pull request.
type ThreadInfo struct {
	Title, Body string
	// HeadBranch is a pull request's head branch ("" for an issue).
	HeadBranch string
}

// Bounds of the thread context added to a GitHub task.
const (
	// MaxThreadContextBytes bounds everything taskFor adds after the
	// "---" line's header (description, branch and comments).
	MaxThreadContextBytes = 16 << 10
	// MaxThreadComments is how many recent comments are included.
	MaxThreadComments     = 10
	maxThreadBodyBytes    = 4 << 10
	maxThreadCommentBytes = 2 << 10
	maxThreadCommentsSum  = 10 << 10
	// maxThreadLookups bounds the permission look-ups per task.
	maxThreadLookups = 20
)

func (a clientsAPI) AddLabels(ctx context.Context, inst int64, repo string, number int, labels []string) error {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return err
	}
	_, _, err = c.Issues.AddLabelsToIssue(ctx, owner, name, number, labels)
	return err
}

func (a clientsAPI) RemoveLabel(ctx context.Context, inst int64, repo string, number int, label string) error {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return err
	}
	_, err = c.Issues.RemoveLabelForIssue(ctx, owner, name, number, label)
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

func (a clientsAPI) ListComments(ctx context.Context, inst int64, repo string, number int) ([]ThreadComment, error) {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return nil, err
	}
	page := func(n int) ([]*gh.IssueComment, *gh.Response, error) {
		return c.Issues.ListComments(ctx, owner, name, number, &gh.IssueListCommentsOptions{
			ListOptions: gh.ListOptions{Page: n, PerPage: 100},
		})
	}
	list, resp, err := page(1)
	if err != nil {
		return nil, err
	}
	// The per-thread list is oldest first and cannot be sorted: jump to
	// the last pages for the recent end of a long thread.
	if last := resp.LastPage; last > 1 {
		var tail []*gh.IssueComment
		for n := max(last-1, 2); n <= last; n++ {
			more, _, err := page(n)
			if err != nil {
				return nil, err
			}
			tail = append(tail, more...)
		}
		if last > 3 {
			list = tail
		} else {
			list = append(list, tail...)
		}
	}
	out := make([]ThreadComment, 0, len(list))
	for _, cm := range list {
		out = append(out, ThreadComment{
			ID: cm.GetID(), Login: cm.GetUser().GetLogin(), UserType: cm.GetUser().GetType(), Body: cm.GetBody(),
		})
	}
	return out, nil
}

func (a clientsAPI) Thread(ctx context.Context, inst int64, repo string, number int, pullRequest bool) (ThreadInfo, error) {
	c, owner, name, err := a.client(ctx, inst, repo)
	if err != nil {
		return ThreadInfo{}, err
	}
	if pullRequest {
		pr, _, err := c.PullRequests.Get(ctx, owner, name, number)
		if err != nil {
			return ThreadInfo{}, err
		}
		return ThreadInfo{Title: pr.GetTitle(), Body: pr.GetBody(), HeadBranch: pr.GetHead().GetRef()}, nil
	}
	is, _, err := c.Issues.Get(ctx, owner, name, number)
	if err != nil {
		return ThreadInfo{}, err
	}
	return ThreadInfo{Title: is.GetTitle(), Body: is.GetBody()}, nil
}

// ownComment reports whether a comment is asb's own (tracking comment,
// PR notice): every comment asb posts with a marker starts with one.
func ownComment(body string) bool {
	return strings.HasPrefix(body, "<!-- asb:")
}

func botLogin(login, userType string) bool {
	return strings.EqualFold(userType, "Bot") || strings.HasSuffix(strings.ToLower(login), "[bot]")
}

// quoteLines quotes text as a Markdown block quote, so each piece of
// untrusted thread text is visibly delimited.
func quoteLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + l
		}
	}
	return strings.Join(lines, "\n")
}

func cleanText(s string, limit int) string {
	s = strings.TrimSpace(trimBlankLines(Sanitize(s)))
	if len(s) > limit {
		s = strings.TrimRight(truncateUTF8(s, limit), " \t\n") + " …"
	}
	return s
}

// threadContext is what the task adds below its "---" header: for a pull
// request its head branch, the description (not for a label, whose ask
// already is the issue's title and body) and the last few comments by
// people who may trigger runs, sanitized, quoted and attributed. Bots,
// asb's own comments, the triggering comment and everyone without write
// access are left out. It is best effort: GitHub failures leave parts
// out, and the whole is bounded by MaxThreadContextBytes.
func (p *Processor) threadContext(ctx context.Context, t Trigger) string {
	var b strings.Builder
	inst := t.InstallationID
	needInfo := t.PullRequest || t.Kind != TriggerLabel
	if needInfo {
		info, err := p.apiFor(t).Thread(ctx, inst, t.Repo, t.Number, t.PullRequest)
		if err != nil {
			p.log.Warn("github thread context", "repo", t.Repo, "number", t.Number, "err", err)
		} else {
			if br := strings.Join(strings.Fields(Sanitize(info.HeadBranch)), ""); t.PullRequest && br != "" {
				b.WriteString("\nHead branch: " + clip(br, 255))
			}
			if body := cleanText(info.Body, maxThreadBodyBytes); t.Kind != TriggerLabel && body != "" {
				b.WriteString("\n\nDescription:\n" + quoteLines(body))
			}
		}
	}
	if comments := p.recentComments(ctx, t); len(comments) > 0 {
		b.WriteString("\n\nRecent comments by people with write access (oldest first):")
		for _, c := range comments {
			b.WriteString("\n\n" + c)
		}
	}
	return truncateUTF8(b.String(), MaxThreadContextBytes)
}

// recentComments returns the thread's last writers' comments, each as
// "@login wrote:\n> …", oldest first.
func (p *Processor) recentComments(ctx context.Context, t Trigger) []string {
	list, err := p.apiFor(t).ListComments(ctx, t.InstallationID, t.Repo, t.Number)
	if err != nil {
		p.log.Warn("github thread comments", "repo", t.Repo, "number", t.Number, "err", err)
		return nil
	}
	may := map[string]bool{}
	lookups := 0
	var out []string
	total := 0
	for i := len(list) - 1; i >= 0 && len(out) < MaxThreadComments; i-- {
		c := list[i]
		if c.ID == t.CommentID || c.Login == "" || botLogin(c.Login, c.UserType) || ownComment(c.Body) {
			continue
		}
		login := strings.ToLower(c.Login)
		ok, seen := may[login]
		if !seen {
			switch {
			case p.allow[login]:
				ok = true
			case lookups >= maxThreadLookups:
				ok = false
			default:
				lookups++
				perm, err := p.apiFor(t).Permission(ctx, t.InstallationID, t.Repo, c.Login)
				ok = err == nil && MayTrigger(perm)
			}
			may[login] = ok
		}
		if !ok {
			continue
		}
		text := cleanText(c.Body, maxThreadCommentBytes)
		if text == "" {
			continue
		}
		entry := "@" + clip(strings.Join(strings.Fields(Sanitize(c.Login)), ""), 64) + " wrote:\n" + quoteLines(text)
		if total+len(entry) > maxThreadCommentsSum {
			break
		}
		total += len(entry)
		out = append(out, entry)
	}
	slices.Reverse(out)
	return out
}
