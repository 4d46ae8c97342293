package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

// sessionFromLocation reads the session id out of a /s/{id} redirect.
func sessionFromLocation(t *testing.T, res response) app.SessionID {
	t.Helper()
	loc := res.header.Get("Location")
	if res.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/s/ses_") {
		t.Fatalf("want a redirect to a session page, got %d → %q\n%s", res.status, loc, res.body)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(loc, "/s/"), "?")
	return app.SessionID(id)
}

func TestNewRunAttachesTheRepoNamedInTheTask(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true, options: func(o *web.Options) {
		o.RepoSuggestions = func(ctx context.Context) ([]string, error) { return []string{"acme/web", "acme/api"}, nil }
	}})
	b := signedIn(t, e)
	page := b.get("/new")
	if !strings.Contains(page.body, `<option value="acme/api">`) {
		t.Errorf("the repository datalist lacks the suggestions:\n%s", page.body)
	}
	task := "fix the flaky test in acme/api"
	prev := b.post("/new", url.Values{"task": {task}, "action": {"preview"}})
	if prev.status != 200 || !strings.Contains(prev.body, "Repository attached: <strong>acme/api</strong> (named in the task)") {
		t.Fatalf("preview = %d, no attached repository:\n%s", prev.status, prev.body)
	}
	if n := e.sessionCount(t); n != 0 {
		t.Fatalf("a preview started %d sessions", n)
	}
	id := sessionFromLocation(t, b.post("/new", url.Values{"task": {task}, "action": {"start"}}))
	v := e.view(t, id)
	if len(v.Session.Sources) != 1 || v.Session.Sources[0].Repo != "acme/api" || v.Session.Origin.Kind != app.OriginDashboard {
		t.Errorf("session sources=%+v origin=%+v", v.Session.Sources, v.Session.Origin)
	}
	// The field wins over the task.
	id = sessionFromLocation(t, b.post("/new", url.Values{"task": {task}, "repo": {"acme/web"}}))
	if v := e.view(t, id); v.Session.Sources[0].Repo != "acme/web" {
		t.Errorf("repo field ignored: %+v", v.Session.Sources)
	}
}

func TestNewRunShowsErrorsNextToTheField(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true})
	b := signedIn(t, e)
	res := b.post("/new", url.Values{"task": {"x"}, "repo": {"not a repo"}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="repo-error"`) || !strings.Contains(res.body, `value="not a repo"`) {
		t.Errorf("bad repo = %d; want the form again with the error by the field:\n%s", res.status, res.body)
	}
	res = b.post("/new", url.Values{"task": {"   "}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="task-error"`) || !strings.Contains(res.body, "task is empty") {
		t.Errorf("empty task = %d:\n%s", res.status, res.body)
	}
	if n := e.sessionCount(t); n != 0 {
		t.Errorf("refused forms started %d sessions", n)
	}
}

func TestAnswerFromTheSessionPage(t *testing.T) {
	var secrets map[string]string
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		questionScript("Which <b>database</b> should I use?")(sb)
		inner := sb.ScriptFor
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			if turn.ResumeAgentSession != "" {
				secrets = turn.Secrets
			}
			return inner(turn)
		}
	}})
	b := signedIn(t, e)
	id := sessionFromLocation(t, b.post("/new", url.Values{"task": {"set up storage"}}))
	e.waitState(t, id, "waiting")

	page := b.get("/s/" + string(id))
	if !strings.Contains(page.body, "Which &lt;b&gt;database&lt;/b&gt; should I use?") || !strings.Contains(page.body, `id="answer-form"`) {
		t.Fatalf("the session page does not show the question and its form:\n%s", page.body)
	}
	fleet := b.get("/dashboard")
	if !strings.Contains(fleet.body, "needs answer") || !strings.Contains(fleet.body, `class="state-waiting waiting"`) {
		t.Errorf("the fleet does not single out the waiting run:\n%s", fleet.body)
	}

	// A malformed secrets line is an error next to its field, without echoing it.
	res := b.post("/s/"+string(id)+"/answer", url.Values{"answer": {"postgres"}, "secrets": {"s3cr3t-value-without-name"}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="secrets-error"`) || strings.Contains(res.body, "s3cr3t-value") {
		t.Fatalf("bad secrets = %d:\n%s", res.status, res.body)
	}
	if !strings.Contains(res.body, ">postgres</textarea>") {
		t.Error("the answer typed was lost on the error page")
	}
	if v := e.view(t, id); v.State() != "waiting" {
		t.Fatalf("a refused answer moved the run to %s", v.State())
	}

	res = b.post("/s/"+string(id)+"/answer", url.Values{"answer": {"postgres"}, "secrets": {"DB_PASSWORD=hunter2\n"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("answer = %d\n%s", res.status, res.body)
	}
	e.waitState(t, id, "done")
	if secrets["DB_PASSWORD"] != "hunter2" {
		t.Errorf("the one-step secret did not reach the turn: %v", secrets)
	}
	page = b.get("/s/" + string(id))
	if strings.Contains(page.body, "hunter2") {
		t.Error("the session page shows a secret")
	}
	if !strings.Contains(page.body, "answer from operator") || !strings.Contains(page.body, "postgres") {
		t.Errorf("the thread does not show the answer:\n%s", page.body)
	}
	// No question now: answering again says so next to the field.
	res = b.post("/s/"+string(id)+"/answer", url.Values{"answer": {"again"}})
	if res.status != http.StatusConflict || !strings.Contains(res.body, "no question waiting") {
		t.Errorf("answer without a question = %d", res.status)
	}
}

func TestFollowUpShowsItsQueuePosition(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	})
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			return apptest.Script{Records: []string{`{"type":"assistant","message":{"content":[{"type":"text","text":"busy"}]}}`}, Hold: hold}
		}
	}})
	b := signedIn(t, e)
	id := sessionFromLocation(t, b.post("/new", url.Values{"task": {"long job"}}))
	e.waitState(t, id, "running")
	res := b.post("/s/"+string(id)+"/followup", url.Values{"message": {"then the docs"}})
	if res.status != http.StatusSeeOther || !strings.HasSuffix(res.header.Get("Location"), "done=queued&position=1") {
		t.Fatalf("follow-up = %d → %q", res.status, res.header.Get("Location"))
	}
	page := b.get(res.header.Get("Location"))
	if !strings.Contains(page.body, "Follow-up queued at position 1") || !strings.Contains(page.body, "queued · position 1") {
		t.Errorf("the page does not show the queue position:\n%s", page.body)
	}
	res = b.post("/s/"+string(id)+"/followup", url.Values{"message": {""}})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="message-error"`) {
		t.Errorf("empty follow-up = %d", res.status)
	}
	close(hold)
	e.waitState(t, id, "done")
}

