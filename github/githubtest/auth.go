package githubtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// AuthKind is the kind of credential a request carried.
type AuthKind string

// Credential kinds, as recorded in Request.Auth and Push.Auth.
const (
	AuthNone         AuthKind = "none"         // no Authorization header
	AuthInvalid      AuthKind = "invalid"      // unknown, expired or revoked token, or a bad JWT
	AuthApp          AuthKind = "app"          // a GitHub App JWT
	AuthInstallation AuthKind = "installation" // an installation access token
	AuthPersonal     AuthKind = "personal"     // a personal access token
)

type token struct {
	value   string
	kind    AuthKind
	login   *user
	scopes  []string
	inst    *installation
	repos   map[*repo]bool // nil: every repository of the installation
	perms   map[string]string
	expires time.Time
	revoked bool
}

// cred is the authenticated caller of one request.
type cred struct {
	kind AuthKind
	user *user // personal: the token's login; installation: the App's bot
	inst *installation
	tok  *token
	msg  string // why an invalid credential was refused
}

func (c *cred) installationID() int64 {
	if c.inst != nil {
		return c.inst.id
	}
	return 0
}

func (c *cred) login() string {
	if c.user != nil {
		return c.user.login
	}
	return ""
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func randToken(prefix string) string {
	b := make([]byte, 36)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(base62))))
		b[i] = base62[n.Int64()]
	}
	return prefix + string(b)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// AppID is the id of the App this server hosts.
func (s *Server) AppID() int64 { return s.opts.AppID }

// AppSlug is the App's slug (renamed by a manifest conversion).
func (s *Server) AppSlug() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.appSlug
}

// BotLogin is the login of the App's bot user, "<slug>[bot]".
func (s *Server) BotLogin() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.bot.login
}

// AppPrivateKeyPEM is the App's private key as PKCS#1 PEM, as GitHub
// hands it out, for ghinstallation.NewAppsTransport.
func (s *Server) AppPrivateKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.key)})
}

// InstallationToken mints an installation token directly, as if the App
// had asked for one, with the installation's repositories and permissions.
func (s *Server) InstallationToken(id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.st.installations[id]
	if in == nil {
		s.fatalf("no installation %d", id)
	}
	return s.mintInstallationToken(in, nil, nil).value
}

func (s *Server) mintInstallationToken(in *installation, repos map[*repo]bool, perms map[string]string) *token {
	if perms == nil {
		perms = in.perms
	}
	t := &token{
		value: randToken("ghs_"), kind: AuthInstallation, inst: in, repos: repos, perms: perms,
		expires: time.Now().Add(s.opts.TokenTTL).Truncate(time.Second),
	}
	s.st.tokens[t.value] = t
	return t
}

// AddToken creates a personal access token (classic) for login and
// returns it. Scopes default to "repo" and "read:org"; they are reported
// in X-OAuth-Scopes and not otherwise enforced.
func (s *Server) AddToken(login string, scopes ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.mustUser(login)
	if len(scopes) == 0 {
		scopes = []string{"repo", "read:org"}
	}
	t := &token{value: randToken("ghp_"), kind: AuthPersonal, login: u, scopes: scopes}
	s.st.tokens[t.value] = t
	return t.value
}

// SetToken registers a personal access token with a chosen value (for
// configuration that names the token up front).
func (s *Server) SetToken(tok, login string, scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.mustUser(login)
	if len(scopes) == 0 {
		scopes = []string{"repo", "read:org"}
	}
	s.st.tokens[tok] = &token{value: tok, kind: AuthPersonal, login: u, scopes: scopes}
}

// RevokeToken makes a token (personal or installation) answer 401 from
// now on.
func (s *Server) RevokeToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.st.tokens[tok]; t != nil {
		t.revoked = true
	}
}

// authenticate reads the Authorization header; callers hold s.mu.
func (s *Server) authenticate(r *http.Request) *cred {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return &cred{kind: AuthNone}
	}
	scheme, val, _ := strings.Cut(h, " ")
	val = strings.TrimSpace(val)
	switch strings.ToLower(scheme) {
	case "token", "bearer":
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(val)
		if err != nil {
			return &cred{kind: AuthInvalid, msg: "Bad credentials"}
		}
		u, p, _ := strings.Cut(string(raw), ":")
		val = p
		if p == "" || p == "x-oauth-basic" {
			val = u
		}
	default:
		return &cred{kind: AuthInvalid, msg: "Bad credentials"}
	}
	if strings.Count(val, ".") == 2 {
		if msg := s.verifyJWT(val); msg != "" {
			return &cred{kind: AuthInvalid, msg: msg}
		}
		return &cred{kind: AuthApp, user: s.st.bot}
	}
	return s.tokenCred(val)
}

