package githubtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/github/githubtest"
)

func TestUsersOrgsAndPermissions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	alice := w.userClient(t, "alice")

	me, resp, err := alice.Users.Get(w.ctx, "")
	must(t, err, "GET /user")
	if me.GetLogin() != "alice" || me.GetName() != "Alice Liddell" || me.GetEmail() != "alice@example.com" || me.GetType() != "User" {
		t.Fatalf("me = %+v", me)
	}
	if got := resp.Header.Get("X-OAuth-Scopes"); got != "repo, read:org" {
		t.Fatalf("X-OAuth-Scopes = %q", got)
	}
	orgs, _, err := alice.Organizations.List(w.ctx, "", nil)
	must(t, err, "GET /user/orgs")
	if len(orgs) != 1 || orgs[0].GetLogin() != "acme" {
		t.Fatalf("orgs = %+v", orgs)
	}
	bot, _, err := alice.Users.Get(w.ctx, w.srv.BotLogin())
	must(t, err, "GET /users/{bot}")
	if bot.GetType() != "Bot" {
		t.Fatalf("bot type %q", bot.GetType())
	}
	_, _, err = alice.Users.Get(w.ctx, "nobody")
	wantStatus(t, err, http.StatusNotFound, "unknown user")
	_, _, err = w.anonClient(t).Users.Get(w.ctx, "")
	wantStatus(t, err, http.StatusUnauthorized, "GET /user without a token")
	_, _, err = enterprise(t, w.srv, nil).WithAuthToken("ghp_nope").Users.Get(w.ctx, "")
	wantStatus(t, err, http.StatusUnauthorized, "bad token")

	botc, _ := w.botClient(t)
	for _, c := range []struct {
		repo, login, want string
	}{
		{"widgets", "alice", "write"}, {"widgets", "bob", "read"}, {"widgets", "carol", "read"},
		{"widgets", "acme", "admin"}, {"secret", "alice", "admin"}, {"secret", "carol", "none"},
	} {
		p, _, err := botc.Repositories.GetPermissionLevel(w.ctx, "acme", c.repo, c.login)
		must(t, err, "permission "+c.login)
		if p.GetPermission() != c.want || p.GetUser().GetLogin() != c.login {
			t.Errorf("%s on %s: %q, want %q", c.login, c.repo, p.GetPermission(), c.want)
		}
	}
	w.srv.SetPermission("acme/widgets", "carol", "maintain")
	if p, _, _ := botc.Repositories.GetPermissionLevel(w.ctx, "acme", "widgets", "carol"); p.GetPermission() != "write" {
		t.Fatalf("maintain folds to %q", p.GetPermission())
	}
	_, _, err = botc.Repositories.GetPermissionLevel(w.ctx, "acme", "widgets", "nobody")
	wantStatus(t, err, http.StatusNotFound, "permission of an unknown user")
	_, _, err = w.userClient(t, "bob").Repositories.GetPermissionLevel(w.ctx, "acme", "widgets", "alice")
	wantStatus(t, err, http.StatusForbidden, "permission lookup by a reader")

	r, _, err := alice.Repositories.Get(w.ctx, "acme", "widgets")
	must(t, err, "GET repo")
	if !r.GetPermissions()["push"] || r.GetPermissions()["admin"] || r.GetOwner().GetType() != "Organization" {
		t.Fatalf("repo as alice = %+v", r.GetPermissions())
	}
	_, _, err = w.userClient(t, "carol").Repositories.Get(w.ctx, "acme", "secret")
	wantStatus(t, err, http.StatusNotFound, "private repo without access")
	_, resp, err = w.anonClient(t).Repositories.Get(w.ctx, "acme", "widgets")
	must(t, err, "public repo anonymously")
	if resp.Rate.Limit != 60 {
		t.Fatalf("anonymous limit %d", resp.Rate.Limit)
	}
	_, _, err = w.anonClient(t).Repositories.Get(w.ctx, "acme", "secret")
	wantStatus(t, err, http.StatusNotFound, "private repo anonymously")

	b, _, err := alice.Repositories.GetBranch(w.ctx, "acme", "widgets", "main", 0)
	must(t, err, "GET branch")
	if b.GetCommit().GetSHA() != w.srv.Branch("acme/widgets", "main") {
		t.Fatalf("branch sha %s", b.GetCommit().GetSHA())
	}
}

