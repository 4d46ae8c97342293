package web

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// contentSecurityPolicy allows only same-origin resources and no inline
// script or style; pages load their script and style from /static.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic into a 500 and a log line with the stack.
func recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v) // the server handles aborted responses itself
				}
				log.Error("panic in handler", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()),
					"request_id", middleware.GetReqID(r.Context()))
				writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "Internal error."})
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// requestLog logs one line per request. The query string is left out on
// purpose: it is where a careless client would put a token.
func requestLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			level := slog.LevelDebug
			if ww.Status() == http.StatusInternalServerError {
				level = slog.LevelError
			}
			log.Log(r.Context(), level, "http request", "method", r.Method, "path", r.URL.Path,
				"status", ww.Status(), "bytes", ww.BytesWritten(), "duration", time.Since(start),
				"client", middleware.GetClientIP(r.Context()), "request_id", middleware.GetReqID(r.Context()))
		})
	}
}
