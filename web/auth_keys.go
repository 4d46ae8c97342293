package web

import (
	"context"
	"net/http"

	"github.com/asb-dev/asb/app"
)

// BearerAuthenticator accepts the two bearer credentials: the operator
// token (break-glass: app.OperatorActor, which bypasses ownership) and a
// personal API key (asb_k_…), which acts as its account. The key is
// looked up on every request, so a revoked key fails on the next one.
type BearerAuthenticator struct {
	svc      *app.Service
	operator *TokenAuthenticator
}

// NewBearerAuthenticator accepts operatorToken (none when empty) and the
// API keys svc knows.
func NewBearerAuthenticator(svc *app.Service, operatorToken string) *BearerAuthenticator {
	return &BearerAuthenticator{svc: svc, operator: OperatorTokenAuthenticator(operatorToken)}
}

// Authenticate implements Authenticator.
func (b *BearerAuthenticator) Authenticate(r *http.Request) (app.Actor, error) {
	tok, ok := BearerToken(r)
	if !ok {
		return app.Actor{}, app.Errorf(app.EUNAUTHORIZED, "missing credentials: send Authorization: Bearer <token or API key>")
	}
	return b.Verify(r.Context(), tok)
}

// Verify maps a bearer token to its actor; it is /mcp's check too.
func (b *BearerAuthenticator) Verify(ctx context.Context, tok string) (app.Actor, error) {
	if app.IsAPIKey(tok) && b.svc != nil {
		return b.svc.AuthenticateKey(ctx, tok)
	}
	probe, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	probe.Header.Set("Authorization", "Bearer "+tok)
	return b.operator.Authenticate(probe)
}
