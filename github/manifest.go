package github

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"
	"go.yaml.in/yaml/v3"

	"github.com/asb-dev/asb/app"
)

// ManifestFlowOptions configure the App manifest flow (GET /setup).
type ManifestFlowOptions struct {
	// Manifest is app-manifest.yml; its URLs are replaced with PublicURL's.
	Manifest []byte
	// PublicURL is where the operator's browser and GitHub reach asb.
	PublicURL string
	// WebURL is GitHub's web host (default https://github.com).
	WebURL string
	// APIURL is the REST base for the code conversion (default
	// api.github.com; GitHub Enterprise and tests set it).
	APIURL    string
	Transport http.RoundTripper
	// Save stores the created App (sealed); Current reports a stored one.
	Save    func(ctx context.Context, c app.GitHubAppCredentials) error
	Current func(ctx context.Context) (app.GitHubAppCredentials, bool, error)
	Logger  *slog.Logger
}

// ManifestFlow creates asb's GitHub App with one click: the start page
// posts the filled manifest to GitHub, and GitHub's redirect brings a
// one-time code that the callback converts into the App's credentials.
//
// The start page must sit behind the operator's sign-in. The callback
// cannot: GitHub's redirect is a cross-site navigation, which does not
// carry a SameSite=Strict session cookie. It is bound to the operator's
// browser instead by a state value kept in a short-lived SameSite=Lax
// cookie that only the signed-in start page sets.
type ManifestFlow struct {
	o      ManifestFlowOptions
	web    string
	client *gh.Client
	secure bool
	log    *slog.Logger
}

const (
	stateCookie  = "asb_setup_state"
	stateMaxAge  = 30 * time.Minute
	maxAppName   = 34 // GitHub's limit on App names
	maxCodeBytes = 100
)