func TestIssuesCommentsReactionsLabels(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Bug", Body: "It breaks", Labels: []string{"bug"}})
	bot, _ := w.botClient(t)

	is, _, err := bot.Issues.Get(w.ctx, "acme", "widgets", 1)
	must(t, err, "GET issue")
	if is.GetTitle() != "Bug" || is.GetUser().GetLogin() != "alice" || is.GetAuthorAssociation() != "MEMBER" ||
		len(is.Labels) != 1 || is.IsPullRequest() || is.GetHTMLURL() != w.srv.URL+"/acme/widgets/issues/1" {
		t.Fatalf("issue = %+v", is)
	}

	c, resp, err := bot.Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("On it")})
	must(t, err, "create comment")
	if resp.StatusCode != http.StatusCreated || c.GetUser().GetLogin() != "asb-test[bot]" || c.GetUser().GetType() != "Bot" ||
		!strings.HasSuffix(c.GetHTMLURL(), "/acme/widgets/issues/1#issuecomment-"+itoa(c.GetID())) {
		t.Fatalf("comment = %+v", c)
	}
	c, _, err = bot.Issues.EditComment(w.ctx, "acme", "widgets", c.GetID(), &github.IssueComment{Body: github.String("Done")})
	must(t, err, "edit comment")
	if got, _ := w.srv.Comment(c.GetID()); got.Body != "Done" || !got.ViaApp || got.User != "asb-test[bot]" {
		t.Fatalf("stored comment %+v", got)
	}
	got, _, err := bot.Issues.GetComment(w.ctx, "acme", "widgets", c.GetID())
	must(t, err, "get comment")
	if got.GetBody() != "Done" {
		t.Fatalf("body %q", got.GetBody())
	}
	_, _, err = w.userClient(t, "bob").Issues.EditComment(w.ctx, "acme", "widgets", c.GetID(), &github.IssueComment{Body: github.String("x")})
	wantStatus(t, err, http.StatusForbidden, "reader edits someone's comment")
	_, _, err = w.userClient(t, "carol").Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("+1")})
	must(t, err, "anyone comments on a public repo")
	_, _, err = w.anonClient(t).Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
	wantStatus(t, err, http.StatusUnauthorized, "anonymous comment")
	_, _, err = bot.Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("")})
	wantStatus(t, err, http.StatusUnprocessableEntity, "empty comment")
	_, _, err = bot.Issues.CreateComment(w.ctx, "acme", "widgets", 99, &github.IssueComment{Body: github.String("x")})
	wantStatus(t, err, http.StatusNotFound, "comment on a missing issue")
	if n := len(w.srv.Comments("acme/widgets", 1)); n != 2 {
		t.Fatalf("%d comments", n)
	}

	// Reactions: 201 when new, 200 when it already exists.
	user := w.srv.AddComment("acme/widgets", 1, "alice", "/agent fix it")
	r1, resp1, err := bot.Reactions.CreateIssueCommentReaction(w.ctx, "acme", "widgets", user.ID, "eyes")
	must(t, err, "react")
	r2, resp2, err := bot.Reactions.CreateIssueCommentReaction(w.ctx, "acme", "widgets", user.ID, "eyes")
	must(t, err, "react again")
	if resp1.StatusCode != 201 || resp2.StatusCode != 200 || r1.GetID() != r2.GetID() || r1.GetContent() != "eyes" {
		t.Fatalf("reactions %d/%d %d/%d", resp1.StatusCode, resp2.StatusCode, r1.GetID(), r2.GetID())
	}
	if rs := w.srv.Reactions(user.ID); len(rs) != 1 || rs[0].User != "asb-test[bot]" || rs[0].Content != "eyes" {
		t.Fatalf("stored reactions %+v", rs)
	}
	_, _, err = bot.Reactions.CreateIssueCommentReaction(w.ctx, "acme", "widgets", user.ID, "shrug")
	wantStatus(t, err, http.StatusUnprocessableEntity, "bad reaction")
	_, _, err = bot.Reactions.CreateIssueReaction(w.ctx, "acme", "widgets", 1, "rocket")
	must(t, err, "issue reaction")
	if rs := w.srv.IssueReactions("acme/widgets", 1); len(rs) != 1 || rs[0].Content != "rocket" {
		t.Fatalf("issue reactions %+v", rs)
	}
	cm, _, _ := bot.Issues.GetComment(w.ctx, "acme", "widgets", user.ID)
	if cm.GetReactions().GetEyes() != 1 || cm.GetReactions().GetTotalCount() != 1 {
		t.Fatalf("rollup %+v", cm.GetReactions())
	}

	// Labels, and the issue events they leave.
	labels, _, err := bot.Issues.AddLabelsToIssue(w.ctx, "acme", "widgets", 1, []string{"agent:working"})
	must(t, err, "add label")
	if len(labels) != 2 || labels[1].GetName() != "agent:working" {
		t.Fatalf("labels %+v", labels)
	}
	_, err = bot.Issues.RemoveLabelForIssue(w.ctx, "acme", "widgets", 1, "bug")
	must(t, err, "remove label")
	_, err = bot.Issues.RemoveLabelForIssue(w.ctx, "acme", "widgets", 1, "bug")
	wantStatus(t, err, http.StatusNotFound, "remove a label the issue lacks")
	_, _, err = w.userClient(t, "bob").Issues.AddLabelsToIssue(w.ctx, "acme", "widgets", 1, []string{"x"})
	wantStatus(t, err, http.StatusForbidden, "reader adds a label")
	if got := w.srv.Labels("acme/widgets", 1); len(got) != 1 || got[0] != "agent:working" {
		t.Fatalf("labels %v", got)
	}
	evs, _, err := bot.Issues.ListRepositoryEvents(w.ctx, "acme", "widgets", nil)
	must(t, err, "issue events")
	if len(evs) != 3 || evs[0].GetEvent() != "unlabeled" || evs[0].GetLabel().GetName() != "bug" ||
		evs[1].GetEvent() != "labeled" || evs[1].GetActor().GetLogin() != "asb-test[bot]" ||
		evs[2].GetActor().GetLogin() != "alice" || evs[2].GetIssue().GetNumber() != 1 {
		t.Fatalf("events newest first: %+v", evs)
	}

	is, _, err = bot.Issues.Edit(w.ctx, "acme", "widgets", 1, &github.IssueRequest{State: github.String("closed")})
	must(t, err, "close issue")
	if is.GetState() != "closed" || is.GetClosedBy().GetLogin() != "asb-test[bot]" {
		t.Fatalf("closed issue %+v", is)
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestRepoCommentsSinceSortPaging(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	w := newWorld(t, githubtest.Options{Now: clk.now})
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "one"})
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "bob", Title: "two"})
	var ids []int64
	for i := 0; i < 5; i++ {
		clk.add(time.Minute)
		ids = append(ids, w.srv.AddComment("acme/widgets", 1+i%2, "alice", "c"+itoa(int64(i))).ID)
	}
	bot, _ := w.botClient(t)
	since := clk.t.Add(-2 * time.Minute) // exactly the third comment: since is inclusive
	opts := &github.IssueListCommentsOptions{
		Since: &since, Sort: github.String("updated"), Direction: github.String("asc"),
		ListOptions: github.ListOptions{PerPage: 2},
	}
	page1, resp, err := bot.Issues.ListComments(w.ctx, "acme", "widgets", 0, opts)
	must(t, err, "list page 1")
	if len(page1) != 2 || page1[0].GetID() != ids[2] || page1[1].GetID() != ids[3] || resp.NextPage != 2 || resp.LastPage != 2 {
		t.Fatalf("page 1: %d comments, next %d last %d", len(page1), resp.NextPage, resp.LastPage)
	}
	if !strings.Contains(resp.Header.Get("Link"), w.srv.URL+"/api/v3/repos/acme/widgets/issues/comments?") {
		t.Fatalf("Link %q", resp.Header.Get("Link"))
	}
	opts.Page = resp.NextPage
	page2, resp, err := bot.Issues.ListComments(w.ctx, "acme", "widgets", 0, opts)
	must(t, err, "list page 2")
	if len(page2) != 1 || page2[0].GetID() != ids[4] || resp.NextPage != 0 {
		t.Fatalf("page 2: %+v next %d", page2, resp.NextPage)
	}

	// An edit moves a comment to the end of sort=updated.
	clk.add(time.Minute)
	w.srv.EditComment(ids[0], "edited")
	all, _, err := bot.Issues.ListComments(w.ctx, "acme", "widgets", 0, &github.IssueListCommentsOptions{
		Since: &since, Sort: github.String("updated"), Direction: github.String("asc"),
	})
	must(t, err, "list after edit")
	if len(all) != 4 || all[3].GetID() != ids[0] || all[3].GetBody() != "edited" {
		t.Fatalf("after edit: %d, last %d", len(all), all[len(all)-1].GetID())
	}
	desc, _, err := bot.Issues.ListComments(w.ctx, "acme", "widgets", 0, &github.IssueListCommentsOptions{
		Sort: github.String("created"), Direction: github.String("desc"),
	})
	must(t, err, "list desc")
	if len(desc) != 5 || desc[0].GetID() != ids[4] {
		t.Fatalf("desc first %d", desc[0].GetID())
	}
	one, _, err := bot.Issues.ListComments(w.ctx, "acme", "widgets", 2, nil)
	must(t, err, "list one issue")
	if len(one) != 2 || one[0].GetID() != ids[1] {
		t.Fatalf("issue 2 comments %+v", one)
	}
	if one[0].GetCreatedAt().Time != time.Date(2024, 5, 1, 12, 2, 0, 0, time.UTC) {
		t.Fatalf("created_at %v", one[0].GetCreatedAt())
	}
}

