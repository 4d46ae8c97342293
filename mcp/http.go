package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/asb-dev/asb/app"
)

// VerifyFunc maps a bearer token to the caller. Any error means the token
// is missing, unknown or revoked; its text is never shown to the client.
type VerifyFunc func(ctx context.Context, token string) (app.Actor, error)

// HTTPOptions configure NewHTTPHandler.
type HTTPOptions struct {
	// SessionTimeout closes MCP sessions idle for this long (default 30 min).
	SessionTimeout time.Duration
	Logger         *slog.Logger
}

// actorKey is where the verified Actor travels inside auth.TokenInfo.Extra.
const actorKey = "asb.actor"

func actorFromTokenInfo(ti *auth.TokenInfo) (app.Actor, bool) {
	if ti == nil || ti.Extra == nil {
		return app.Actor{}, false
	}
	a, ok := ti.Extra[actorKey].(app.Actor)
	return a, ok && a.Account != "" && string(a.Account) == ti.UserID
}

// errBadToken is the only thing an unauthenticated client learns.
var errBadToken = errors.New("missing or invalid bearer token")

// NewHTTPHandler serves server over Streamable HTTP (POST, GET for the
// SSE stream, DELETE to end a session) behind bearer-token auth.
//
// Every request must carry "Authorization: Bearer <token>"; verify maps the
// token to an Actor. A missing or wrong token gets 401 before the MCP
// handler runs, so nothing happens. The Actor rides in TokenInfo
// (UserID = its account), which makes the SDK bind each MCP session to that
// account (a request from another account for the same session id gets
// 403) and lets the tools act as that caller.
//
// Sessions are stateful (Stateless: false) with SessionTimeout: that is the
// combination every client tested negotiates cleanly. DNS-rebinding
// (localhost) protection is disabled on purpose: asb runs behind reverse
// proxies on the same host, which reach a loopback listener with a public
// Host header and would otherwise get 403. The bearer token, not the Host
// header, is what protects the endpoint.
func NewHTTPHandler(server *sdk.Server, verify VerifyFunc, opts HTTPOptions) http.Handler {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{
		Stateless:                  false,
		SessionTimeout:             opts.SessionTimeout,
		DisableLocalhostProtection: true,
		Logger:                     opts.Logger,
	})
	verifier := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" {
			return nil, errBadToken
		}
		a, err := verify(ctx, token)
		if err != nil || a.Account == "" {
			if err != nil && !errors.Is(err, auth.ErrInvalidToken) && app.ErrorCode(err) != app.EUNAUTHORIZED {
				opts.Logger.Warn("mcp token verification failed", "err", err)
			}
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, errBadToken)
		}
		return &auth.TokenInfo{UserID: string(a.Account), Extra: map[string]any{actorKey: a}}, nil
	}
	// Put the Actor into the request context as well, for anything below
	// that reads it the usual way.
	withActor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := actorFromTokenInfo(auth.TokenInfoFromContext(r.Context())); ok {
			r = r.WithContext(app.WithActor(r.Context(), a))
		}
		h.ServeHTTP(w, r)
	})
	return auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(withActor)
}
