package githubtest

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
)

// oauthApp is a registered OAuth App ("Continue with GitHub") and the
// fake's browser session: who is signed in to GitHub, and the codes
// handed out by the authorize page.
type oauthApp struct {
	mu       sync.Mutex
	clientID string
	secret   string
	signedIn string
	codes    map[string]oauthCode
}

type oauthCode struct {
	login, redirect string
}

func (s *Server) oauth() *oauthApp {
	s.oauthApp.mu.Lock()
	if s.oauthApp.codes == nil {
		s.oauthApp.codes = map[string]oauthCode{}
	}
	s.oauthApp.mu.Unlock()
	return &s.oauthApp
}

// OAuthApp registers the OAuth App's client id and secret.
func (s *Server) OAuthApp(clientID, secret string) {
	o := s.oauth()
	o.mu.Lock()
	o.clientID, o.secret = clientID, secret
	o.mu.Unlock()
}

// SignInAs makes the fake's "browser" signed in to GitHub as login, so the
// authorize page approves at once (the login must exist: AddUser).
func (s *Server) SignInAs(login string) {
	s.mu.Lock()
	s.mustUser(login)
	s.mu.Unlock()
	o := s.oauth()
	o.mu.Lock()
	o.signedIn = login
	o.mu.Unlock()
}

// serveOAuth answers GET /login/oauth/authorize (redirecting back with a
// code and the state, as GitHub does once the user approves) and POST
// /login/oauth/access_token (exchanging a code once for a user token).
func (s *Server) serveOAuth(w http.ResponseWriter, r *http.Request, body []byte) {
	o := s.oauth()
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case r.URL.Path == "/login/oauth/authorize" && r.Method == http.MethodGet:
		q := r.URL.Query()
		if o.clientID == "" || q.Get("client_id") != o.clientID {
			http.Error(w, "unknown client_id", http.StatusNotFound)
			return
		}
		redirect, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || redirect.Scheme == "" || o.signedIn == "" {
			http.Error(w, "bad redirect_uri or nobody signed in", http.StatusBadRequest)
			return
		}
		code := randToken("")[:20]
		o.codes[code] = oauthCode{login: o.signedIn, redirect: redirect.String()}
		v := redirect.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		redirect.RawQuery = v.Encode()
		http.Redirect(w, r, redirect.String(), http.StatusFound)
	case r.URL.Path == "/login/oauth/access_token" && r.Method == http.MethodPost:
		form, _ := url.ParseQuery(string(body))
		w.Header().Set("Content-Type", "application/json")
		c, ok := o.codes[form.Get("code")]
		delete(o.codes, form.Get("code")) // a code works once
		if form.Get("client_id") != o.clientID || subtle.ConstantTimeCompare([]byte(form.Get("client_secret")), []byte(o.secret)) != 1 {
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "incorrect_client_credentials"})
			return
		}
		if !ok || (form.Get("redirect_uri") != "" && form.Get("redirect_uri") != c.redirect) {
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad_verification_code"})
			return
		}
		s.mu.Lock()
		u := s.mustUser(c.login)
		t := &token{value: randToken("gho_"), kind: AuthPersonal, login: u, scopes: []string{}}
		s.st.tokens[t.value] = t
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"access_token": t.value, "token_type": "bearer", "scope": ""})
	default:
		http.NotFound(w, r)
	}
}