var (
	appNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._-]*$`)
	orgRE     = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	codeRE    = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// NewManifestFlow checks the options and the manifest.
func NewManifestFlow(o ManifestFlowOptions) (*ManifestFlow, error) {
	if o.Save == nil {
		return nil, app.Errorf(app.EINVALID, "manifest flow: Save is required")
	}
	pub, err := url.Parse(strings.TrimRight(o.PublicURL, "/"))
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, app.Errorf(app.EINVALID, "manifest flow: ASB_PUBLIC_URL must be an http(s) URL")
	}
	o.PublicURL = pub.String()
	if _, err := fillManifest(o.Manifest, o.PublicURL, "asb"); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	web := strings.TrimRight(o.WebURL, "/")
	if web == "" {
		web = "https://github.com"
	}
	c := gh.NewClient(&http.Client{Transport: o.Transport, Timeout: 30 * time.Second})
	if o.APIURL != "" {
		base := strings.TrimRight(o.APIURL, "/") + "/"
		if c, err = c.WithEnterpriseURLs(base, base); err != nil {
			return nil, app.WrapError(app.EINVALID, err, "GitHub API URL is not valid")
		}
	}
	return &ManifestFlow{o: o, web: web, client: c, secure: pub.Scheme == "https", log: o.Logger}, nil
}

// fillManifest turns app-manifest.yml into the JSON GitHub expects, with
// every URL pointing at publicURL. A public URL that GitHub cannot reach
// (loopback, a private address) gets an inactive webhook: the poller
// then does the webhook's work.
func fillManifest(manifest []byte, publicURL, name string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(manifest, &m); err != nil || m == nil {
		return nil, app.Errorf(app.EINVALID, "app-manifest.yml is not a YAML mapping")
	}
	m["name"] = name
	m["url"] = publicURL
	m["redirect_url"] = publicURL + "/setup/callback"
	m["setup_url"] = publicURL + "/setup/installed"
	m["callback_urls"] = []string{publicURL + "/auth/github/callback"}
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook == nil {
		hook = map[string]any{}
	}
	hook["url"] = publicURL + "/webhooks/github"
	hook["active"] = reachableFromInternet(publicURL)
	m["hook_attributes"] = hook
	out, err := json.Marshal(m)
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "app-manifest.yml cannot be expressed as JSON")
	}
	return out, nil
}

func reachableFromInternet(publicURL string) bool {
	u, err := url.Parse(publicURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
	}
	return true
}

// Start serves GET /setup: the form that creates the App on GitHub.
func (f *ManifestFlow) Start() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		data := setupPage{PublicURL: f.o.PublicURL, Hook: reachableFromInternet(f.o.PublicURL)}
		if f.o.Current != nil {
			cur, ok, err := f.o.Current(r.Context())
			if err != nil {
				f.log.Error("read the stored GitHub App", "err", err)
			}
			if ok {
				data.Existing = cur.Slug
				data.ExistingURL = cur.HTMLURL
			}
		}
		q := r.URL.Query()
		data.Org = strings.TrimSpace(q.Get("org"))
		data.Name = strings.TrimSpace(q.Get("name"))
		if data.Name == "" {
			data.Name = "asb-" + randomToken(3)
		}
		switch {
		case data.Org != "" && !orgRE.MatchString(data.Org):
			data.OrgError = "An organization name has letters, digits and single dashes (at most 39)."
		case len(data.Name) > maxAppName || !appNameRE.MatchString(data.Name):
			data.NameError = "An App name has at most 34 letters, digits, spaces, dots, dashes or underscores."
		}
		if data.OrgError == "" && data.NameError == "" {
			manifest, err := fillManifest(f.o.Manifest, f.o.PublicURL, data.Name)
			if err != nil {
				http.Error(w, app.ErrorMessage(err), http.StatusInternalServerError)
				return
			}
			state := randomToken(24)
			http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state, Path: "/setup", MaxAge: int(stateMaxAge.Seconds()),
				HttpOnly: true, Secure: f.secure, SameSite: http.SameSiteLaxMode})
			target := f.web + "/settings/apps/new"
			if data.Org != "" {
				target = f.web + "/organizations/" + url.PathEscape(data.Org) + "/settings/apps/new"
			}
			data.Action = target + "?state=" + url.QueryEscape(state)
			data.Manifest = string(manifest)
		}
		// The form posts to GitHub, so this page alone widens form-action.
		setPageHeaders(w, "form-action 'self' "+f.web)
		render(w, http.StatusOK, setupTemplate, data)
	})
}

// Callback serves GET /setup/callback (the code exchange) and GET
// /setup/installed (where GitHub sends the browser after installation).
func (f *ManifestFlow) Callback() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /setup/installed", func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w, "form-action 'self'")
		render(w, http.StatusOK, installedTemplate, nil)
	})
	mux.HandleFunc("GET /setup/callback", f.callback)
	return mux
}

func (f *ManifestFlow) callback(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w, "form-action 'self'")
	fail := func(status int, msg string) {
		render(w, status, resultTemplate, result{Error: msg})
	}
	q := r.URL.Query()
	code, state := q.Get("code"), q.Get("state")
	c, err := r.Cookie(stateCookie)
	if err != nil || state == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		fail(http.StatusForbidden, "This link did not come from the setup page in this browser, or it is older than 30 minutes. Open /setup and start again.")
		return
	}
	// The state works once.
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: "", Path: "/setup", MaxAge: -1, HttpOnly: true, Secure: f.secure, SameSite: http.SameSiteLaxMode})
	if code == "" || len(code) > maxCodeBytes || !codeRE.MatchString(code) {
		fail(http.StatusBadRequest, "GitHub's answer has no valid code. Open /setup and start again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	cfg, _, err := f.client.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		err = APIError(err, "create the GitHub App from the manifest")
		f.log.Warn("manifest conversion failed", "err", app.ErrorMessage(err))
		fail(http.StatusBadGateway, app.ErrorMessage(err)+" Codes work once and expire after an hour: open /setup and start again.")
		return
	}
	creds := app.GitHubAppCredentials{AppID: cfg.GetID(), Slug: cfg.GetSlug(), HTMLURL: cfg.GetHTMLURL(),
		ClientID: cfg.GetClientID(), ClientSecret: cfg.GetClientSecret(), WebhookSecret: cfg.GetWebhookSecret(), PrivateKeyPEM: cfg.GetPEM()}
	if err := f.o.Save(ctx, creds); err != nil {
		f.log.Error("store the GitHub App", "app", creds.String(), "err", err)
		fail(http.StatusInternalServerError, "The App was created on GitHub but asb could not store it: "+app.ErrorMessage(err))
		return
	}
	f.log.Info("GitHub App created through the manifest flow", "app_id", creds.AppID, "slug", creds.Slug)
	render(w, http.StatusOK, resultTemplate, result{Slug: creds.Slug, AppID: creds.AppID,
		InstallURL: f.web + "/apps/" + url.PathEscape(creds.Slug) + "/installations/new"})
}

func setPageHeaders(w http.ResponseWriter, formAction string) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; object-src 'none'; base-uri 'none'; "+formAction+"; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store")
}

func render(w http.ResponseWriter, status int, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = t.Execute(w, data) // the browser went away
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return strings.ToLower(base64.RawURLEncoding.EncodeToString(b))
}

type setupPage struct {
	PublicURL, Org, Name, Action, Manifest string
	OrgError, NameError                    string
	Existing, ExistingURL                  string
	Hook                                   bool
}

type result struct {
	Error      string
	Slug       string
	AppID      int64
	InstallURL string
}

const pageHead = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/app.css"><title>{{block "title" .}}asb setup{{end}}</title></head><body><main>`