func TestPinAndTeardownWithConfirmation(t *testing.T) {
	e := newAPI(t, envConfig{})
	b := signedIn(t, e)
	id := sessionFromLocation(t, b.post("/new", url.Values{"task": {"quick"}}))
	e.waitState(t, id, "done")
	sp := "/s/" + string(id)
	if res := b.post(sp+"/pin", url.Values{"pinned": {"true"}}); res.status != http.StatusSeeOther {
		t.Fatalf("pin = %d", res.status)
	}
	if !e.view(t, id).Session.Pinned {
		t.Fatal("not pinned")
	}
	if page := b.get(sp + "?done=pinned"); !strings.Contains(page.body, ">Unpin<") {
		t.Error("a pinned session offers no unpin")
	}
	confirm := b.get(sp + "/teardown")
	if confirm.status != 200 || !strings.Contains(confirm.body, `name="confirm"`) {
		t.Fatalf("confirmation page = %d", confirm.status)
	}
	if e.view(t, id).Session.State != app.SessionActive {
		t.Fatal("showing the confirmation tore the session down")
	}
	res := b.post(sp+"/teardown", url.Values{})
	if res.status != http.StatusBadRequest || !strings.Contains(res.body, `id="confirm-error"`) {
		t.Fatalf("teardown without confirmation = %d", res.status)
	}
	if e.view(t, id).Session.State != app.SessionActive {
		t.Fatal("an unconfirmed teardown tore the session down")
	}
	if res := b.post(sp+"/teardown", url.Values{"confirm": {"yes"}}); res.status != http.StatusSeeOther {
		t.Fatalf("confirmed teardown = %d", res.status)
	}
	if e.view(t, id).Session.State != app.SessionClosed {
		t.Fatal("the confirmed teardown did not close the session")
	}
}

func TestFilesBrowseViewAndDownload(t *testing.T) {
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.Files = map[string]string{"/workspace/app/README.md": "# <hello>\n", "/workspace/app/bin.dat": "a\x00b"}
	}})
	b := signedIn(t, e)
	id := sessionFromLocation(t, b.post("/new", url.Values{"task": {"files"}}))
	e.waitState(t, id, "done")
	sp := "/s/" + string(id)
	list := b.get(sp + "/files?path=/workspace/app")
	if list.status != 200 || !strings.Contains(list.body, "README.md") {
		t.Fatalf("file list = %d\n%s", list.status, list.body)
	}
	view := b.get(sp + "/view?path=/workspace/app/README.md")
	if !strings.Contains(view.body, "# &lt;hello&gt;") {
		t.Errorf("file view does not show the escaped content:\n%s", view.body)
	}
	dl := html.UnescapeString(regexpFind(t, view.body, `href="(/files/download[^"]+)"`))
	res := b.get(dl)
	if res.status != 200 || res.body != "# <hello>\n" || !strings.Contains(res.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("download with the cookie = %d %q", res.status, res.body)
	}
	if bin := b.get(sp + "/view?path=/workspace/app/bin.dat"); !strings.Contains(bin.body, "not text") {
		t.Error("a binary file is shown inline")
	}
	if bad := b.get(sp + "/files?path=/etc"); bad.status != http.StatusBadRequest {
		t.Errorf("path outside /workspace = %d", bad.status)
	}
}

