package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/asb-dev/asb/app"
)

// Authenticator identifies the caller of a request. It is the seam where
// further credentials plug in (personal API keys, the dashboard's session
// cookie): each is one implementation, and New does not change.
//
// Authenticate returns an *app.Error with code EUNAUTHORIZED when the
// request carries no usable credential; its message is shown to the caller.
type Authenticator interface {
	Authenticate(r *http.Request) (app.Actor, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (app.Actor, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(r *http.Request) (app.Actor, error) { return f(r) }

// constantTimeEqual is a variable only so a test can prove the comparison
// goes through crypto/subtle for tokens of every length.
var constantTimeEqual = subtle.ConstantTimeCompare

// TokenAuthenticator accepts one bearer token and maps it to one actor.
type TokenAuthenticator struct {
	// digest is the SHA-256 of the token. Comparing digests keeps both
	// sides the same length, so neither the comparison nor an early
	// length check reveals how long the token is.
	digest [sha256.Size]byte
	actor  app.Actor
	set    bool
}

// NewTokenAuthenticator accepts token for actor. An empty token accepts
// nobody: a missing configuration fails closed.
func NewTokenAuthenticator(token string, actor app.Actor) *TokenAuthenticator {
	return &TokenAuthenticator{digest: sha256.Sum256([]byte(token)), actor: actor, set: token != ""}
}

// OperatorTokenAuthenticator accepts the operator token as app.OperatorActor.
func OperatorTokenAuthenticator(token string) *TokenAuthenticator {
	return NewTokenAuthenticator(token, app.OperatorActor)
}

// Authenticate implements Authenticator.
func (t *TokenAuthenticator) Authenticate(r *http.Request) (app.Actor, error) {
	tok, ok := BearerToken(r)
	if !ok {
		return app.Actor{}, app.Errorf(app.EUNAUTHORIZED, "missing credentials: send Authorization: Bearer <token>")
	}
	got := sha256.Sum256([]byte(tok))
	// Always compare, even when no token is configured, so both paths take the same time.
	match := constantTimeEqual(got[:], t.digest[:]) == 1
	if !match || !t.set {
		return app.Actor{}, app.Errorf(app.EUNAUTHORIZED, "the token is not valid")
	}
	return t.actor, nil
}

// BearerToken returns the token of a single "Authorization: Bearer"
// header. The scheme is case-insensitive (RFC 9110 §11.1).
func BearerToken(r *http.Request) (string, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// queryTokenParams are query parameters where careless clients put a
// token. URLs end up in access logs, shell history, proxies and Referer
// headers, so a token there is refused even when it is valid.
var queryTokenParams = []string{"token", "access_token"}

// authenticate puts the caller's actor in the request context or answers
// 400 (token in the URL) or 401. It never logs the Authorization header
// or the query string.
func authenticate(auth Authenticator, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			for _, p := range queryTokenParams {
				if q.Has(p) {
					log.Warn("refused a token in the URL", "path", r.URL.Path, "param", p,
						"client", middleware.GetClientIP(r.Context()), "request_id", middleware.GetReqID(r.Context()))
					writeError(w, app.Errorf(app.EINVALID,
						"a token in the URL (?%s=) is refused because URLs are logged and leak; send it as Authorization: Bearer <token> (and rotate it if it was real)", p))
					return
				}
			}
			actor, err := auth.Authenticate(r)
			if err == nil && actor.Account == "" {
				err = app.Errorf(app.EUNAUTHORIZED, "the credentials name no account")
			}
			if err != nil {
				if app.ErrorCode(err) == app.EINTERNAL {
					log.Error("authentication failed", "path", r.URL.Path, "err", err, "request_id", middleware.GetReqID(r.Context()))
				} else {
					log.Info("unauthenticated request", "path", r.URL.Path,
						"client", middleware.GetClientIP(r.Context()), "request_id", middleware.GetReqID(r.Context()))
				}
				if code := app.ErrorCode(err); code == app.EUNAUTHORIZED {
					w.Header().Set("WWW-Authenticate", `Bearer realm="asb"`)
				}
				writeError(w, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(app.WithActor(r.Context(), actor)))
		})
	}
}
