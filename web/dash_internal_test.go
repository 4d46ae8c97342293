package web

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
)

const hostile = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>{{.}}`

// pageData returns empty, typical and hostile data for a template.
func pageData(name string) map[string]any {
	long := strings.Repeat("a-very-long-name-", 400)
	item := func(s string) eventItem {
		return eventItem{EventID: 7, Key: "7-0", Kind: "tool", Label: s, Text: s, Detail: s, Summary: s, At: time.Now()}
	}
	runs := func(s string) []runBlock {
		return []runBlock{{RunView: app.RunView{Run: app.Run{ID: "run_abc", Prompt: s, State: app.StateWaiting, Error: s, Summary: s,
			Result: app.PublishResult{PullRequestURL: "javascript:alert(3)"}}, Position: 2}, Heading: s, Items: []eventItem{item(s)}, PR: s}}
	}
	session := func(s string) sessionData {
		return sessionData{ID: s, State: s, Title: s, Repos: []link{{Label: s, URL: "javascript:alert(4)"}}, Origin: link{Label: s, URL: s},
			Host: s, Box: s, Uptime: s, Question: s, QuestionKey: s, Runs: runs(s), Asks: []askItem{{Question: s, Answer: s, By: s}},
			Notice: s, Form: sessionForm{Answer: s, AnswerErr: s, SecretsErr: s, FollowUp: s, FollowUpErr: s, Ask: s, AskErr: s}}
	}
	fleet := func(s string) fleetData {
		return fleetData{Rows: []fleetRow{{ID: s, State: "waiting", Waiting: true, Question: s, Title: s, Repo: s, RepoURL: "javascript:alert(5)",
			Origin: link{Label: s, URL: s}, Host: s, Uptime: s, CPU: s, Mem: s, Pinned: true, Queued: 3}}, Total: 1, State: s, Repo: s,
			States: []string{s}, Warning: s}
	}
	files := func(s string) filesData {
		return filesData{ID: s, Path: s, Crumbs: []crumb{{Name: s, Path: s}}, Entries: []app.FileInfo{{Name: s, Path: s, Dir: true}, {Name: s, Path: s}},
			Content: s, Download: "/files/download?session=" + s}
	}
	typical := "ses_abcdefghijklmnop"
	switch name {
	case "landing":
		return map[string]any{"empty": gateData{}, "typical": gateData{Next: "/dashboard", Gate: "tok"}, "hostile": gateData{Next: hostile, Gate: hostile, Error: hostile}, "long": gateData{Error: long}}
	case "fleet":
		return map[string]any{"empty": fleetData{}, "typical": fleet(typical), "hostile": fleet(hostile), "long": fleet(long)}
	case "session":
		return map[string]any{"empty": sessionData{}, "typical": session(typical), "hostile": session(hostile), "long": session(long)}
	case "files":
		return map[string]any{"empty": filesData{}, "typical": files(typical), "hostile": files(hostile), "long": files(long)}
	case "teardown":
		return map[string]any{"empty": teardownData{}, "typical": teardownData{ID: typical, Title: "t", State: "done"},
			"hostile": teardownData{ID: hostile, Title: hostile, State: hostile, Error: hostile}, "long": teardownData{Title: long}}
	case "new":
		return map[string]any{"empty": newRunData{}, "typical": newRunData{Repo: "acme/api", Task: "fix it", Repos: []string{"acme/api"}, Attached: "acme/api"},
			"hostile": newRunData{Repo: hostile, Task: hostile, Repos: []string{hostile}, Detected: hostile, Attached: hostile, RepoErr: hostile, TaskErr: hostile},
			"long":    newRunData{Task: long, Attached: long}}
	case "account":
		return map[string]any{"empty": accountData{}, "typical": accountData{Actor: "operator", PublicURL: "https://x", IDEs: ideConfigs("https://x")},
			"hostile": accountData{Actor: hostile, PublicURL: hostile, MCPURL: hostile, IDEs: ideConfigs(hostile), MultiUser: true, Admin: true,
				Lapsed: true, Keys: []app.APIKey{{ID: hostile, Name: hostile, Prefix: hostile}, {ID: "key_r", RevokedAt: time.Now()}}, NewKey: hostile, Notice: hostile, Problem: hostile,
				Devices: []deviceView{{Device: app.Device{ID: hostile, UserAgent: hostile, ClientIP: hostile}, Current: true}}, Plan: hostile, BillingURL: "javascript:alert(6)"},
			"long": accountData{IDEs: ideConfigs(long), MultiUser: true, HasPassword: true, Problem: long}}
	case "integrations":
		integ := func(s string) integrationsData {
			return integrationsData{
				Accounts: []app.GitHubAccount{{ID: s, Login: s, Name: s, Orgs: []string{s, s}, Scopes: []string{s}, TokenType: s, AddedAt: time.Now()}},
				Servers:  []app.MCPServer{{ID: s, Name: s, URL: "https://mcp.example.com/" + s, HeaderNames: []string{s, s}, AddedAt: time.Now()}},
				Notice:   s, GitHubErr: s, Confirm: &removal{Kind: s, ID: s, Label: s},
				MCP: mcpForm{Name: s, URL: s, NameErr: s, URLErr: s, HeadersErr: s, Err: s},
			}
		}
		return map[string]any{"empty": integrationsData{}, "typical": integ("gha_abcdefgh"), "hostile": integ(hostile), "long": integ(long)}
	case "signup":
		return map[string]any{"empty": signupData{}, "typical": signupData{Gate: "tok", Username: "ann"},
			"hostile": signupData{Gate: hostile, Username: hostile, Email: hostile, Error: hostile}, "long": signupData{Error: long}}
	case "admin":
		users := func(s string) []adminUser {
			return []adminUser{{Account: app.Account{ID: app.AccountID(s), Username: s, Email: s, GitHubLogin: s, Plan: s}, PlanText: s},
				{Account: app.Account{ID: "acc_b", Username: "b", Plan: app.PlanPro, Disabled: true, Admin: true}}}
		}
		return map[string]any{"empty": adminData{}, "typical": adminData{Users: users("acc_a"), Token: "asb_i_x", Username: "ann", Notice: "ok"},
			"hostile": adminData{Users: users(hostile), Token: hostile, Username: hostile, Notice: hostile, Problem: hostile,
				Audit: []app.AuditEntry{{Actor: hostile, Action: hostile, Target: hostile, Detail: hostile}}}, "long": adminData{Problem: long}}
	case "error":
		return map[string]any{"empty": errorData{}, "typical": errorData{Status: 404, Message: "no such session"}, "hostile": errorData{Status: 400, Message: hostile}, "long": errorData{Message: long}}
	}
	return nil
}

func TestEveryTemplateRendersEmptyTypicalAndHostileData(t *testing.T) {
	d := &dash{log: slog.New(slog.DiscardHandler), pages: parsePages()}
	for _, name := range pageNames {
		cases := pageData(name)
		if len(cases) != 4 {
			t.Fatalf("no test data for template %s", name)
		}
		for label, data := range cases {
			for _, signedIn := range []bool{false, true} {
				p := page{Title: hostile, Page: name, Data: data}
				if signedIn {
					p.SignedIn, p.CSRF, p.Actor = true, hostile, hostile
				}
				w := httptest.NewRecorder()
				d.render(w, httptest.NewRequest("GET", "/", nil), 200, name, p)
				body := w.Body.String()
				if w.Code != 200 {
					t.Errorf("%s/%s: status %d: %s", name, label, w.Code, body)
					continue
				}
				if strings.Count(body, "<script") != 1 || strings.Count(body, "<img") != 0 || strings.Contains(body, "javascript:") {
					t.Errorf("%s/%s: injected markup or script:\n%s", name, label, body)
				}
				if strings.Count(body, "<main") != 1 || !strings.HasSuffix(strings.TrimSpace(body), "</html>") {
					t.Errorf("%s/%s: the page structure broke", name, label)
				}
				if label == "hostile" && !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
					t.Errorf("%s/%s: the hostile text is not shown escaped", name, label)
				}
			}
		}
	}
}

func TestDetectRepo(t *testing.T) {
	for _, tc := range []struct{ task, want string }{
		{"fix the flaky test in acme/api", "acme/api"},
		{"fix the flaky test in acme/api.", "acme/api"},
		{"look at https://github.com/acme/web/pull/3 please", "acme/web"},
		{"clone github.com/acme/tool.git and build", "acme/tool"},
		{"(see acme/api-v2)", "acme/api-v2"},
		{"edit src/main.go and pkg/util.py", ""},
		{"the file at internal/app/server should change", ""},
		{"and/or this", ""},
		{"no repository here", ""},
		{"", ""},
		{"-bad/name", ""},
		{"first src/x.go then acme/api", "acme/api"},
		{"https://evil.com/acme/api", ""},
	} {
		if got := detectRepo(tc.task); got != tc.want {
			t.Errorf("detectRepo(%q) = %q, want %q", tc.task, got, tc.want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"": "/dashboard", "/account": "/account", "/s/ses_x?done=1": "/s/ses_x?done=1",
		"//evil.example": "/dashboard", "https://evil.example": "/dashboard", "/\\evil": "/dashboard",
		"/x\r\nSet-Cookie: a=b": "/dashboard", "dashboard": "/dashboard",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseSecrets(t *testing.T) {
	got, err := parseSecrets("A=1\r\n\nB_2= spaced = value \n")
	if err != nil || got["A"] != "1" || got["B_2"] != " spaced = value " || len(got) != 2 {
		t.Errorf("parseSecrets = %v, %v", got, err)
	}
	for _, bad := range []string{"novalue", "=x", "PATH=/bin", "lower=x", "A=1\nA=2"} {
		if _, err := parseSecrets(bad); err == nil {
			t.Errorf("parseSecrets(%q) accepted", bad)
		} else if v := strings.SplitN(bad, "=", 2); len(v) == 2 && v[1] != "" && strings.Contains(err.Error(), v[1]) && v[1] != "x" {
			t.Errorf("parseSecrets(%q) echoes the value: %v", bad, err)
		}
	}
	if got, err := parseSecrets("  \n"); err != nil || got != nil {
		t.Errorf("blank secrets = %v, %v", got, err)
	}
}

func TestBrowserSessionsExpireAndStayBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newBrowserSessions()
	s.now = func() time.Time { return now }
	id, bs := s.create(app.OperatorActor)
	if got, ok := s.lookup(id); !ok || got.csrf != bs.csrf || got.actor != app.OperatorActor {
		t.Fatal("a new session is not found")
	}
	for _, k := range []string{"", "x", id + "x", strings.Repeat("a", 200)} {
		if _, ok := s.lookup(k); ok {
			t.Errorf("lookup(%q) found a session", k)
		}
	}
	now = now.Add(idleTTL - time.Minute)
	if _, ok := s.lookup(id); !ok {
		t.Fatal("an active session expired early")
	}
	now = now.Add(idleTTL + time.Minute)
	if _, ok := s.lookup(id); ok {
		t.Fatal("an idle session did not expire")
	}
	for range maxBrowserSessions + 10 {
		s.create(app.OperatorActor)
	}
	if n := len(s.m); n > maxBrowserSessions {
		t.Errorf("%d sessions kept, limit %d", n, maxBrowserSessions)
	}
	for k := range s.m {
		if strings.Contains(string(k[:]), id) {
			t.Error("the table holds a cookie value")
		}
	}
}

func TestAgentRecordsRenderReadably(t *testing.T) {
	ev := func(typ app.EventType, data string) app.Event {
		return app.Event{ID: 1, Type: typ, Data: json.RawMessage(data)}
	}
	cases := []struct {
		e     app.Event
		kinds string
		has   string
	}{
		{ev(app.EventAgent, `{"type":"assistant","message":{"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"Bash","input":{"command":"go test ./..."}}]}}`), "text tool", "go test ./..."},
		{ev(app.EventAgent, `{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"PASS"}],"is_error":false}]}}`), "result", "PASS"},
		{ev(app.EventAgent, `{"type":"result","subtype":"success","result":"all done","num_turns":3,"total_cost_usd":0.5}`), "result", "all done"},
		{ev(app.EventAgent, `{"type":"system","subtype":"init","model":"m1"}`), "system", "m1"},
		{ev(app.EventAgent, `"plain text line"`), "system", "plain text line"},
		{ev(app.EventAgent, `{"type":"mystery","x":1}`), "raw", `"x": 1`},
		{ev(app.EventRunQuestion, `{"text":"which?"}`), "question", "which?"},
		{ev(app.EventRunState, `{"from":"running","to":"failed","reason":"boom"}`), "state", "boom"},
		{ev(app.EventRunQueued, `{"kind":"followup","position":2,"prompt":"more"}`), "queued", "position 2"},
		{ev(app.EventRunNotice, `{"state":"starting","text":"the box did not boot; retrying in 30s"}`), "state", "notice the box did not boot"},
	}
	for _, c := range cases {
		items := eventItems(c.e)
		var kinds []string
		var all strings.Builder
		for _, it := range items {
			kinds = append(kinds, it.Kind)
			all.WriteString(it.Label + " " + it.Text + " " + it.Summary + " " + it.Detail + "\n")
		}
		if strings.Join(kinds, " ") != c.kinds || !strings.Contains(all.String(), c.has) {
			t.Errorf("%s %s → kinds %v, text %q; want %s with %q", c.e.Type, c.e.Data, kinds, all.String(), c.kinds, c.has)
		}
	}
}