func TestAccountPageHasIDEConfigsForThePublicURL(t *testing.T) {
	e := newAPI(t, envConfig{noRun: true, options: func(o *web.Options) { o.PublicURL = "https://asb.example.org" }})
	b := signedIn(t, e)
	page := b.get("/account")
	for _, want := range []string{
		"claude mcp add --transport http asb https://asb.example.org/mcp",
		"&#34;serverUrl&#34;: &#34;https://asb.example.org/mcp&#34;",
		"&#34;ASB_URL&#34;: &#34;https://asb.example.org&#34;",
		"Cursor", "VS Code", "Windsurf", `id="test-connection"`,
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("account page lacks %q", want)
		}
	}
	if strings.Contains(page.body, testToken) {
		t.Error("the account page shows the operator token")
	}
}

func TestSetupIsMountedBehindSignIn(t *testing.T) {
	var calls int
	e := newAPI(t, envConfig{noRun: true, options: func(o *web.Options) {
		o.Setup = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			a, _ := app.ActorFrom(r.Context())
			_, _ = w.Write([]byte("setup for " + a.Name + " at " + r.URL.Path))
		})
	}})
	anon := newBrowser(t, e)
	if res := anon.get("/setup/github"); res.status != http.StatusSeeOther {
		t.Fatalf("anonymous /setup = %d", res.status)
	}
	if res := e.do(t, "GET", "/setup", nil); res.status != 200 || res.body != "setup for operator at /setup" {
		t.Errorf("bearer /setup = %d %q", res.status, res.body)
	}
	b := signedIn(t, e)
	if res := b.get("/setup/github"); res.status != 200 || res.body != "setup for operator at /setup/github" {
		t.Errorf("cookie /setup/github = %d %q", res.status, res.body)
	}
	before := calls
	if res := b.post("/setup/github", url.Values{"csrf": {""}}); res.status != http.StatusForbidden {
		t.Errorf("cookie POST /setup without CSRF or Origin = %d, want 403", res.status)
	}
	if res := b.post("/setup/github", url.Values{"csrf": {""}}, "Origin", "https://evil.example"); res.status != http.StatusForbidden {
		t.Errorf("cookie POST /setup from another origin = %d, want 403", res.status)
	}
	if calls != before {
		t.Error("a refused POST reached the setup handler")
	}
	if res := b.post("/setup/github", url.Values{"csrf": {""}}, "Origin", e.srv.URL); res.status != 200 {
		t.Errorf("cookie POST /setup from this origin = %d", res.status)
	}
	if res := b.post("/setup/github", nil); res.status != 200 {
		t.Errorf("cookie POST /setup with the CSRF field = %d", res.status)
	}
	// Without a Setup handler there is no /setup.
	e2 := newAPI(t, envConfig{noRun: true})
	if res := e2.do(t, "GET", "/setup", nil); res.status != http.StatusNotFound {
		t.Errorf("/setup without a handler = %d", res.status)
	}
}

func regexpFind(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", pattern, s)
	}
	return m[1]
}

func TestFleetFiltersAndPutsWaitingFirst(t *testing.T) {
	var boxes []app.Box
	e := newAPI(t, envConfig{sandbox: func(sb *apptest.FakeSandbox) {
		sb.ScriptFor = func(turn app.Turn) apptest.Script {
			if strings.Contains(turn.Prompt, "ask") {
				return apptest.Script{Records: []string{`{"type":"system","subtype":"init"}`}, Question: "which?"}
			}
			return apptest.Script{Records: []string{`{"type":"system","subtype":"init"}`}}
		}
	}, options: func(o *web.Options) {
		o.Boxes = func(ctx context.Context) ([]app.Box, error) {
			return boxes, nil
		}
	}})
	b := signedIn(t, e)
	done := sessionFromLocation(t, b.post("/new", url.Values{"task": {"plain job"}, "repo": {"acme/one"}}))
	e.waitState(t, done, "done")
	asks := sessionFromLocation(t, b.post("/new", url.Values{"task": {"please ask"}, "repo": {"acme/two"}}))
	e.waitState(t, asks, "waiting")
	boxes = []app.Box{{BoxRef: e.view(t, asks).Session.Box, CPUPct: 12, MemMiB: 512}}
	page := b.get("/dashboard")
	if !strings.Contains(page.body, "12%") || !strings.Contains(page.body, "512 MiB") {
		t.Errorf("the fleet does not show the box's CPU and memory:\n%s", page.body)
	}
	iw, id := strings.Index(page.body, string(asks)), strings.Index(page.body, string(done))
	if iw < 0 || id < 0 || iw > id {
		t.Errorf("waiting session not listed first (waiting at %d, done at %d)", iw, id)
	}
	f := b.get("/dashboard?state=waiting")
	if !strings.Contains(f.body, string(asks)) || strings.Contains(f.body, string(done)) {
		t.Error("state filter")
	}
	f = b.get("/dashboard?repo=ONE")
	if strings.Contains(f.body, string(asks)) || !strings.Contains(f.body, string(done)) {
		t.Error("repo filter (case-insensitive substring)")
	}
	if !strings.Contains(page.body, `href="https://github.com/acme/one"`) || !strings.Contains(page.body, ">dashboard<") {
		t.Error("repository link or origin missing")
	}
}
