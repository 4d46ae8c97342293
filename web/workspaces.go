package web

import (
	"mime"
	"net/http"

	"github.com/asb-dev/asb/app"
)

// stageWorkspace receives a working tree as a tar stream (`asb mcp` with
// WORKSPACE_DIR sends the IDE's checkout) and answers its id, which a
// delegation then names. The size cap and the archive checks live behind
// the Service, so this handler only checks the media type.
func (a *api) stageWorkspace(w http.ResponseWriter, r *http.Request) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-tar" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "Content-Type must be application/x-tar"})
		return
	}
	id, err := a.svc.StageWorkspace(r.Context(), r.Body)
	if err != nil {
		if app.ErrorCode(err) == app.ETOOLARGE {
			// The rest of the body is not read: close the connection
			// rather than drain it.
			w.Header().Set("Connection", "close")
		}
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"workspace": id})
}
