package github

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// ForgeConfig configures a Forge.
type ForgeConfig struct {
	// App is the GitHub App; it may be nil when Users is set, and then
	// every push uses a stored personal token (see Pushers).
	App *App
	// Users builds clients that act as a person through a stored token.
	Users *UserClients
	// Pushers decides whose token pushes a run's commits; nil means
	// always the App. Service.GitHubPusher implements it; SetPushers
	// sets it after the Service exists.
	Pushers Pushers
	// WebURL is the web and git host (default the App's, else
	// "https://github.com").
	WebURL string
	// WorkDir holds temporary clones (default os.TempDir()).
	WorkDir string
	// GitTimeout bounds one git command (default DefaultGitTimeout).
	GitTimeout time.Duration
	Logger     *slog.Logger
}

// Pushers picks who pushes to a repository; app.Service implements it.
type Pushers interface {
	GitHubPusher(ctx context.Context, q app.PushQuery) (app.Pusher, error)
}

// Forge publishes a run's commits to GitHub (app.Forge) and fetches
// repositories for the sandbox (Fetch), as the requester through their
// stored token when they have one that can push (SPEC §4.1 Identity),
// else as the App. Tokens reach git only through its environment.
type Forge struct {
	app     *App
	users   *UserClients
	git     gitCmd
	webURL  string
	work    string
	log     *slog.Logger
	mu      sync.Mutex
	pushers Pushers
}

var _ app.Forge = (*Forge)(nil)

// NewForge builds a Forge.
func NewForge(cfg ForgeConfig) (*Forge, error) {
	if cfg.App == nil && cfg.Users == nil {
		return nil, app.Errorf(app.EINVALID, "the forge needs a GitHub App or stored personal tokens")
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
		if cfg.App != nil {
			cfg.Logger = cfg.App.log
		}
	}
	web := strings.TrimRight(cfg.WebURL, "/")
	if web == "" && cfg.App != nil {
		web = cfg.App.webURL
	}
	if web == "" {
		web = "https://github.com"
	}
	if u, err := url.Parse(web); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, app.Errorf(app.EINVALID, "GitHub web URL must be an http(s) URL")
	}
	return &Forge{
		app:     cfg.App,
		users:   cfg.Users,
		pushers: cfg.Pushers,
		git:     gitCmd{webURL: web, timeout: cfg.GitTimeout},
		webURL:  web,
		work:    cfg.WorkDir,
		log:     cfg.Logger,
	}, nil
}

// SetPushers sets who decides the pushing identity (the Service, which
// is built after the Forge it depends on). Without Users it does nothing.
func (f *Forge) SetPushers(p Pushers) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users != nil {
		f.pushers = p
	}
}

func (f *Forge) getPushers() Pushers {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pushers
}

func (f *Forge) gitURL(repo string) string { return f.webURL + "/" + repo + ".git" }

