package githubtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:embed testdata/*.json
var fixtures embed.FS

// fixture loads an octokit/webhooks example payload as a template.
func fixture(name string) obj {
	b, err := fixtures.ReadFile("testdata/" + name)
	if err != nil {
		panic("githubtest: missing fixture " + name)
	}
	var o obj
	if err := json.Unmarshal(b, &o); err != nil {
		panic("githubtest: fixture " + name + ": " + err.Error())
	}
	return o
}

func fixtureFor(event, action, fallback string) obj {
	if _, err := fixtures.ReadFile("testdata/" + event + "." + action + ".json"); err == nil {
		return fixture(event + "." + action + ".json")
	}
	return fixture(fallback)
}

// Delivery is one webhook delivery made by Deliver or Redeliver.
type Delivery struct {
	ID         string
	Event      string
	URL        string
	Payload    []byte
	Time       time.Time
	Redelivery bool
	// Status is the receiver's status code, 0 when the request failed.
	Status int
	Err    error
	secret string
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Deliver posts a webhook the way GitHub does: JSON body, X-GitHub-Event,
// a fresh X-GitHub-Delivery GUID, X-GitHub-Hook-* headers, a
// GitHub-Hookshot User-Agent and, when secret is not empty,
// X-Hub-Signature-256 (HMAC-SHA256) and the legacy X-Hub-Signature
// (HMAC-SHA1). Like GitHub it gives up after 10 seconds. The caller
// closes the response body.
func (s *Server) Deliver(ctx context.Context, url, secret, event string, payload []byte) (*http.Response, error) {
	return s.deliver(ctx, Delivery{ID: newUUID(), Event: event, URL: url, Payload: payload, secret: secret})
}

// Redeliver sends a recorded delivery again with the same GUID, as
// GitHub's "Redeliver" does.
func (s *Server) Redeliver(ctx context.Context, deliveryID string) (*http.Response, error) {
	s.mu.Lock()
	var d *Delivery
	for i := range s.st.deliveries {
		if s.st.deliveries[i].ID == deliveryID {
			x := s.st.deliveries[i]
			d = &x
		}
	}
	s.mu.Unlock()
	if d == nil {
		return nil, fmt.Errorf("githubtest: no delivery %s", deliveryID)
	}
	d.Redelivery = true
	return s.deliver(ctx, *d)
}

// Deliveries lists the deliveries made so far, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.st.deliveries...)
}

// Sign returns the X-Hub-Signature-256 value of payload under secret.
func Sign(secret string, payload []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (s *Server) deliver(ctx context.Context, d Delivery) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Accept", "*/*")
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/"+randHex(4)[:7])
	h.Set("X-GitHub-Event", d.Event)
	h.Set("X-GitHub-Delivery", d.ID)
	h.Set("X-GitHub-Hook-ID", "109948940")
	h.Set("X-GitHub-Hook-Installation-Target-ID", fmt.Sprint(s.opts.AppID))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	if d.secret != "" {
		m1 := hmac.New(sha1.New, []byte(d.secret))
		m1.Write(d.Payload)
		h.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
		h.Set("X-Hub-Signature-256", Sign(d.secret, d.Payload))
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	d.Time, d.Err = time.Now(), err
	if resp != nil {
		d.Status = resp.StatusCode
	}
	s.mu.Lock()
	s.st.deliveries = append(s.st.deliveries, d)
	s.mu.Unlock()
	return resp, err
}