var setupTemplate = template.Must(template.New("setup").Parse(pageHead + `
<h1>Create asb's GitHub App</h1>
{{if .Existing}}<p role="status">An App is already stored: <a href="{{.ExistingURL}}">{{.Existing}}</a>. Creating another replaces it after a restart.</p>{{end}}
<p>GitHub creates the App from asb's manifest (the permissions and events in <code>app-manifest.yml</code>),
with its URLs pointing at <code>{{.PublicURL}}</code>.
{{if not .Hook}}That address is not reachable from the internet, so the App's webhook starts inactive:
set <code>POLL_INTERVAL</code> and asb polls GitHub instead.{{end}}</p>
<form method="get" action="/setup">
<p><label for="name">App name (unique on GitHub)</label><br>
<input id="name" name="name" value="{{.Name}}" maxlength="34" aria-describedby="name-error">
{{if .NameError}}<span id="name-error" class="error">{{.NameError}}</span>{{end}}</p>
<p><label for="org">Organization (leave empty for your own account)</label><br>
<input id="org" name="org" value="{{.Org}}" maxlength="39" aria-describedby="org-error">
{{if .OrgError}}<span id="org-error" class="error">{{.OrgError}}</span>{{end}}</p>
<p><button type="submit">Update</button></p>
</form>
{{if .Action}}<form method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<p><button type="submit">Create the App on GitHub</button></p>
</form>{{end}}
</main></body></html>`))

var resultTemplate = template.Must(template.New("result").Parse(pageHead + `
{{if .Error}}<h1>The App was not created</h1><p class="error" role="alert">{{.Error}}</p><p><a href="/setup">Back to setup</a></p>
{{else}}<h1>GitHub App {{.Slug}} created</h1>
<p>Its id, private key, webhook secret and OAuth client are stored, encrypted, in asb's database.</p>
<ol><li><a href="{{.InstallURL}}">Install the App</a> on the repositories the agent may work on.</li>
<li>Restart asb (for example <code>systemctl restart asb</code>) so it starts using the App.</li>
<li>Comment <code>/agent</code> and a task on a pull request.</li></ol>{{end}}
</main></body></html>`))

var installedTemplate = template.Must(template.New("installed").Parse(pageHead + `
<h1>Installed</h1><p>The App can now see the repositories you chose. Comment <code>/agent</code> and a task on a pull
request, or label an issue, to start a run. <a href="/dashboard">Open the dashboard</a>.</p>
</main></body></html>`))
