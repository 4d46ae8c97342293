package githubtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/github/githubtest"
)

type received struct {
	event, delivery, agent string
	parsed                 any
}

// receiver is a webhook endpoint that verifies signatures with go-github.
func receiver(t *testing.T, secret string) (*httptest.Server, func() []received) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, err := github.ValidatePayload(r, []byte(secret))
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		ev, err := github.ParseWebHook(github.WebHookType(r), payload)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, received{github.WebHookType(r), github.DeliveryID(r), r.UserAgent(), ev})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	w := newWorld(t, githubtest.Options{})
	srv := w.srv
	const secret = "s3cret"
	hook, got := receiver(t, secret)

	srv.Commit("acme/widgets", "feature", "Feature", map[string]string{"f.txt": "f\n"})
	srv.AddPull("acme/widgets", githubtest.PullSpec{Author: "alice", Title: "Feature", Head: "feature"})
	c := srv.AddComment("acme/widgets", 1, "alice", "/agent add tests")

	resp, err := srv.Deliver(w.ctx, hook.URL, secret, "issue_comment", srv.IssueCommentPayload(c.ID, "created"))
	must(t, err, "deliver")
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("receiver answered %d", resp.StatusCode)
	}
	ev := got()[0]
	ice, ok := ev.parsed.(*github.IssueCommentEvent)
	if !ok || ev.event != "issue_comment" || !uuidRE.MatchString(ev.delivery) || !strings.HasPrefix(ev.agent, "GitHub-Hookshot/") {
		t.Fatalf("received %+v", ev)
	}
	if ice.GetAction() != "created" || !ice.GetIssue().IsPullRequest() || ice.GetIssue().GetNumber() != 1 ||
		ice.GetComment().GetID() != c.ID || ice.GetComment().GetBody() != "/agent add tests" ||
		ice.GetRepo().GetFullName() != "acme/widgets" || ice.GetInstallation().GetID() != w.inst.ID ||
		ice.GetSender().GetLogin() != "alice" || ice.GetOrganization().GetLogin() != "acme" ||
		ice.GetComment().GetHTMLURL() != c.HTMLURL {
		t.Fatalf("issue_comment %+v", ice)
	}

	// A wrong secret fails verification; a redelivery keeps the GUID.
	resp, err = srv.Deliver(w.ctx, hook.URL, "wrong", "issue_comment", srv.IssueCommentPayload(c.ID, "created"))
	must(t, err, "deliver with a wrong secret")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong secret answered %d", resp.StatusCode)
	}
	resp, err = srv.Redeliver(w.ctx, ev.delivery)
	must(t, err, "redeliver")
	resp.Body.Close()
	if all := got(); len(all) != 2 || all[1].delivery != ev.delivery {
		t.Fatalf("redelivery %+v", all)
	}
	if ds := srv.Deliveries(); len(ds) != 3 || ds[1].Status != http.StatusUnauthorized || !ds[2].Redelivery {
		t.Fatalf("deliveries %+v", ds)
	}

	srv.EditComment(c.ID, "/agent add more tests")
	srv.AddIssue("acme/widgets", githubtest.IssueSpec{Author: "bob", Title: "Crash"})
	srv.AddLabels("acme/widgets", 2, "alice", "agent")
	sent := map[string][]byte{
		"issue_comment.edited":            srv.IssueCommentPayload(c.ID, "edited"),
		"issues.labeled":                  srv.IssuesPayload("acme/widgets", 2, "labeled", "agent", "alice"),
		"issues.opened":                   srv.IssuesPayload("acme/widgets", 2, "opened", "", ""),
		"pull_request.opened":             srv.PullRequestPayload("acme/widgets", 1, "opened", ""),
		"pull_request.synchronize":        srv.PullRequestPayload("acme/widgets", 1, "synchronize", ""),
		"installation.created":            srv.InstallationPayload(w.inst.ID, "created", "alice"),
		"installation_repositories.added": srv.InstallationRepositoriesPayload(w.inst.ID, "added", "alice", "acme/secret"),
		"ping.with-app_id":                srv.PingPayload(),
		"issue_comment.created":           srv.IssueCommentPayload(c.ID, "created"),
	}
	for name, payload := range sent {
		event, _, _ := strings.Cut(name, ".")
		// Every key of GitHub's example is in what the builders produce.
		{
			var want, have any
			b, err := os.ReadFile("testdata/" + name + ".json")
			must(t, err, "fixture")
			must(t, json.Unmarshal(b, &want), "fixture json")
			must(t, json.Unmarshal(payload, &have), "payload json")
			for _, k := range missingKeys("", want, have) {
				// The example App has more permissions than ours, and an
				// App's hook is not a repository's hook.
				if strings.HasPrefix(k, ".installation.permissions.") ||
					(event == "ping" && (k == ".repository" || strings.HasSuffix(k, "_url") || k == ".hook.url")) {
					continue
				}
				t.Errorf("%s: key %s missing", name, k)
			}
		}
		resp, err := srv.Deliver(w.ctx, hook.URL, secret, event, payload)
		must(t, err, "deliver "+name)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: receiver answered %d", name, resp.StatusCode)
		}
	}
	for _, r := range got() {
		switch e := r.parsed.(type) {
		case *github.IssueCommentEvent:
			if e.GetAction() == "edited" && (e.GetChanges().GetBody().GetFrom() != "/agent add tests" || e.GetComment().GetBody() != "/agent add more tests") {
				t.Fatalf("edited %+v", e.GetChanges())
			}
		case *github.IssuesEvent:
			if e.GetAction() == "labeled" && (e.GetLabel().GetName() != "agent" || e.GetSender().GetLogin() != "alice" || e.GetIssue().GetNumber() != 2) {
				t.Fatalf("labeled %+v", e)
			}
		case *github.PullRequestEvent:
			if e.GetNumber() != 1 || e.GetPullRequest().GetHead().GetRef() != "feature" || e.GetInstallation().GetID() != w.inst.ID {
				t.Fatalf("pull_request %+v", e)
			}
			if e.GetAction() == "synchronize" && (e.GetAfter() != srv.Branch("acme/widgets", "feature") || e.GetBefore() != srv.Branch("acme/widgets", "main")) {
				t.Fatalf("synchronize before %s after %s", e.GetBefore(), e.GetAfter())
			}
		case *github.InstallationEvent:
			if e.GetInstallation().GetID() != w.inst.ID || len(e.Repositories) != 2 || e.GetInstallation().GetAppID() != srv.AppID() {
				t.Fatalf("installation %+v", e)
			}
		case *github.InstallationRepositoriesEvent:
			if len(e.RepositoriesAdded) != 1 || e.RepositoriesAdded[0].GetFullName() != "acme/secret" {
				t.Fatalf("installation_repositories %+v", e)
			}
		case *github.PingEvent:
			if e.GetHook().GetType() != "App" || e.GetZen() == "" {
				t.Fatalf("ping %+v", e)
			}
		default:
			t.Fatalf("unexpected %T", e)
		}
	}
	// Without a secret GitHub sends no signature.
	resp, err = srv.Deliver(w.ctx, hook.URL, "", "ping", srv.PingPayload())
	must(t, err, "unsigned")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned delivery answered %d", resp.StatusCode)
	}
}