func (s *Server) tokenCred(val string) *cred {
	t := s.st.tokens[val]
	if t == nil || t.revoked || (!t.expires.IsZero() && !time.Now().Before(t.expires)) ||
		(t.inst != nil && t.inst.removed) {
		return &cred{kind: AuthInvalid, msg: "Bad credentials"}
	}
	if t.kind == AuthInstallation {
		return &cred{kind: AuthInstallation, user: s.st.bot, inst: t.inst, tok: t}
	}
	return &cred{kind: AuthPersonal, user: t.login, tok: t}
}

// verifyJWT checks an App JWT the way GitHub does: RS256 signed by the
// App's key, iss the App id, exp in the future and at most ten minutes
// after iat. It returns GitHub's message on failure.
func (s *Server) verifyJWT(tok string) string {
	const undecodable = "A JSON web token could not be decoded"
	parts := strings.Split(tok, ".")
	hdrRaw, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	claimRaw, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return undecodable
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat json.Number     `json:"iat"`
		Exp json.Number     `json:"exp"`
	}
	if json.Unmarshal(hdrRaw, &hdr) != nil || json.Unmarshal(claimRaw, &claims) != nil || hdr.Alg != "RS256" {
		return undecodable
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return undecodable
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	if iss != strconv.FormatInt(s.opts.AppID, 10) && iss != s.st.clientID {
		return undecodable
	}
	iat, err1 := claims.Iat.Int64()
	exp, err2 := claims.Exp.Int64()
	if err1 != nil {
		return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued."
	}
	if err2 != nil {
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires."
	}
	now := time.Now().Unix()
	switch {
	case iat > now+60:
		return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued."
	case exp <= now:
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires."
	case exp-iat > 600:
		return "'Expiration time' claim ('exp') is too far in the future."
	}
	return ""
}

// bucket is one credential's primary rate-limit window.
type bucket struct {
	limit int
	used  int
	reset time.Time
}

func (b *bucket) remaining() int {
	if r := b.limit - b.used; r > 0 {
		return r
	}
	return 0
}

// bucketFor returns the caller's window, opening a fresh one when the
// previous has reset; callers hold s.mu.
func (s *Server) bucketFor(c *cred, r *http.Request) *bucket {
	key, limit := "", s.opts.RateLimit
	switch c.kind {
	case AuthApp:
		key = "app"
	case AuthInstallation:
		key = fmt.Sprintf("installation:%d", c.inst.id)
	case AuthPersonal:
		key = "user:" + strings.ToLower(c.user.login)
	default:
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		key, limit = "ip:"+host, 60
	}
	b := s.st.buckets[key]
	if b == nil || !time.Now().Before(b.reset) {
		b = &bucket{limit: limit, reset: time.Now().Add(time.Hour).Truncate(time.Second)}
		s.st.buckets[key] = b
	}
	return b
}

func setRateHeaders(h http.Header, b *bucket) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining()))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Used", strconv.Itoa(b.used))
	h.Set("X-RateLimit-Resource", "core")
}

// ExhaustRateLimit spends the rest of the primary rate limit of a
// credential (an installation or personal token) until reset: every
// request it makes answers 403 with X-RateLimit-Remaining: 0 until then,
// as on GitHub. A zero reset means one minute from now.
func (s *Server) ExhaustRateLimit(tok string, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.tokenCred(tok)
	if c.kind == AuthInvalid {
		s.fatalf("ExhaustRateLimit: unknown token")
	}
	if reset.IsZero() {
		reset = time.Now().Add(time.Minute)
	}
	b := s.bucketFor(c, &http.Request{})
	b.used = b.limit
	b.reset = reset.Truncate(time.Second)
}

// IssuedTokens returns every token the server has minted or been given,
// so tests can prove none of them leaked into logs, files or argv.
func (s *Server) IssuedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.st.tokens))
	for v := range s.st.tokens {
		out = append(out, v)
	}
	return out
}
