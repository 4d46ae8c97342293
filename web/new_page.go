package web

import (
	"net/http"
	"strings"

	"github.com/asb-dev/asb/app"
)

// maxRepoSuggestions bounds the datalist of the repository field.
const maxRepoSuggestions = 500

type newRunData struct {
	Repo     string
	Task     string
	Repos    []string
	Detected string
	// Attached is the repository the run will get: the field, else the
	// one named in the task.
	Attached string
	FromTask bool
	Preview  bool
	RepoErr  string
	TaskErr  string
}

func (d *dash) newRunPage(w http.ResponseWriter, r *http.Request) {
	d.renderNewRun(w, r, http.StatusOK, newRunData{Repo: strings.TrimSpace(r.URL.Query().Get("repo"))})
}

func (d *dash) renderNewRun(w http.ResponseWriter, r *http.Request, code int, nd newRunData) {
	if d.o.RepoSuggestions != nil {
		repos, err := d.o.RepoSuggestions(r.Context())
		if err != nil {
			d.log.Warn("repository suggestions", "err", err)
		}
		if len(repos) > maxRepoSuggestions {
			repos = repos[:maxRepoSuggestions]
		}
		nd.Repos = repos
	}
	p := d.newPage(r, "New run", "new")
	p.Data = nd
	d.render(w, r, code, "new", p)
}

// attach decides the run's repository: the field when filled, else the
// one the task names.
func attach(nd *newRunData) {
	nd.Detected = detectRepo(nd.Task)
	switch {
	case nd.Repo != "":
		nd.Attached = nd.Repo
	case nd.Detected != "":
		nd.Attached, nd.FromTask = nd.Detected, true
	}
}

func (d *dash) newRunPost(w http.ResponseWriter, r *http.Request) {
	nd := newRunData{Repo: strings.TrimSpace(r.PostFormValue("repo")), Task: r.PostFormValue("task")}
	if len(nd.Repo) > 200 {
		nd.RepoErr = "A repository is owner/name, at most 140 characters."
		nd.Repo = clipText(nd.Repo, 200)
		d.renderNewRun(w, r, http.StatusBadRequest, nd)
		return
	}
	nd.Repo = strings.TrimSuffix(strings.TrimPrefix(nd.Repo, "https://github.com/"), ".git")
	attach(&nd)
	if nd.Repo != "" {
		if _, _, err := app.ParseRepo(nd.Repo); err != nil {
			nd.RepoErr = app.ErrorMessage(err)
			d.renderNewRun(w, r, http.StatusBadRequest, nd)
			return
		}
	}
	if r.PostFormValue("action") == "preview" {
		if strings.TrimSpace(nd.Task) == "" {
			nd.TaskErr = "Describe the task."
		}
		nd.Preview = true
		d.renderNewRun(w, r, http.StatusOK, nd)
		return
	}
	var sources []app.Source
	if nd.Attached != "" {
		sources = []app.Source{{Repo: nd.Attached}}
	}
	dl, err := d.svc.Delegate(r.Context(), app.DelegateRequest{Task: nd.Task, Sources: sources, Origin: dashOrigin(r)})
	if err != nil {
		code := StatusCode(app.ErrorCode(err))
		if code >= 500 {
			d.fail(w, r, err)
			return
		}
		msg := app.ErrorMessage(err)
		if strings.HasPrefix(msg, "repository") {
			nd.RepoErr = msg
		} else {
			nd.TaskErr = msg
		}
		d.renderNewRun(w, r, code, nd)
		return
	}
	http.Redirect(w, r, "/s/"+string(dl.Session.ID)+"?done=started", http.StatusSeeOther)
}
