package github

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// OAuth is the "Continue with GitHub" OAuth App: the authorize URL a
// browser is sent to, and the exchange of the code GitHub sends back for
// a user token. The client secret and the token travel only in request
// bodies, never in a URL or a log.
type OAuth struct {
	ClientID     string
	ClientSecret string
	// WebURL is GitHub's web address, ending in "/" (https://github.com/).
	WebURL string
	// HTTP defaults to a client with a 15-second timeout.
	HTTP *http.Client
}

// AuthorizeURL is where the browser goes to approve the sign-in. Only the
// public identity is asked for (no scope).
func (o OAuth) AuthorizeURL(state, redirectURI string) string {
	q := url.Values{"client_id": {o.ClientID}, "redirect_uri": {redirectURI}, "state": {state}, "allow_signup": {"false"}}
	return strings.TrimRight(o.WebURL, "/") + "/login/oauth/authorize?" + q.Encode()
}

// Exchange trades a code for the user's token.
func (o OAuth) Exchange(ctx context.Context, code, redirectURI string) (string, error) {
	if code == "" || len(code) > 200 {
		return "", fmt.Errorf("github oauth: bad code")
	}
	form := url.Values{"client_id": {o.ClientID}, "client_secret": {o.ClientSecret}, "code": {code}, "redirect_uri": {redirectURI}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(o.WebURL, "/")+"/login/oauth/access_token",
		strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("github oauth: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("github oauth: exchange the code: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("github oauth: exchange the code: status %d", resp.StatusCode)
	}
	if out.Error != "" || out.AccessToken == "" {
		return "", fmt.Errorf("github oauth: GitHub refused the code (%s)", clip(out.Error, 80))
	}
	return out.AccessToken, nil
}
