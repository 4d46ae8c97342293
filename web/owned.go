package web

import (
	"context"
	"net/http"

	"github.com/asb-dev/asb/app"
)

// The stored GitHub accounts and MCP servers are listed and removed the
// same way over the API; these handlers hold that once.

// listHandler answers with the caller's list under key: [] rather than
// null when there is none.
func listHandler[T any](a *api, key string, list func(context.Context) ([]T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, err := list(r.Context())
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if out == nil {
			out = []T{}
		}
		writeJSON(w, http.StatusOK, map[string]any{key: out})
	}
}

// removeHandler removes the object named by the id query parameter.
func (a *api) removeHandler(remove func(ctx context.Context, id string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" {
			a.fail(w, r, app.Errorf(app.EINVALID, "id is required"))
			return
		}
		if err := remove(r.Context(), id); err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"removed": id})
	}
}