func mustJSON(o obj) []byte {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// envelope sets repository, sender, installation and organization.
func (s *Server) envelope(p obj, r *repo, sender *user) {
	p["repository"] = s.repoJSON(r, nil, false)
	p["sender"] = s.userJSON(sender)
	if in := s.installationFor(r); in != nil {
		p["installation"] = obj{"id": in.id, "node_id": nodeID("Installation", in.id)}
	} else {
		delete(p, "installation")
	}
	if r.owner.typ == "Organization" {
		p["organization"] = s.orgJSON(r.owner)
	} else {
		delete(p, "organization")
	}
}

func (s *Server) senderOr(login string, def *user) *user {
	if login == "" {
		return def
	}
	return s.mustUser(login)
}

// IssueCommentPayload builds an issue_comment payload ("created",
// "edited" or "deleted") for a comment; on a pull request the issue
// carries its pull_request object. The sender is the comment's author.
func (s *Server) IssueCommentPayload(commentID int64, action string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.comments[commentID]
	if c == nil {
		s.fatalf("IssueCommentPayload: no comment %d", commentID)
	}
	p := fixtureFor("issue_comment", action, "issue_comment.created.json")
	p["action"] = action
	p["issue"] = s.issueJSON(c.issue)
	p["comment"] = s.commentJSON(c)
	delete(p, "changes")
	if action == "edited" {
		p["changes"] = obj{"body": obj{"from": c.prevBody}}
	}
	s.envelope(p, c.issue.repo, c.user)
	return mustJSON(p)
}

// IssuesPayload builds an issues payload ("opened", "labeled",
// "unlabeled", "closed", ...) for an issue; label names the label of
// labeled/unlabeled; sender defaults to the issue's author.
func (s *Server) IssuesPayload(repoName string, number int, action, label, sender string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	p := fixtureFor("issues", action, "issues.opened.json")
	p["action"] = action
	p["issue"] = s.issueJSON(is)
	delete(p, "label")
	delete(p, "changes")
	if label != "" {
		p["label"] = s.labelJSON(is.repo, s.labelFor(is.repo, label))
	}
	s.envelope(p, is.repo, s.senderOr(sender, is.user))
	return mustJSON(p)
}

// PullRequestPayload builds a pull_request payload ("opened", "closed",
// "synchronize", "reopened", ...); sender defaults to the author. For
// synchronize, before is the head's first parent and after the head.
func (s *Server) PullRequestPayload(repoName string, number int, action, sender string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	if is.pr == nil {
		s.fatalf("PullRequestPayload: %s#%d is not a pull request", repoName, number)
	}
	p := fixtureFor("pull_request", action, "pull_request.opened.json")
	p["action"] = action
	p["number"] = is.number
	p["pull_request"] = s.pullJSON(is)
	delete(p, "before")
	delete(p, "after")
	if action == "synchronize" {
		p["after"] = is.pr.headSHA
		p["before"] = s.revParse(is.repo, is.pr.headSHA+"^")
	}
	s.envelope(p, is.repo, s.senderOr(sender, is.user))
	return mustJSON(p)
}

// InstallationPayload builds an installation payload ("created",
// "deleted", "suspend", ...); sender defaults to the account.
func (s *Server) InstallationPayload(id int64, action, sender string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.st.installations[id]
	if in == nil {
		s.fatalf("InstallationPayload: no installation %d", id)
	}
	p := fixtureFor("installation", action, "installation.created.json")
	p["action"] = action
	p["installation"] = s.installationJSON(in)
	repos := []obj{}
	for _, r := range s.installationRepos(in, nil) {
		repos = append(repos, s.smallRepoJSON(r))
	}
	p["repositories"] = repos
	p["requester"] = nil
	p["sender"] = s.userJSON(s.senderOr(sender, in.account))
	return mustJSON(p)
}

// InstallationRepositoriesPayload builds an installation_repositories
// payload: action "added" or "removed" with those repositories.
func (s *Server) InstallationRepositoriesPayload(id int64, action, sender string, repos ...string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.st.installations[id]
	if in == nil {
		s.fatalf("InstallationRepositoriesPayload: no installation %d", id)
	}
	p := fixture("installation_repositories.added.json")
	p["action"] = action
	p["installation"] = s.installationJSON(in)
	list := []obj{}
	for _, name := range repos {
		list = append(list, s.smallRepoJSON(s.mustRepo(name)))
	}
	p["repositories_added"], p["repositories_removed"] = []obj{}, []obj{}
	p["repositories_"+action] = list
	p["repository_selection"] = "selected"
	if in.all {
		p["repository_selection"] = "all"
	}
	p["requester"] = nil
	p["sender"] = s.userJSON(s.senderOr(sender, in.account))
	return mustJSON(p)
}

// PingPayload builds the ping GitHub sends when the App's webhook is set.
func (s *Server) PingPayload() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := fixture("ping.with-app_id.json")
	hook, _ := p["hook"].(obj)
	if hook != nil {
		hook["type"] = "App"
		hook["app_id"] = s.opts.AppID
		// An App's hook has no repository URLs, only its deliveries.
		for _, k := range []string{"url", "test_url", "ping_url"} {
			delete(hook, k)
		}
		hook["deliveries_url"] = s.api() + "/app/hook/deliveries"
		hook["config"] = obj{"content_type": "json", "url": "", "insecure_ssl": "0"}
	}
	delete(p, "repository")
	delete(p, "organization")
	p["sender"] = s.userJSON(s.appOwner())
	return mustJSON(p)
}

