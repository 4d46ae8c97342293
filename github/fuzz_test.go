package github

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Signing modes of FuzzWebhook: how the request is signed.
const (
	signRight    = iota // the HMAC-SHA256 of the body, as GitHub sends it
	signNone            // no signature header
	signOther           // the HMAC of a different body
	signSHA1Only        // only the legacy X-Hub-Signature header
	signModes
)

// FuzzWebhook feeds the receiver arbitrary deliveries, signed or not.
// Properties: a delivery that is not signed with the secret is refused
// with 401 and neither stored nor handed on; a signed one never gets a
// 5xx; whatever is handed on is stored, carries the request's event and
// id, and is a JSON object; a 4xx stores nothing; and a redelivery of an
// accepted id is a duplicate that is not handed on again. The seed corpus
// in testdata/fuzz/FuzzWebhook holds the recorded GitHub payloads, as JSON
// and form-encoded.
func FuzzWebhook(f *testing.F) {
	for _, c := range []struct{ event, file string }{
		{"issue_comment", "issue_comment.created.pull_request.json"},
		{"issues", "issues.labeled.agent.json"},
		{"ping", "ping.with-app_id.json"},
		{"installation", "installation.created.json"},
	} {
		body := fixture(f, c.file)
		f.Add(c.event, "72d3162e-cc78-11e3-81ab-4c9367dc0958", "application/json", body, uint8(signRight))
		f.Add(c.event, "d2", "application/x-www-form-urlencoded", []byte("payload="+url.QueryEscape(string(body))), uint8(signRight))
		f.Add(c.event, "d3", "application/json", body, uint8(signOther))
	}
	f.Add("issues", "d4", "application/json; charset=utf-8", []byte(`{"action":7}`), uint8(signRight))
	f.Add("issues", "d5", "", []byte(` [] `), uint8(signRight))
	f.Add("star", "d6", "text/plain", []byte(`{}`), uint8(signRight))
	f.Add("", "", "application/json", []byte(`{}`), uint8(signNone))
	f.Add("issues", "d7", "application/json", []byte(`{}`), uint8(signSHA1Only))
	f.Fuzz(func(t *testing.T, event, id, contentType string, body []byte, mode uint8) {
		mode %= signModes
		h, store, sink := newTestWebhook(t)
		send := func() *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
			setHeader(r, "Content-Type", contentType)
			setHeader(r, "X-GitHub-Event", event)
			setHeader(r, "X-GitHub-Delivery", id)
			switch mode {
			case signRight:
				r.Header.Set("X-Hub-Signature-256", Sign(testSecret, body))
			case signOther:
				r.Header.Set("X-Hub-Signature-256", Sign(testSecret, append(bytes.Clone(body), ' ')))
			case signSHA1Only:
				r.Header.Set("X-Hub-Signature", "sha1=0000000000000000000000000000000000000000")
			}
			return serve(h, r)
		}
		w := send()
		if mode != signRight {
			if w.Code != http.StatusUnauthorized || store.count() != 0 || len(sink.calls()) != 0 {
				t.Fatalf("an unsigned delivery got %d, stored %d, handed on %d", w.Code, store.count(), len(sink.calls()))
			}
			return
		}
		if w.Code >= 500 {
			t.Fatalf("a signed delivery got %d: %s", w.Code, w.Body)
		}
		calls := sink.calls()
		if w.Code >= 400 {
			if store.count() != 0 || len(calls) != 0 {
				t.Fatalf("refused with %d but stored %d, handed on %d", w.Code, store.count(), len(calls))
			}
			return
		}
		if len(calls) > 1 || len(calls) != store.count() {
			t.Fatalf("handed on %d, stored %d", len(calls), store.count())
		}
		if len(calls) == 0 {
			return // ping, or an event asb ignores
		}
		d := calls[0]
		if w.Code != http.StatusAccepted || d.ID != id || d.Event != event || !validDeliveryID(id) || !validEventName(event) {
			t.Fatalf("handed on %+v with %d for event %q id %q", d, w.Code, event, id)
		}
		trimmed := bytes.TrimSpace(d.Payload)
		if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
			t.Fatalf("handed on a payload that is not a JSON object: %q", d.Payload)
		}
		if len(d.Action) > 64 {
			t.Fatalf("action not clipped: %d bytes", len(d.Action))
		}
		if again := send(); again.Code != http.StatusOK || !strings.Contains(again.Body.String(), "duplicate") || len(sink.calls()) != 1 {
			t.Fatalf("redelivery got %d %q and %d hand-ons", again.Code, again.Body, len(sink.calls()))
		}
	})
}

// setHeader sets a header the way a client would send it: an empty value
// is an absent header.
func setHeader(r *http.Request, k, v string) {
	if v != "" {
		r.Header.Set(k, v)
	}
}
