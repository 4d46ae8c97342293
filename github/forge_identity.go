package github

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// Who the forge acts as for one repository (SPEC §4.1 Identity): the
// person who asked, through their stored token, or the App.

// installation returns the App installation covering repo, 0 when there
// is no App or it is not installed there.
func (f *Forge) installation(ctx context.Context, repo string) (int64, error) {
	if f.app == nil {
		return 0, nil
	}
	id, err := f.app.InstallationFor(ctx, repo)
	if app.ErrorCode(err) == app.ENOTFOUND {
		return 0, nil
	}
	return id, err
}

// readToken is the credential a fetch uses: the one that will push
// (decided now, so a question about which account to use comes before the
// agent works, not after), else the App's, else none (public repositories).
func (f *Forge) readToken(ctx context.Context, repo string) (string, error) {
	inst, err := f.installation(ctx, repo)
	if err != nil {
		return "", err
	}
	if sess, ok := app.SessionFrom(ctx); ok && f.getPushers() != nil {
		who, err := f.getPushers().GitHubPusher(ctx, app.PushQuery{Owner: sess.Owner, Origin: sess.Origin, Repo: repo, AppCanPush: inst != 0})
		if err != nil {
			return "", err
		}
		if who.Login != "" {
			return who.Token, nil
		}
	}
	if inst != 0 {
		return f.app.RepoToken(ctx, repo, false)
	}
	if f.app != nil {
		return "", app.Errorf(app.ENOTFOUND, "the GitHub App is not installed on %s", repo)
	}
	return "", nil // a public repository reads without credentials
}

// identity is who publishes to one repository: a client and a git token
// for the same credential.
type identity struct {
	client *gh.Client
	token  string
	// as is the login whose token it is; "" for the App.
	as     string
	pusher app.Pusher
}

func (f *Forge) identityFor(ctx context.Context, req app.PublishRequest, origin app.Origin, repo string) (identity, error) {
	if origin.GitHubAccount == "" {
		// A follow-up keeps the account chosen when the session began.
		origin.GitHubAccount = req.Session.Origin.GitHubAccount
	}
	inst, err := f.installation(ctx, repo)
	if err != nil {
		return identity{}, err
	}
	var who app.Pusher
	if p := f.getPushers(); p != nil {
		who, err = p.GitHubPusher(ctx, app.PushQuery{Owner: req.Session.Owner, Origin: origin, Repo: repo, AppCanPush: inst != 0})
		if err != nil {
			return identity{}, err
		}
	} else if inst == 0 {
		return identity{}, app.Errorf(app.EINVALID, "the GitHub App is not installed on %s", repo)
	}
	if who.Login != "" {
		c, err := f.users.Client(who.Token)
		if err != nil {
			return identity{}, err
		}
		return identity{client: c, token: who.Token, as: who.Login, pusher: who}, nil
	}
	c, err := f.app.InstallationClient(ctx, inst)
	if err != nil {
		return identity{}, err
	}
	tok, err := f.app.RepoToken(ctx, repo, true)
	if err != nil {
		return identity{}, err
	}
	return identity{client: c, token: tok}, nil
}

// rewriting says how the agent's commits are copied before the push.
type rewriting struct {
	// trailer is appended to each message (Co-authored-by for the
	// requester when the App pushes).
	trailer string
	// ident ("Name <email>") replaces author and committer when a person
	// pushes with their own token: the commits are theirs.
	ident string
}

// personIdent is how a stored login signs commits: their profile name
// (else login) and GitHub's noreply address, so the commits link to them.
func (f *Forge) personIdent(p app.Pusher) string {
	name := strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, strings.TrimSpace(p.Name))
	if name == "" {
		name = p.Login
	}
	email := p.Login + "@users.noreply." + f.noreplyHost()
	if p.UserID > 0 {
		email = fmt.Sprintf("%d+%s", p.UserID, email)
	}
	return name + " <" + email + ">"
}

func (f *Forge) noreplyHost() string {
	host := "github.com"
	if p, err := url.Parse(f.webURL); err == nil && p.Hostname() != "" && p.Hostname() != "github.com" {
		host = p.Hostname()
	}
	return host
}

// reident replaces the identity of an author or committer header line
// ("author Name <email> 1700000000 +0000"), keeping its date.
func reident(line, kind, ident string) string {
	rest, ok := strings.CutPrefix(line, kind+" ")
	if !ok {
		return line
	}
	i := strings.LastIndex(rest, "> ")
	if i < 0 {
		return line
	}
	return kind + " " + ident + rest[i+1:]
}

// coAuthor is the Co-authored-by trailer for the requesting GitHub login,
// or "" when the origin is not GitHub or the login is unknown.
func (f *Forge) coAuthor(ctx context.Context, client *gh.Client, origin app.Origin) (string, error) {
	if (origin.Kind != app.OriginGitHubComment && origin.Kind != app.OriginGitHubLabel) || !validLogin(origin.Login) {
		return "", nil
	}
	u, _, err := client.Users.Get(ctx, origin.Login)
	if err != nil {
		if err := APIError(err, "look up "+origin.Login); app.ErrorCode(err) != app.ENOTFOUND {
			return "", err
		}
		return "", nil
	}
	if u.GetType() == "Bot" {
		return "", nil
	}
	return fmt.Sprintf("Co-authored-by: %s <%d+%s@users.noreply.%s>", u.GetLogin(), u.GetID(), u.GetLogin(), f.noreplyHost()), nil
}
