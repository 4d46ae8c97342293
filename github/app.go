package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// AppConfig configures the GitHub App identity.
type AppConfig struct {
	AppID         int64
	PrivateKeyPEM []byte
	// APIURL is the REST base URL (GitHub Enterprise style, e.g.
	// "https://ghe.example.com/api/v3/"); empty means api.github.com.
	APIURL string
	// WebURL is the web and git host (default "https://github.com").
	WebURL string
	// Transport is the shared round tripper (default http.DefaultTransport).
	Transport http.RoundTripper
	// RequestTimeout bounds one REST call, installation token included
	// (default DefaultRequestTimeout): a GitHub that stops answering must
	// not hold the delivery processor or the tracker forever.
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// DefaultRequestTimeout bounds one GitHub REST call.
const DefaultRequestTimeout = 30 * time.Second

// App is asb's GitHub App: an App (JWT) client plus one cached client per
// installation (go-github keeps rate-limit state per client).
type App struct {
	cfg       AppConfig
	log       *slog.Logger
	atr       *ghinstallation.AppsTransport
	appClient *gh.Client
	apiURL    string // without trailing slash
	webURL    string // without trailing slash

	mu       sync.Mutex
	inst     map[int64]*gh.Client
	repoInst map[string]int64
	// noInst remembers, for a short while, repositories the App is not
	// installed on: with personal tokens, the tracker and forge ask for
	// every edit and push, and each answer would be the same 404.
	noInst map[string]time.Time
}

// NewApp builds the App from its id and private key.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.AppID <= 0 || len(cfg.PrivateKeyPEM) == 0 {
		return nil, app.Errorf(app.EINVALID, "GitHub App id and private key are required")
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	a := &App{cfg: cfg, log: cfg.Logger, inst: map[int64]*gh.Client{}, repoInst: map[string]int64{}, noInst: map[string]time.Time{}}
	a.webURL = strings.TrimRight(cfg.WebURL, "/")
	if a.webURL == "" {
		a.webURL = "https://github.com"
	}
	if u, err := url.Parse(a.webURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, app.Errorf(app.EINVALID, "GitHub web URL must be an http(s) URL")
	}
	atr, err := ghinstallation.NewAppsTransport(cfg.Transport, cfg.AppID, cfg.PrivateKeyPEM)
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "GitHub App private key is not a valid RSA key")
	}
	a.atr = atr
	if cfg.APIURL != "" {
		a.apiURL = strings.TrimRight(cfg.APIURL, "/")
		atr.BaseURL = a.apiURL // before any installation transport copies it
	} else {
		a.apiURL = strings.TrimRight(atr.BaseURL, "/")
	}
	a.appClient, err = a.newClient(atr)
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (a *App) newClient(rt http.RoundTripper) (*gh.Client, error) {
	c := gh.NewClient(&http.Client{Transport: rt, Timeout: a.cfg.RequestTimeout})
	if a.cfg.APIURL == "" {
		return c, nil
	}
	c, err := c.WithEnterpriseURLs(a.apiURL+"/", a.apiURL+"/")
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "GitHub API URL is not valid")
	}
	return c, nil
}

// WebURL is the web and git host without a trailing slash.
func (a *App) WebURL() string { return a.webURL }

// AppClient is the client authenticated as the App itself (JWT).
func (a *App) AppClient() *gh.Client { return a.appClient }

// InstallationClient returns the cached client of an installation.
func (a *App) InstallationClient(ctx context.Context, installationID int64) (*gh.Client, error) {
	if installationID <= 0 {
		return nil, app.Errorf(app.EINVALID, "no GitHub App installation")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.inst[installationID]; ok {
		return c, nil
	}
	itr := ghinstallation.NewFromAppsTransport(a.atr, installationID)
	itr.BaseURL = a.apiURL
	c, err := a.newClient(itr)
	if err != nil {
		return nil, err
	}
	a.inst[installationID] = c
	return c, nil
}

// InstallationFor returns the installation that covers repo ("owner/name").
func (a *App) InstallationFor(ctx context.Context, repo string) (int64, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return 0, err
	}
	key := strings.ToLower(owner + "/" + name)
	a.mu.Lock()
	id, ok := a.repoInst[key]
	missing, known := a.noInst[key]
	a.mu.Unlock()
	if ok {
		return id, nil
	}
	if known && time.Since(missing) < notInstalledTTL {
		return 0, app.Errorf(app.ENOTFOUND, "the GitHub App is not installed on %s", repo)
	}
	in, _, err := a.appClient.Apps.FindRepositoryInstallation(ctx, owner, name)
	if err != nil {
		err = APIError(err, "find the App installation of "+repo)
		if app.ErrorCode(err) == app.ENOTFOUND {
			a.mu.Lock()
			a.noInst[key] = time.Now()
			a.mu.Unlock()
		}
		return 0, err
	}
	id = in.GetID()
	a.mu.Lock()
	a.repoInst[key] = id
	delete(a.noInst, key)
	a.mu.Unlock()
	return id, nil
}

// ForgetInstallation drops a cached repo→installation mapping (after an
// uninstall or a repository transfer).
func (a *App) ForgetInstallation(repo string) {
	a.mu.Lock()
	delete(a.repoInst, strings.ToLower(repo))
	delete(a.noInst, strings.ToLower(repo))
	a.mu.Unlock()
}

// notInstalledTTL is how long "not installed" is believed: installing the
// App on a repository takes effect for asb within this time.
const notInstalledTTL = 2 * time.Minute

