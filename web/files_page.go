package web

import (
	"bytes"
	"net/http"
	"net/url"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/asb-dev/asb/app"
)

// maxViewBytes caps a file shown inline; larger files are downloaded.
const maxViewBytes = 256 << 10

type crumb struct {
	Name string
	Path string
}

type filesData struct {
	ID      string
	Path    string
	Crumbs  []crumb
	Entries []app.FileInfo
	// For a file view:
	Content  string
	Binary   bool
	TooLarge bool
	Download string
}

// downloadURL is the JSON route that streams a workspace file.
func downloadURL(id app.SessionID, p string) string {
	return "/files/download?" + url.Values{"session": {string(id)}, "path": {p}}.Encode()
}

func crumbsOf(p string) []crumb {
	out := []crumb{{Name: "workspace", Path: "/workspace"}}
	rest := strings.TrimPrefix(p, "/workspace")
	cur := "/workspace"
	for _, part := range strings.Split(strings.Trim(rest, "/"), "/") {
		if part == "" {
			continue
		}
		cur += "/" + part
		out = append(out, crumb{Name: part, Path: cur})
	}
	return out
}

// pathFile reads the session the path names and the workspace path in
// the query. When it cannot, it has answered the request and ok is false.
func (d *dash) pathFile(w http.ResponseWriter, r *http.Request) (id app.SessionID, clean string, ok bool) {
	id, err := d.pathSession(r)
	if err == nil {
		clean, err = app.WorkspacePath(r.URL.Query().Get("path"))
	}
	if err != nil {
		d.fail(w, r, err)
		return id, clean, false
	}
	return id, clean, true
}

func (d *dash) filesPage(w http.ResponseWriter, r *http.Request) {
	id, clean, ok := d.pathFile(w, r)
	if !ok {
		return
	}
	entries, err := d.svc.Files(r.Context(), id, clean)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	p := d.newPage(r, "Files · "+path.Base(clean), "files")
	p.Data = filesData{ID: string(id), Path: clean, Crumbs: crumbsOf(clean), Entries: entries}
	d.render(w, r, http.StatusOK, "files", p)
}

// limitedBuffer keeps the first max bytes and notes that more came.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	room := l.max - l.buf.Len()
	if len(p) > room {
		l.over = true
		p = p[:max(room, 0)]
	}
	l.buf.Write(p)
	return len(p), nil
}

func (d *dash) viewFilePage(w http.ResponseWriter, r *http.Request) {
	id, clean, ok := d.pathFile(w, r)
	if !ok {
		return
	}
	lb := &limitedBuffer{max: maxViewBytes}
	// One byte over the view limit tells "large" from "exactly the limit".
	err := d.svc.ReadFile(r.Context(), id, clean, maxViewBytes+1, lb)
	fd := filesData{ID: string(id), Path: clean, Crumbs: crumbsOf(clean), Download: downloadURL(id, clean)}
	switch {
	case app.ErrorCode(err) == app.ETOOLARGE || lb.over:
		fd.TooLarge = true
	case err != nil:
		d.fail(w, r, err)
		return
	}
	b := lb.buf.Bytes()
	if bytes.IndexByte(b, 0) >= 0 || (!fd.TooLarge && !utf8.Valid(b)) {
		fd.Binary = true
	} else if !fd.TooLarge {
		fd.Content = string(b)
	}
	p := d.newPage(r, path.Base(clean), "files")
	p.Data = fd
	d.render(w, r, http.StatusOK, "files", p)
}
