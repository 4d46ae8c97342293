package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// fleetRow is one session as the fleet table shows it.
type fleetRow struct {
	ID       string
	State    string
	Waiting  bool
	Question string
	Title    string
	Repo     string
	RepoURL  string
	Origin   link
	Host     string
	Uptime   string
	CPU      string
	Mem      string
	Pinned   bool
	Queued   int
}

// link is a label with an optional address (external links only when known).
type link struct {
	Label string
	URL   string
}

type fleetData struct {
	Rows   []fleetRow
	Total  int
	State  string
	Repo   string
	All    bool
	States []string
	// Warning says why part of the table is missing (box stats unreadable).
	Warning string
}

// fleetStates are the filter choices, in the order a person scans them.
var fleetStates = []string{"waiting", "running", "starting", "queued", "idle", "done", "failed", "cancelled", "closed"}

func (d *dash) fleetPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := fleetData{State: q.Get("state"), Repo: strings.TrimSpace(q.Get("repo")), All: q.Get("all") == "1", States: fleetStates}
	if f.State != "" && !validFleetState(f.State) {
		f.State = ""
	}
	f.Repo = clipText(f.Repo, 200)
	views, err := d.svc.Fleet(r.Context(), app.FleetFilter{IncludeClosed: f.All || f.State == "closed", Limit: 500})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	stats := map[app.BoxRef]app.Box{}
	if d.o.Boxes != nil {
		boxes, err := d.o.Boxes(r.Context())
		if err != nil {
			d.log.Warn("box stats for the fleet page", "err", err)
			f.Warning = "Box CPU and memory could not be read; the rest is current."
		}
		for _, b := range boxes {
			stats[b.BoxRef] = b
		}
	}
	f.Total = len(views)
	now := time.Now()
	for _, v := range views {
		row := fleetRowOf(v, stats, now)
		if f.State != "" && row.State != f.State {
			continue
		}
		if f.Repo != "" && !strings.Contains(strings.ToLower(row.Repo), strings.ToLower(f.Repo)) {
			continue
		}
		f.Rows = append(f.Rows, row)
	}
	p := d.newPage(r, "Fleet", "fleet")
	p.Data = f
	d.render(w, r, http.StatusOK, "fleet", p)
}

func validFleetState(s string) bool {
	for _, v := range fleetStates {
		if v == s {
			return true
		}
	}
	return false
}

func fleetRowOf(v app.SessionView, stats map[app.BoxRef]app.Box, now time.Time) fleetRow {
	s := v.Session
	row := fleetRow{
		ID: string(s.ID), State: v.State(), Title: s.Title, Question: v.Question,
		Origin: originLink(s.Origin), Host: s.Box.Host, Pinned: s.Pinned, Queued: v.Queued,
	}
	row.Waiting = row.State == string(app.StateWaiting)
	if repos := sessionRepos(s); len(repos) > 0 {
		row.Repo = repos[0]
		if len(repos) > 1 {
			row.Repo += " +" + strconv.Itoa(len(repos)-1)
		}
		row.RepoURL = "https://github.com/" + repos[0]
	}
	if s.State == app.SessionActive {
		row.Uptime = humanDuration(now.Sub(s.CreatedAt))
	}
	if b, ok := stats[s.Box]; ok && !s.Box.IsZero() {
		if b.CPUPct > 0 || b.MemMiB > 0 {
			row.CPU = strconv.FormatFloat(b.CPUPct, 'f', 0, 64) + "%"
			row.Mem = strconv.Itoa(b.MemMiB) + " MiB"
		}
	}
	return row
}

// sessionRepos lists the repositories a session works on.
func sessionRepos(s app.Session) []string {
	var out []string
	for _, src := range s.Sources {
		if src.Repo != "" {
			out = append(out, src.Repo)
		}
	}
	if len(out) == 0 && s.Origin.Repo != "" {
		out = append(out, s.Origin.Repo)
	}
	return out
}

// originLink says where a run came from, linking back to GitHub when it
// came from there.
func originLink(o app.Origin) link {
	switch o.Kind {
	case app.OriginGitHubComment, app.OriginGitHubLabel:
		kind, path := "issue", "issues"
		if o.PullRequest {
			kind, path = "PR", "pull"
		}
		l := link{Label: kind}
		if o.Repo != "" && o.Number > 0 {
			l.Label = kind + " " + o.Repo + "#" + strconv.Itoa(o.Number)
			l.URL = "https://github.com/" + o.Repo + "/" + path + "/" + strconv.Itoa(o.Number)
		}
		if strings.HasPrefix(o.URL, "https://") {
			l.URL = o.URL
		}
		return l
	case app.OriginMCP:
		return link{Label: "MCP"}
	case app.OriginDashboard:
		return link{Label: "dashboard"}
	case app.OriginAPI:
		return link{Label: "API"}
	}
	return link{Label: string(o.Kind)}
}