// RepoToken mints a fresh installation token scoped to repo alone with
// contents read (or write) permission, for git over HTTPS. The token
// must only ever be passed to git through its environment.
func (a *App) RepoToken(ctx context.Context, repo string, write bool) (string, error) {
	_, name, err := splitRepo(repo)
	if err != nil {
		return "", err
	}
	id, err := a.InstallationFor(ctx, repo)
	if err != nil {
		return "", err
	}
	perm := "read"
	if write {
		perm = "write"
	}
	tok, _, err := a.appClient.Apps.CreateInstallationToken(ctx, id, &gh.InstallationTokenOptions{
		Repositories: []string{name},
		Permissions:  &gh.InstallationPermissions{Contents: gh.String(perm)},
	})
	if err != nil {
		return "", APIError(err, "mint a token for "+repo)
	}
	if tok.GetToken() == "" {
		return "", app.Errorf(app.EUNAVAILABLE, "GitHub returned an empty token for %s", repo)
	}
	return tok.GetToken(), nil
}

// Permission returns login's permission on repo: admin, write, read or none.
func (a *App) Permission(ctx context.Context, installationID int64, repo, login string) (string, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return "", err
	}
	c, err := a.InstallationClient(ctx, installationID)
	if err != nil {
		return "", err
	}
	p, _, err := c.Repositories.GetPermissionLevel(ctx, owner, name, login)
	if err != nil {
		if app.ErrorCode(APIError(err, "")) == app.ENOTFOUND {
			return "none", nil
		}
		return "", APIError(err, "read "+login+"'s permission on "+repo)
	}
	switch perm := p.GetPermission(); perm {
	case "admin", "write", "read":
		return perm, nil
	case "maintain":
		return "write", nil
	case "triage":
		return "read", nil
	}
	return "none", nil
}

func splitRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") ||
		strings.ContainsAny(repo, " \t\r\n\\:@?#%") || strings.HasPrefix(name, ".") || strings.HasPrefix(owner, "-") {
		return "", "", app.Errorf(app.EINVALID, "repository must look like owner/name")
	}
	return owner, name, nil
}

// APIError maps an error from go-github or ghinstallation to an
// *app.Error: ERATELIMIT and EUNAVAILABLE for transient trouble (rate
// limits, 5xx, timeouts, network) so the core retries, and EINVALID,
// EFORBIDDEN, ENOTFOUND, ECONFLICT or EUNAUTHORIZED for refusals. what
// describes the failed action for the caller-safe message. It is the one
// place GitHub API errors are classified.
func APIError(err error, what string) error {
	if err == nil {
		return nil
	}
	var ae *app.Error
	if errors.As(err, &ae) {
		return err
	}
	msg := func(detail string) string {
		if what == "" {
			return "GitHub " + detail
		}
		return "could not " + what + ": GitHub " + detail
	}
	var rle *gh.RateLimitError
	if errors.As(err, &rle) {
		return app.WrapError(app.ERATELIMIT, err, "%s", msg(fmt.Sprintf("rate limit exceeded until %s", rle.Rate.Reset.UTC().Format("15:04:05Z"))))
	}
	var abuse *gh.AbuseRateLimitError
	if errors.As(err, &abuse) {
		return app.WrapError(app.ERATELIMIT, err, "%s", msg("secondary rate limit exceeded"))
	}
	var acc *gh.AcceptedError
	if errors.As(err, &acc) {
		return app.WrapError(app.EUNAVAILABLE, err, "%s", msg("is still processing the request"))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return app.WrapError(app.EUNAVAILABLE, err, "%s", msg("timed out"))
	}
	if errors.Is(err, context.Canceled) {
		return app.WrapError(app.EUNAVAILABLE, err, "%s", msg("request was cancelled"))
	}
	status, retryAfter := 0, false
	var er *gh.ErrorResponse
	var he *ghinstallation.HTTPError
	switch {
	case errors.As(err, &er) && er.Response != nil:
		status, retryAfter = er.Response.StatusCode, er.Response.Header.Get("Retry-After") != ""
	case errors.As(err, &he):
		if he.Response == nil {
			return app.WrapError(app.EUNAVAILABLE, err, "%s", msg("could not be reached"))
		}
		status, retryAfter = he.Response.StatusCode, he.Response.Header.Get("Retry-After") != ""
	}
	switch {
	case status == http.StatusTooManyRequests || (status == http.StatusForbidden && retryAfter):
		return app.WrapError(app.ERATELIMIT, err, "%s", msg("rate limit exceeded"))
	case status >= 500:
		return app.WrapError(app.EUNAVAILABLE, err, "%s", msg(fmt.Sprintf("is unavailable (HTTP %d)", status)))
	case status == http.StatusUnauthorized:
		return app.WrapError(app.EUNAUTHORIZED, err, "%s", msg("refused the App's credentials"))
	case status == http.StatusForbidden:
		return app.WrapError(app.EFORBIDDEN, err, "%s", msg("refused: not allowed"))
	case status == http.StatusNotFound || status == http.StatusGone:
		return app.WrapError(app.ENOTFOUND, err, "%s", msg("says it does not exist or is not visible to the App"))
	case status == http.StatusConflict:
		return app.WrapError(app.ECONFLICT, err, "%s", msg("reported a conflict"))
	case status >= 400:
		return app.WrapError(app.EINVALID, err, "%s", msg(fmt.Sprintf("refused the request (HTTP %d)", status)))
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return app.WrapError(app.EUNAVAILABLE, err, "%s", msg("timed out"))
	}
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return app.WrapError(app.EUNAVAILABLE, err, "%s", msg("could not be reached"))
	}
	return app.WrapError(app.EINTERNAL, err, "%s", msg("request failed"))
}