func (f *Forge) tempDir(prefix string) (string, func(), error) {
	if err := os.MkdirAll(f.work, 0o700); err != nil {
		return "", nil, app.WrapError(app.EINTERNAL, err, "cannot create the work folder")
	}
	dir, err := os.MkdirTemp(f.work, prefix)
	if err != nil {
		return "", nil, app.WrapError(app.EINTERNAL, err, "cannot create a temporary folder")
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Fetch clones src.Repo at src.Ref (default branch when empty; a branch,
// tag, commit or full ref such as refs/pull/3/head) into a temporary
// folder, shallow, with no credentials anywhere in it. It reads with an
// installation token when the App covers the repository, else with the
// token that will push (the session in ctx, see app.WithSession), else
// anonymously. It matches sandbox.RuntimeConfig.Fetch.
func (f *Forge) Fetch(ctx context.Context, src app.Source) (string, func(), error) {
	if _, _, err := splitRepo(src.Repo); err != nil {
		return "", nil, err
	}
	tok, err := f.readToken(ctx, src.Repo)
	if err != nil {
		return "", nil, err
	}
	tmp, cleanup, err := f.tempDir("asb-fetch-")
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(tmp, "src")
	if _, err := f.git.cloneAt(ctx, dir, f.gitURL(src.Repo), tok, src.Ref); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}

// Publish pushes each bundle and opens or reuses the pull request the
// origin calls for. It is idempotent: the commit rewrite (Co-authored-by
// trailer) is deterministic, the remote branch is checked before any
// push, and an open pull request for the branch is reused.
func (f *Forge) Publish(ctx context.Context, req app.PublishRequest) (app.PublishResult, error) {
	var res app.PublishResult
	for i, b := range req.Bundles {
		one, err := f.publishOne(ctx, req, b)
		if err != nil {
			return res, err
		}
		if i == 0 || res.Branch == "" {
			res.Branch = one.Branch
		}
		if res.PullRequestURL == "" {
			res.PullRequestURL = one.PullRequestURL
		}
		if res.PushedAs == "" {
			res.PushedAs = one.PushedAs
		} else if !strings.Contains(","+res.PushedAs+",", ","+one.PushedAs+",") {
			res.PushedAs += "," + one.PushedAs
		}
		res.Commits = append(res.Commits, one.Commits...)
		res.FilesChanged += one.FilesChanged
	}
	return res, nil
}

type target struct {
	repo   string // where the branch is pushed
	branch string
	// owned is set for branches asb creates (they may be rewritten with a lease).
	owned bool
	// pr describes the pull request to open or reuse; nil for none.
	pr *newPR
	// prURL is an existing pull request the push updates.
	prURL string
}

type newPR struct {
	repo, base, title, body string
	draft                   bool
}

func (f *Forge) publishOne(ctx context.Context, req app.PublishRequest, b app.Bundle) (app.PublishResult, error) {
	repo := b.Source.Repo
	if _, _, err := splitRepo(repo); err != nil {
		return app.PublishResult{}, app.Errorf(app.EINVALID, "source %q has no GitHub repository to publish to", b.Source.Dir)
	}
	origin := req.Session.Origin
	if req.Run.Origin.Kind != "" {
		origin = req.Run.Origin
	}
	sameRepo := strings.EqualFold(origin.Repo, repo) && origin.Number > 0
	id, err := f.identityFor(ctx, req, origin, repo)
	if err != nil {
		return app.PublishResult{}, err
	}
	client, tok := id.client, id.token
	tmp, cleanup, err := f.tempDir("asb-publish-")
	if err != nil {
		return app.PublishResult{}, err
	}
	defer cleanup()
	dir := filepath.Join(tmp, "repo.git")
	if _, err := f.git.run(ctx, "", "", nil, "init", "-q", "--bare", dir); err != nil {
		return app.PublishResult{}, err
	}
	remote := f.gitURL(repo)

	// Decide where the commits go.
	var t target
	var pull *gh.PullRequest
	switch {
	case sameRepo && origin.Kind == app.OriginGitHubComment && origin.PullRequest:
		owner, name, _ := splitRepo(repo)
		pull, _, err = client.PullRequests.Get(ctx, owner, name, origin.Number)
		if err != nil {
			return app.PublishResult{}, APIError(err, fmt.Sprintf("read pull request #%d", origin.Number))
		}
		t = f.prTarget(origin, req, pull, repo)
	case sameRepo && origin.Kind == app.OriginGitHubLabel:
		owner, name, _ := splitRepo(repo)
		issue, _, err := client.Issues.Get(ctx, owner, name, origin.Number)
		if err != nil {
			return app.PublishResult{}, APIError(err, fmt.Sprintf("read issue #%d", origin.Number))
		}
		base, err := f.defaultBranch(ctx, client, repo)
		if err != nil {
			return app.PublishResult{}, err
		}
		t = target{repo: repo, owned: true, branch: fmt.Sprintf("agent/issue-%d-%s", origin.Number, slug(issue.GetTitle())),
			pr: &newPR{repo: repo, base: base, draft: true, title: prTitle(issue.GetTitle(), req),
				body: fmt.Sprintf("Fixes #%d\n\n%s", origin.Number, prFooter(req))}}
	default:
		base, err := f.defaultBranch(ctx, client, repo)
		if err != nil {
			return app.PublishResult{}, err
		}
		t = target{repo: repo, owned: true, branch: "agent/" + idSuffix(string(req.Session.ID), "ses_"),
			pr: &newPR{repo: repo, base: base, draft: true, title: prTitle(req.Session.Title, req), body: prFooter(req)}}
	}

	// Bring in what the bundle builds on, then the bundle.
	prereqs, err := bundlePrerequisites(b.Path)
	if err != nil {
		return app.PublishResult{}, err
	}
	if err := f.fetchBase(ctx, dir, remote, tok, b.Source.Ref, pull, prereqs); err != nil {
		return app.PublishResult{}, err
	}
	result, err := f.git.fetchBundle(ctx, dir, b.Path, "refs/asb/result")
	if err != nil {
		return app.PublishResult{}, app.WrapError(app.EINVALID, err, "the agent's bundle for %s does not apply", repo)
	}
	var rw rewriting
	if id.as != "" {
		rw.ident = f.personIdent(id.pusher)
	} else if rw.trailer, err = f.coAuthor(ctx, client, origin); err != nil {
		return app.PublishResult{}, err
	}
	tip, commits, err := f.rewrite(ctx, dir, rw, prereqs, result)
	if err != nil {
		return app.PublishResult{}, err
	}
	res := app.PublishResult{Branch: t.branch, Commits: commits, PushedAs: "app"}
	if id.as != "" {
		res.PushedAs = id.as
	}
	if len(prereqs) > 0 {
		if out, err := f.git.run(ctx, dir, "", nil, "diff", "--no-renames", "--name-only", prereqs[0], tip); err == nil && out != "" {
			res.FilesChanged = len(strings.Split(out, "\n"))
		}
	}

	// Push unless the branch already has these commits.
	pushRemote, pushTok := remote, tok
	if t.repo != repo {
		pushRemote = f.gitURL(t.repo)
	}
	pushed, err := f.pushIfNeeded(ctx, dir, pushRemote, pushTok, tip, t)
	if err != nil && pull != nil && t.repo != repo {
		// A fork that refused us: fall back to a branch in the base repo.
		f.log.Info("fork push refused; opening a pull request in the base repository", "repo", repo, "pr", origin.Number, "err", err)
		t = f.forkFallback(origin, req, pull, repo)
		res.Branch = t.branch
		pushed, err = f.pushIfNeeded(ctx, dir, remote, tok, tip, t)
	}
	if err != nil {
		return app.PublishResult{}, err
	}
	_ = pushed
	res.PullRequestURL = t.prURL
	if t.pr != nil {
		u, err := f.ensurePR(ctx, client, t)
		if err != nil {
			return app.PublishResult{}, err
		}
		res.PullRequestURL = u
	}
	return res, nil
}

// prTarget picks the branch for a comment on a pull request: its head
// branch when it lives in the base repository, or a fork branch that
// allows maintainer edits (falling back when the push is refused).
func (f *Forge) prTarget(origin app.Origin, req app.PublishRequest, pull *gh.PullRequest, repo string) target {
	head := pull.GetHead()
	headRepo := head.GetRepo().GetFullName()
	switch {
	case strings.EqualFold(headRepo, repo):
		return target{repo: repo, branch: head.GetRef(), prURL: pull.GetHTMLURL()}
	case headRepo != "" && pull.GetMaintainerCanModify():
		return target{repo: headRepo, branch: head.GetRef(), prURL: pull.GetHTMLURL()}
	}
	return f.forkFallback(origin, req, pull, repo)
}

func (f *Forge) forkFallback(origin app.Origin, req app.PublishRequest, pull *gh.PullRequest, repo string) target {
	return target{repo: repo, owned: true,
		branch: fmt.Sprintf("agent/pr-%d-%s", origin.Number, idSuffix(string(req.Run.ID), "run_")),
		pr: &newPR{repo: repo, base: pull.GetBase().GetRef(), draft: true,
			title: prTitle(pull.GetTitle(), req),
			body: fmt.Sprintf("Changes for #%d (%s), which cannot be pushed to directly: its branch is in a fork that does not allow edits by maintainers.\n\n%s",
				origin.Number, pull.GetHTMLURL(), prFooter(req))}}
}

func (f *Forge) defaultBranch(ctx context.Context, client *gh.Client, repo string) (string, error) {
	owner, name, _ := splitRepo(repo)
	r, _, err := client.Repositories.Get(ctx, owner, name)
	if err != nil {
		return "", APIError(err, "read "+repo)
	}
	if r.GetDefaultBranch() == "" {
		return "", app.Errorf(app.EINVALID, "%s has no default branch", repo)
	}
	return r.GetDefaultBranch(), nil
}

// fetchBase fetches the commits the bundle builds on: the source ref (or
// the default branch), the PR head, and, if still missing, every branch
// and pull request head.
func (f *Forge) fetchBase(ctx context.Context, dir, remote, tok, ref string, pull *gh.PullRequest, prereqs []string) error {
	missing := func() bool {
		for _, p := range prereqs {
			if _, err := f.git.run(ctx, dir, "", nil, "cat-file", "-e", p+"^{commit}"); err != nil {
				return true
			}
		}
		return false
	}
	specs := []string{}
	if ref == "" {
		specs = append(specs, "+HEAD:refs/asb/src")
	} else if !isSHA(ref) && !strings.HasPrefix(ref, "-") {
		specs = append(specs, "+"+ref+":refs/asb/src")
	}
	if pull != nil {
		specs = append(specs, fmt.Sprintf("+refs/pull/%d/head:refs/asb/pull", pull.GetNumber()))
	}
	if len(specs) > 0 {
		args := append([]string{"fetch", "-q", "--no-tags", remote}, specs...)
		if _, err := f.git.run(ctx, dir, tok, nil, args...); err != nil && app.ErrorCode(err) != app.ENOTFOUND {
			return err
		}
	}
	if !missing() {
		return nil
	}
	if _, err := f.git.run(ctx, dir, tok, nil, "fetch", "-q", "--no-tags", remote,
		"+refs/heads/*:refs/asb/heads/*", "+refs/pull/*/head:refs/asb/pulls/*"); err != nil {
		return err
	}
	if missing() {
		return app.Errorf(app.EINVALID, "the commit the agent started from is no longer on GitHub")
	}
	return nil
}

// rewrite copies the agent's commits (prereqs..result) as rw says,
// keeping dates, so the result is the same on every call.
func (f *Forge) rewrite(ctx context.Context, dir string, rw rewriting, prereqs []string, result string) (string, []string, error) {
	args := []string{"rev-list", "--reverse", "--topo-order", result}
	for _, p := range prereqs {
		args = append(args, "^"+p)
	}
	out, err := f.git.run(ctx, dir, "", nil, args...)
	if err != nil {
		return "", nil, err
	}
	list := strings.Fields(out)
	if len(list) == 0 {
		return "", nil, app.Errorf(app.EINVALID, "the agent's bundle has no new commits")
	}
	trailer := rw.trailer
	if trailer == "" && rw.ident == "" {
		return result, list, nil
	}
	mapped := map[string]string{}
	var commits []string
	tip := result
	for _, sha := range list {
		raw, err := f.git.run(ctx, dir, "", nil, "cat-file", "commit", sha)
		if err != nil {
			return "", nil, err
		}
		header, msg, _ := strings.Cut(raw, "\n\n")
		var hdr []string
		inSig := false
		for _, line := range strings.Split(header, "\n") {
			if inSig && strings.HasPrefix(line, " ") {
				continue
			}
			inSig = false
			if strings.HasPrefix(line, "gpgsig") || strings.HasPrefix(line, "gpgsig-sha256") {
				inSig = true // a signature cannot survive the rewrite
				continue
			}
			if p, ok := strings.CutPrefix(line, "parent "); ok {
				if m, ok := mapped[p]; ok {
					line = "parent " + m
				}
			}
			if rw.ident != "" {
				line = reident(reident(line, "author", rw.ident), "committer", rw.ident)
			}
			hdr = append(hdr, line)
		}
		if trailer != "" && !strings.Contains(strings.ToLower(msg), strings.ToLower(trailer)) {
			msg, err = f.git.run(ctx, dir, "", []byte(msg), "interpret-trailers", "--if-exists", "addIfDifferent", "--trailer", trailer)
			if err != nil {
				return "", nil, err
			}
		}
		body := strings.Join(hdr, "\n") + "\n\n" + strings.TrimRight(msg, "\n") + "\n"
		nsha, err := f.git.run(ctx, dir, "", []byte(body), "hash-object", "-t", "commit", "-w", "--stdin")
		if err != nil {
			return "", nil, err
		}
		mapped[sha] = nsha
		commits = append(commits, nsha)
		tip = nsha
	}
	if _, err := f.git.run(ctx, dir, "", nil, "update-ref", "refs/asb/publish", tip); err != nil {
		return "", nil, err
	}
	return tip, commits, nil
}

// pushIfNeeded pushes tip to the target branch unless the branch already
// contains it. It reports whether it pushed.
func (f *Forge) pushIfNeeded(ctx context.Context, dir, remote, tok, tip string, t target) (bool, error) {
	head, err := f.git.remoteRef(ctx, dir, remote, tok, "refs/heads/"+t.branch)
	if err != nil {
		return false, err
	}
	if head == tip {
		return false, nil
	}
	if head != "" {
		if _, err := f.git.run(ctx, dir, tok, nil, "fetch", "-q", "--no-tags", remote, "+refs/heads/"+t.branch+":refs/asb/target"); err != nil {
			return false, err
		}
		if _, err := f.git.run(ctx, dir, "", nil, "merge-base", "--is-ancestor", tip, head); err == nil {
			return false, nil // already published (and maybe built on since)
		}
	}
	lease := ""
	if t.owned {
		lease = head
		if lease == "" {
			lease = "none"
		}
	}
	if err := f.git.push(ctx, dir, remote, tok, tip, t.branch, lease); err != nil {
		return false, err
	}
	return true, nil
}

// ensurePR returns the open pull request for the target branch, opening
// a draft one if there is none.
func (f *Forge) ensurePR(ctx context.Context, client *gh.Client, t target) (string, error) {
	owner, name, _ := splitRepo(t.pr.repo)
	headOwner, _, _ := splitRepo(t.repo)
	list, _, err := client.PullRequests.List(ctx, owner, name, &gh.PullRequestListOptions{
		State: "open", Head: headOwner + ":" + t.branch, ListOptions: gh.ListOptions{PerPage: 10},
	})
	if err != nil {
		return "", APIError(err, "list pull requests of "+t.pr.repo)
	}
	for _, p := range list {
		if strings.EqualFold(p.GetHead().GetRef(), t.branch) {
			return p.GetHTMLURL(), nil
		}
	}
	p, _, err := client.PullRequests.Create(ctx, owner, name, &gh.NewPullRequest{
		Title: gh.String(t.pr.title), Head: gh.String(t.branch), Base: gh.String(t.pr.base),
		Body: gh.String(t.pr.body), Draft: gh.Bool(t.pr.draft), MaintainerCanModify: gh.Bool(true),
	})
	if err != nil {
		return "", APIError(err, "open a pull request in "+t.pr.repo)
	}
	return p.GetHTMLURL(), nil
}

func prTitle(title string, req app.PublishRequest) string {
	title = strings.TrimSpace(title)
	if title == "" {
		title = strings.TrimSpace(req.Session.Title)
	}
	if title == "" {
		title = "Changes by asb"
	}
	if len(title) > 200 {
		title = truncateUTF8(title, 200)
	}
	return title
}

func prFooter(req app.PublishRequest) string {
	s := "Opened by asb for session `" + string(req.Session.ID) + "`"
	if req.Run.ID != "" {
		s += ", run `" + string(req.Run.ID) + "`"
	}
	return s + "."
}

// idSuffix is an id without its prefix, shortened for branch names.
func idSuffix(id, prefix string) string {
	s := strings.TrimPrefix(id, prefix)
	if len(s) > 8 {
		s = s[:8]
	}
	if s == "" {
		s = strconv.FormatInt(time.Now().Unix(), 36)
	}
	return s
}

// slug makes a short branch-safe slug of a title.
func slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "task"
	}
	return s
}