// missingKeys lists the object keys in want (recursively) absent in have.
func missingKeys(path string, want, have any) []string {
	var out []string
	switch wv := want.(type) {
	case map[string]any:
		hv, ok := have.(map[string]any)
		if !ok {
			if have == nil {
				return nil // null where the example has an object (no milestone, no assignee)
			}
			return []string{path + " (not an object)"}
		}
		for k, v := range wv {
			x, ok := hv[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, missingKeys(path+"."+k, v, x)...)
		}
	case []any:
		if hv, ok := have.([]any); ok && len(wv) > 0 && len(hv) > 0 {
			out = append(out, missingKeys(path+"[0]", wv[0], hv[0])...)
		}
	}
	sort.Strings(out)
	return out
}

func TestManifestFlow(t *testing.T) {
	t.Parallel()
	srv := githubtest.New(t, githubtest.Options{WebhookSecret: "whsec"})
	manifest := `{"name":"My Bot","url":"http://bot.invalid","hook_attributes":{"url":"http://bot.invalid/webhooks/github"},` +
		`"redirect_url":"http://bot.invalid/setup/callback","default_permissions":{"issues":"write"},"default_events":["issues"]}`
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(srv.ManifestURL("acme")+"?state=st8", url.Values{"manifest": {manifest}})
	must(t, err, "post manifest")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Host != "bot.invalid" || loc.Query().Get("state") != "st8" {
		t.Fatalf("redirect %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if ms := srv.Manifests(); len(ms) != 1 || ms[0]["name"] != "My Bot" {
		t.Fatalf("manifests %+v", ms)
	}

	anon := enterprise(t, srv, nil)
	cfg, resp2, err := anon.Apps.CompleteAppManifest(t.Context(), loc.Query().Get("code"))
	must(t, err, "conversion")
	if resp2.StatusCode != http.StatusCreated || cfg.GetID() != srv.AppID() || cfg.GetSlug() != "my-bot" || cfg.GetName() != "My Bot" ||
		cfg.GetWebhookSecret() != "whsec" || cfg.GetClientID() == "" || cfg.GetClientSecret() == "" || !strings.Contains(cfg.GetPEM(), "RSA PRIVATE KEY") {
		t.Fatalf("app config %+v", cfg)
	}
	_, _, err = anon.Apps.CompleteAppManifest(t.Context(), loc.Query().Get("code"))
	wantStatus(t, err, http.StatusNotFound, "code used twice")

	// The PEM it hands out is the App's key.
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, cfg.GetID(), []byte(cfg.GetPEM()))
	must(t, err, "transport from the PEM")
	atr.BaseURL = srv.URL + "/api/v3"
	a, _, err := enterprise(t, srv, &http.Client{Transport: atr}).Apps.Get(t.Context(), "")
	must(t, err, "GET /app with the new key")
	if a.GetSlug() != "my-bot" || srv.BotLogin() != "my-bot[bot]" {
		t.Fatalf("app %+v bot %s", a, srv.BotLogin())
	}

	srv.AddManifestCode("abc")
	_, _, err = anon.Apps.CompleteAppManifest(t.Context(), "abc")
	must(t, err, "registered code")
}
