package web

import (
	"io"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/asb-dev/asb/app"
)

// bundle streams the git bundle of the agent's commits on an uploaded
// working tree (GET /bundle?run=&dir=), so `asb mcp` can bring them back
// into the checkout it uploaded. Only the run's owner (or an admin) gets it.
func (a *api) bundle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("run") == "" || q.Get("dir") == "" {
		a.fail(w, r, app.Errorf(app.EINVALID, "run and dir are required"))
		return
	}
	id, err := app.ParseRunID(q.Get("run"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	rc, size, err := a.svc.RunBundle(r.Context(), id, q.Get("dir"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	// The same attachment headers as a workspace file download.
	dw := &downloadWriter{w: w, name: string(id) + ".bundle"}
	if _, err := io.Copy(dw, io.LimitReader(rc, size)); err != nil && r.Context().Err() == nil {
		a.log.Warn("bundle download failed midway", "run", id, "err", err, "request_id", middleware.GetReqID(r.Context()))
		panic(http.ErrAbortHandler)
	}
}
