package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/web"
)

// fuzzRoutes are the JSON routes a caller can reach; the live stream is
// left out because a valid request to it never ends.
var fuzzRoutes = []struct{ method, path string }{
	{http.MethodPost, "/delegate.json"}, {http.MethodPost, "/followup.json"}, {http.MethodPost, "/resume.json"},
	{http.MethodPost, "/ask.json"}, {http.MethodPost, "/cancel.json"}, {http.MethodPost, "/teardown.json"},
	{http.MethodPost, "/pin.json"}, {http.MethodGet, "/watch.json"}, {http.MethodGet, "/files.json"},
	{http.MethodGet, "/files/download"}, {http.MethodGet, "/fleet.json"}, {http.MethodGet, "/monitor.json"},
}

// FuzzAPIRequest sends arbitrary queries and bodies to every JSON route
// of a handler over a real Service (in-memory store and sandbox), with
// and without the operator token. "SID" in the input stands for a real
// session. Properties: without the token the answer is 401 whatever the
// request; with it, no request makes an internal error (500); every
// refusal is a JSON {"error": "..."} with a message that never echoes the
// token; and a delegation that is accepted names a valid session. The seed
// corpus in testdata/fuzz/FuzzAPIRequest holds the requests the CLI and
// the dashboard send.
func FuzzAPIRequest(f *testing.F) {
	seeds := []struct {
		route       uint8
		query, body string
	}{
		{0, "", `{"task":"fix the flaky test","repo":"acme/widgets","ref":"main","wait":false}`},
		{0, "", `{"task":"x","repos":[{"repo":"acme/a","dir":"a"},{"repo":"acme/b","ref":"v1","dir":"b"}],"allowDomains":["example.com"]}`},
		{0, "", `{"task":"x","repo":"acme/w","repos":[{"repo":"acme/a"}]}`},
		{0, "", `{"task":"","ref":"main"}`},
		{1, "", `{"session":"SID","message":"also update the docs","wait":true}`},
		{2, "", `{"session":"SID","message":"yes","secrets":{"NPM_TOKEN":"s3cret"}}`},
		{3, "", `{"session":"SID","question":"what is left?"}`},
		{4, "", `{"session":"SID"}`},
		{5, "", `{"session":"ses_nope"}`},
		{6, "", `{"session":"SID","pinned":true}`},
		{7, "session=SID&events=5&after=0", ""},
		{7, "session=SID&events=-1", ""},
		{8, "session=SID&path=../../etc", ""},
		{9, "session=SID&path=/workspace/main.go", ""},
		{10, "", ""},
		{0, "", `{"task":1}`},
		{0, "", `{"task":"x"} {"task":"y"}`},
		{0, "", "\xff"},
	}
	for _, s := range seeds {
		f.Add(s.route, s.query, []byte(s.body), true)
	}
	f.Add(uint8(0), "", []byte(`{"task":"x"}`), false)
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte, withToken bool) {
		store, sb := apptest.NewMemStore(), apptest.NewFakeSandbox()
		svc := app.NewService(app.Deps{Store: store, Sandbox: sb}, app.Config{PollInterval: time.Millisecond})
		ctx := app.WithActor(context.Background(), app.OperatorActor)
		d, err := svc.Delegate(ctx, app.DelegateRequest{Task: "seeded"})
		if err != nil {
			t.Fatal(err)
		}
		h := web.New(web.Options{Service: svc, Logger: slog.New(slog.DiscardHandler), OperatorToken: testToken,
			WaitTimeout: time.Millisecond, MutationsPerMinute: 1 << 20})
		sid := string(d.Session.ID)
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		target := rt.path
		if q := strings.ReplaceAll(query, "SID", sid); q != "" {
			target += "?" + q
		}
		r, err := http.NewRequest(rt.method, "http://asb.test"+target, bytes.NewReader(bytes.ReplaceAll(body, []byte("SID"), []byte(sid))))
		if err != nil || strings.ContainsAny(target, " #") {
			return // not a request a client can send
		}
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("Content-Type", "application/json")
		if withToken {
			r.Header.Set("Authorization", "Bearer "+testToken)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		if !withToken {
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("%s %s without a token: %d", rt.method, target, w.Code)
			}
			return
		}
		if w.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s %q: internal error: %s", rt.method, target, body, w.Body)
		}
		if strings.Contains(w.Body.String(), testToken) {
			t.Fatal("the answer echoes the token")
		}
		if w.Code >= 400 {
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || strings.TrimSpace(e.Error) == "" {
				t.Fatalf("%s %s: %d without a JSON error: %q", rt.method, target, w.Code, w.Body)
			}
			return
		}
		if rt.path == "/delegate.json" {
			var out struct {
				Session struct {
					ID string `json:"id"`
				} `json:"session"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if _, err := app.ParseSessionID(out.Session.ID); err != nil {
				t.Fatalf("delegated without a valid session: %q", w.Body)
			}
		}
	})
}