// manifest form: POST /settings/apps/new (or /organizations/{org}/...)
// with form field "manifest" answers as if the user clicked "Create
// GitHub App": a redirect to the manifest's redirect_url with code and
// state. POST /api/v3/app-manifests/{code}/conversions then returns the
// App (this server's App, renamed after the manifest).
func (s *Server) serveManifestForm(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a form with a manifest field", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.NoBody
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	var m obj
	if err := json.Unmarshal([]byte(form.Get("manifest")), &m); err != nil {
		http.Error(w, "Invalid GitHub App configuration: manifest is not JSON", http.StatusUnprocessableEntity)
		return
	}
	if u, _ := m["url"].(string); u == "" {
		http.Error(w, "Invalid GitHub App configuration: url wasn't supplied", http.StatusUnprocessableEntity)
		return
	}
	if ha, ok := m["hook_attributes"].(obj); ok {
		if u, _ := ha["url"].(string); u == "" {
			http.Error(w, "Invalid GitHub App configuration: hook_attributes.url wasn't supplied", http.StatusUnprocessableEntity)
			return
		}
	}
	redirect, _ := m["redirect_url"].(string)
	if redirect == "" {
		http.Error(w, "githubtest: the manifest needs a redirect_url", http.StatusUnprocessableEntity)
		return
	}
	code := randHex(10)
	s.mu.Lock()
	s.st.codes[code] = &manifestCode{code: code, manifest: m}
	s.st.manifests = append(s.st.manifests, m)
	s.mu.Unlock()
	sep := "?"
	if strings.Contains(redirect, "?") {
		sep = "&"
	}
	loc := redirect + sep + "code=" + code
	if st := r.URL.Query().Get("state"); st != "" {
		loc += "&state=" + url.QueryEscape(st)
	}
	http.Redirect(w, r, loc, http.StatusFound)
}

// ManifestURL is where a browser posts the App manifest form (org ""
// for a personal App).
func (s *Server) ManifestURL(org string) string {
	if org != "" {
		return s.URL + "/organizations/" + org + "/settings/apps/new"
	}
	return s.URL + "/settings/apps/new"
}

// Manifests lists the manifests posted to the form, oldest first.
func (s *Server) Manifests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.st.manifests...)
}

// AddManifestCode registers a code for POST /app-manifests/{code}/conversions,
// as if GitHub had redirected with it. Codes work once.
func (s *Server) AddManifestCode(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.codes[code] = &manifestCode{code: code}
}

func (c *call) convertManifest() {
	s := c.s
	mc := s.st.codes[c.p("code")]
	if mc == nil || mc.used {
		c.notFound()
		return
	}
	mc.used = true
	if name, _ := mc.manifest["name"].(string); name != "" {
		s.renameApp(name)
	}
	o := s.appJSON()
	o["client_id"] = s.st.clientID
	o["client_secret"] = s.st.clientSecret
	o["webhook_secret"] = s.opts.WebhookSecret
	o["pem"] = string(s.AppPrivateKeyPEM())
	c.json(http.StatusCreated, o)
}

func (s *Server) renameApp(name string) {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.TrimSuffix(b.String(), "-")
	if slug == "" || slug == s.st.appSlug {
		s.st.appName = name
		return
	}
	delete(s.st.users, strings.ToLower(s.st.bot.login))
	s.st.appName, s.st.appSlug = name, slug
	s.st.bot.login = slug + "[bot]"
	s.st.users[strings.ToLower(s.st.bot.login)] = s.st.bot
}