func TestETagsAndRateLimitHeaders(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "one"})
	w.srv.AddComment("acme/widgets", 1, "alice", "hello")
	bot, _ := w.botClient(t)

	get := func(etag string) (*github.Response, error) {
		req, err := bot.NewRequest("GET", "repos/acme/widgets/issues/comments?sort=updated&direction=asc&per_page=100", nil)
		must(t, err, "request")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		var out []*github.IssueComment
		return bot.Do(w.ctx, req, &out)
	}
	resp, err := get("")
	must(t, err, "first GET")
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Rate.Limit != 5000 || resp.Header.Get("X-RateLimit-Used") == "" || resp.Header.Get("X-RateLimit-Reset") == "" {
		t.Fatalf("headers %v", resp.Header)
	}
	remaining := resp.Rate.Remaining

	resp, err = get(etag)
	if status(t, err) != http.StatusNotModified {
		t.Fatalf("conditional GET: %v", err)
	}
	if resp.Header.Get("X-RateLimit-Remaining") != itoa(int64(remaining)) || resp.Header.Get("ETag") != etag {
		t.Fatalf("304 cost a request: remaining %s, was %d", resp.Header.Get("X-RateLimit-Remaining"), remaining)
	}

	w.srv.AddComment("acme/widgets", 1, "bob", "news")
	resp, err = get(etag)
	must(t, err, "GET after a change")
	if resp.Header.Get("ETag") == etag || resp.Rate.Remaining != remaining-1 {
		t.Fatalf("etag %s remaining %d", resp.Header.Get("ETag"), resp.Rate.Remaining)
	}
	q := w.srv.Requests(githubtest.Match("GET", "/api/v3/repos/acme/widgets/issues/comments"))
	if len(q) != 3 || q[1].Status != http.StatusNotModified || q[1].Header.Get("If-None-Match") != etag {
		t.Fatalf("recorded %v", q)
	}

	// The user's own events feed: ETag, X-Poll-Interval, private events only for the user.
	w.srv.AddIssue("acme/secret", githubtest.IssueSpec{Author: "alice", Title: "private"})
	w.srv.AddComment("acme/secret", 1, "alice", "/agent look")
	alice := w.userClient(t, "alice")
	evs, resp, err := alice.Activity.ListEventsPerformedByUser(w.ctx, "alice", false, nil)
	must(t, err, "events feed")
	if resp.Header.Get("X-Poll-Interval") != "60" || resp.Header.Get("ETag") == "" {
		t.Fatalf("feed headers %v", resp.Header)
	}
	if len(evs) != 4 || evs[0].GetType() != "IssueCommentEvent" || evs[0].GetRepo().GetName() != "acme/secret" || evs[0].GetPublic() {
		t.Fatalf("feed %d events, first %s %s", len(evs), evs[0].GetType(), evs[0].GetRepo().GetName())
	}
	p, err := evs[0].ParsePayload()
	must(t, err, "payload")
	if ice, ok := p.(*github.IssueCommentEvent); !ok || ice.GetComment().GetBody() != "/agent look" || ice.GetIssue().GetNumber() != 1 {
		t.Fatalf("payload %+v", p)
	}
	req, _ := alice.NewRequest("GET", "users/alice/events", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	_, err = alice.Do(w.ctx, req, nil)
	if status(t, err) != http.StatusNotModified {
		t.Fatalf("feed 304: %v", err)
	}
	pub, _, err := w.userClient(t, "bob").Activity.ListEventsPerformedByUser(w.ctx, "alice", false, nil)
	must(t, err, "someone else's view")
	for _, e := range pub {
		if e.GetRepo().GetName() == "acme/secret" {
			t.Fatal("private event shown to another user")
		}
	}
}

func TestPullRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "Bug", Labels: []string{"agent"}})
	sha := w.srv.Commit("acme/widgets", "agent/issue-1-bug", "Fix the bug", map[string]string{"fix.txt": "fixed\n"})
	bot, _ := w.botClient(t)

	pr, resp, err := bot.PullRequests.Create(w.ctx, "acme", "widgets", &github.NewPullRequest{
		Title: github.String("Fix the bug"), Head: github.String("agent/issue-1-bug"), Base: github.String("main"),
		Body: github.String("Fixes #1"), Draft: github.Bool(true),
	})
	must(t, err, "create PR")
	if resp.StatusCode != 201 || pr.GetNumber() != 2 || !pr.GetDraft() || pr.GetHead().GetSHA() != sha ||
		pr.GetUser().GetLogin() != "asb-test[bot]" || pr.GetHead().GetRepo().GetFullName() != "acme/widgets" ||
		pr.GetBase().GetRef() != "main" || pr.GetCommits() != 1 || pr.GetChangedFiles() != 1 ||
		pr.GetHTMLURL() != w.srv.URL+"/acme/widgets/pull/2" {
		t.Fatalf("pr = %+v", pr)
	}
	if got := w.srv.LinkedIssues("acme/widgets", 2); len(got) != 1 || got[0] != 1 {
		t.Fatalf("linked %v", got)
	}
	if w.srv.Branch("acme/widgets", "refs/pull/2/head") != sha {
		t.Fatal("refs/pull/2/head missing")
	}

	_, _, err = bot.PullRequests.Create(w.ctx, "acme", "widgets", &github.NewPullRequest{
		Title: github.String("again"), Head: github.String("agent/issue-1-bug"), Base: github.String("main"),
	})
	wantStatus(t, err, http.StatusUnprocessableEntity, "duplicate PR")
	var er *github.ErrorResponse
	if !asErr(err, &er) || len(er.Errors) != 1 || er.Errors[0].Message != "A pull request already exists for acme:agent/issue-1-bug." {
		t.Fatalf("duplicate error %+v", err)
	}
	for head, what := range map[string]string{"nope": "missing head branch", "main": "no commits"} {
		_, _, err = bot.PullRequests.Create(w.ctx, "acme", "widgets", &github.NewPullRequest{
			Title: github.String("x"), Head: github.String(head), Base: github.String("main"),
		})
		wantStatus(t, err, http.StatusUnprocessableEntity, what)
	}

	list, _, err := bot.PullRequests.List(w.ctx, "acme", "widgets", &github.PullRequestListOptions{Head: "acme:agent/issue-1-bug", State: "open"})
	must(t, err, "list by head")
	if len(list) != 1 || list[0].GetNumber() != 2 {
		t.Fatalf("list %+v", list)
	}
	list, _, _ = bot.PullRequests.List(w.ctx, "acme", "widgets", &github.PullRequestListOptions{Head: "acme:other"})
	if len(list) != 0 {
		t.Fatalf("list other %+v", list)
	}
	is, _, err := bot.Issues.Get(w.ctx, "acme", "widgets", 2)
	must(t, err, "PR as issue")
	if !is.IsPullRequest() || !is.GetDraft() {
		t.Fatalf("issue side %+v", is)
	}

	// A fork PR: the head lives in carol's fork; refs/pull/<n>/head follows it.
	w.srv.Fork("acme/widgets", "carol")
	w.srv.Commit("carol/widgets", "patch", "Patch", map[string]string{"README.md": "# better\n"})
	carol := w.userClient(t, "carol")
	fpr, _, err := carol.PullRequests.Create(w.ctx, "acme", "widgets", &github.NewPullRequest{
		Title: github.String("Patch"), Head: github.String("carol:patch"), Base: github.String("main"),
		MaintainerCanModify: github.Bool(true),
	})
	must(t, err, "fork PR")
	if fpr.GetHead().GetRepo().GetFullName() != "carol/widgets" || !fpr.GetHead().GetRepo().GetFork() ||
		!fpr.GetMaintainerCanModify() || fpr.GetHead().GetLabel() != "carol:patch" {
		t.Fatalf("fork pr head %+v", fpr.GetHead())
	}
	next := w.srv.Commit("carol/widgets", "patch", "More", map[string]string{"b.txt": "b\n"})
	got, _, err := bot.PullRequests.Get(w.ctx, "acme", "widgets", fpr.GetNumber())
	must(t, err, "get fork PR")
	if got.GetHead().GetSHA() != next || w.srv.Branch("acme/widgets", "refs/pull/3/head") != next || got.GetCommits() != 2 {
		t.Fatalf("head did not follow: %s vs %s", got.GetHead().GetSHA(), next)
	}
	if prs := w.srv.PullRequests("acme/widgets"); len(prs) != 2 || prs[1].HeadRepo != "carol/widgets" || !prs[0].Draft {
		t.Fatalf("PullRequests %+v", prs)
	}

	// Check runs are for Apps only.
	cr, _, err := bot.Checks.CreateCheckRun(w.ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name: "asb", HeadSHA: sha, Status: github.String("in_progress"), DetailsURL: github.String("http://asb.invalid/r/1"),
	})
	must(t, err, "create check run")
	cr, _, err = bot.Checks.UpdateCheckRun(w.ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "asb", Conclusion: github.String("success"),
		Output: &github.CheckRunOutput{Title: github.String("Done"), Summary: github.String("All good")},
	})
	must(t, err, "update check run")
	if cr.GetStatus() != "completed" || cr.GetConclusion() != "success" || cr.GetOutput().GetTitle() != "Done" {
		t.Fatalf("check run %+v", cr)
	}
	if runs := w.srv.CheckRuns("acme/widgets"); len(runs) != 1 || runs[0].Summary != "All good" {
		t.Fatalf("runs %+v", runs)
	}
	_, _, err = w.userClient(t, "alice").Checks.CreateCheckRun(w.ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: sha})
	wantStatus(t, err, http.StatusForbidden, "check run with a personal token")
}

func TestPrimaryRateLimitRunsOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{RateLimit: 3})
	alice := w.userClient(t, "alice")
	for i := 0; i < 3; i++ {
		_, resp, err := alice.Repositories.Get(w.ctx, "acme", "widgets")
		must(t, err, "within the limit")
		if resp.Rate.Remaining != 2-i {
			t.Fatalf("remaining %d", resp.Rate.Remaining)
		}
	}
	_, _, err := alice.Repositories.Get(w.ctx, "acme", "widgets")
	var rle *github.RateLimitError
	if !asErr(err, &rle) || rle.Rate.Remaining != 0 || time.Until(rle.Rate.Reset.Time) < 50*time.Minute {
		t.Fatalf("want *github.RateLimitError, got %T %v", err, err)
	}
	// Another credential has its own window; ExhaustRateLimit empties one.
	tok := w.srv.AddToken("bob")
	bob := enterprise(t, w.srv, nil).WithAuthToken(tok)
	_, _, err = bob.Repositories.Get(w.ctx, "acme", "widgets")
	must(t, err, "bob has his own limit")
	w.srv.ExhaustRateLimit(tok, time.Now().Add(30*time.Minute))
	_, _, err = enterprise(t, w.srv, nil).WithAuthToken(tok).Repositories.Get(w.ctx, "acme", "widgets")
	if !asErr(err, &rle) {
		t.Fatalf("after ExhaustRateLimit: %T %v", err, err)
	}
	rl, _, err := enterprise(t, w.srv, nil).WithAuthToken(tok).RateLimits(w.ctx)
	must(t, err, "GET /rate_limit is free")
	if rl.GetCore().Remaining != 0 {
		t.Fatalf("core %+v", rl.GetCore())
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestConcurrentUse drives one server from many goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	w.srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "alice", Title: "busy"})
	bot, _ := w.botClient(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				c, _, err := bot.Issues.CreateComment(w.ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("hi")})
				if err == nil {
					_, _, err = bot.Reactions.CreateIssueCommentReaction(w.ctx, "acme", "widgets", c.GetID(), "eyes")
				}
				if err == nil {
					_, _, err = bot.Issues.ListComments(w.ctx, "acme", "widgets", 0, nil)
				}
				if err != nil {
					errs <- err
					return
				}
				w.srv.Requests(nil)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(w.srv.Comments("acme/widgets", 1)); n != 40 {
		t.Fatalf("%d comments", n)
	}
}
