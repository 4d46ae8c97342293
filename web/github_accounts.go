package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/asb-dev/asb/app"
)

// mountGitHubAccounts registers the stored GitHub accounts routes: list,
// add (the token is probed and stored sealed; the answer never holds it)
// and remove. Each is one Service call for the authenticated caller.
func (a *api) mountGitHubAccounts(r chi.Router) {
	r.Get("/github/accounts.json", listHandler(a, "accounts", a.svc.GitHubAccounts))
	r.Post("/github/accounts.json", a.addGitHubAccount)
	r.Delete("/github/accounts.json", a.removeHandler(a.svc.RemoveGitHubAccount))
}

type addGitHubAccountRequest struct {
	Token string `json:"token"`
	// Repo, when given, is checked for push access with the new token.
	Repo string `json:"repo,omitempty"`
}

func (a *api) addGitHubAccount(w http.ResponseWriter, r *http.Request) {
	var req addGitHubAccountRequest
	if !a.decode(w, r, &req) {
		return
	}
	if req.Repo != "" {
		if _, _, err := app.ParseRepo(req.Repo); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	acct, err := a.svc.AddGitHubToken(r.Context(), req.Token)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := map[string]any{"account": acct}
	if req.Repo != "" {
		ok, err := a.svc.CheckGitHubAccess(r.Context(), acct.ID, req.Repo)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		out["repo"], out["can_push"] = req.Repo, ok
	}
	writeJSON(w, http.StatusOK, out)
}
