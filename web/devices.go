package web

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/asb-dev/asb/app"
)

// deviceSessions keeps signed-in browsers in the database (multi-user
// mode): each is a device its owner can see and revoke, and a revoked
// device fails on its next request. Only a digest of the cookie is stored.
type deviceSessions struct {
	svc *app.Service
}

func (s deviceSessions) start(ctx context.Context, actor app.Actor, r *http.Request) (string, error) {
	cookie, _, err := s.svc.StartDevice(app.WithActor(ctx, actor), r.UserAgent(), clientIP(r))
	return cookie, err
}

func (s deviceSessions) fromRequest(r *http.Request) (browserSession, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return browserSession{}, false
	}
	actor, dev, err := s.svc.DeviceActor(r.Context(), c.Value)
	if err != nil {
		return browserSession{}, false
	}
	return browserSession{actor: actor, csrf: deviceCSRF(c.Value), created: dev.CreatedAt, seen: dev.SeenAt, device: dev.ID}, true
}

func (s deviceSessions) end(ctx context.Context, cookie string) {
	_ = s.svc.EndDevice(ctx, cookie)
}

// deviceCSRF derives a device's CSRF token from its cookie, so nothing
// more is stored; the token does not reveal the HttpOnly cookie.
func deviceCSRF(cookie string) string {
	d := sha256.Sum256([]byte("csrf:" + cookie))
	return base64.RawURLEncoding.EncodeToString(d[:])
}
