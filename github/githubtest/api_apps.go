package githubtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// loadRepo finds {owner}/{repo} and checks the caller may see it,
// answering 404 otherwise, as GitHub does for private repositories.
func (c *call) loadRepo() *repo {
	r := c.s.lookupRepo(c.p("owner") + "/" + c.p("repo"))
	if r == nil || !c.canRead(r) {
		c.notFound()
		return nil
	}
	return r
}

func (c *call) canRead(r *repo) bool {
	switch c.cred.kind {
	case AuthInstallation:
		return !r.private || c.instHas(r)
	case AuthPersonal:
		return atLeast(c.s.permission(r, c.cred.user), "read")
	case AuthNone:
		return !r.private
	}
	return false
}

// instHas reports whether the installation token reaches r.
func (c *call) instHas(r *repo) bool {
	t := c.cred.tok
	return t.inst.has(r) && (t.repos == nil || t.repos[r])
}

// allow checks a write: installation tokens need one of the permission
// categories at "write" and the repository in the installation, personal
// tokens at least level on the repository. It answers the refusal.
func (c *call) allow(r *repo, level string, categories ...string) bool {
	switch c.cred.kind {
	case AuthNone:
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return false
	case AuthInstallation:
		if c.instHas(r) {
			for _, cat := range categories {
				if c.cred.tok.perms[cat] == "write" {
					return true
				}
			}
		}
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return false
	case AuthPersonal:
		if atLeast(c.s.permission(r, c.cred.user), level) {
			return true
		}
		c.fail(http.StatusForbidden, "Must have push access to repository")
		return false
	}
	c.fail(http.StatusForbidden, "Resource not accessible by integration")
	return false
}

func (c *call) intParam(name string) (int64, bool) {
	n, err := strconv.ParseInt(c.p(name), 10, 64)
	if err != nil || n <= 0 {
		c.notFound()
		return 0, false
	}
	return n, true
}

func (c *call) getRateLimit() {
	s := c.s
	b := s.bucketFor(c.cred, c.r)
	core := obj{"limit": b.limit, "used": b.used, "remaining": b.remaining(), "reset": b.reset.Unix(), "resource": "core"}
	other := func(name string, limit int) obj {
		return obj{"limit": limit, "used": 0, "remaining": limit, "reset": time.Now().Add(time.Hour).Unix(), "resource": name}
	}
	c.json(http.StatusOK, obj{
		"resources": obj{
			"core": core, "search": other("search", 30), "graphql": other("graphql", 5000),
			"integration_manifest": other("integration_manifest", 5000),
		},
		"rate": core,
	})
}

func (c *call) getApp() { c.json(http.StatusOK, c.s.appJSON()) }

func (c *call) listInstallations() {
	var all []obj
	for _, in := range c.s.st.instOrder {
		if !in.removed {
			all = append(all, c.s.installationJSON(in))
		}
	}
	lo, hi := c.paginate(len(all), 30)
	c.json(http.StatusOK, append([]obj{}, all[lo:hi]...))
}

func (c *call) installation() *installation {
	id, ok := c.intParam("id")
	if !ok {
		return nil
	}
	in := c.s.st.installations[id]
	if in == nil || in.removed {
		c.notFound()
		return nil
	}
	return in
}

func (c *call) getInstallation() {
	if in := c.installation(); in != nil {
		c.json(http.StatusOK, c.s.installationJSON(in))
	}
}

func (c *call) createAccessToken() {
	in := c.installation()
	if in == nil {
		return
	}
	var req struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if !c.decode(&req) {
		return
	}
	s := c.s
	var scoped map[*repo]bool
	if len(req.Repositories) > 0 || len(req.RepositoryIDs) > 0 {
		scoped = map[*repo]bool{}
		for _, name := range req.Repositories {
			if !strings.Contains(name, "/") {
				name = in.account.login + "/" + name
			}
			r := s.lookupRepo(name)
			if r == nil || !in.has(r) {
				c.fail(http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
				return
			}
			scoped[r] = true
		}
		for _, id := range req.RepositoryIDs {
			var found *repo
			for _, r := range s.st.repoOrder {
				if r.id == id && in.has(r) {
					found = r
				}
			}
			if found == nil {
				c.fail(http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
				return
			}
			scoped[found] = true
		}
	}
	perms := in.perms
	if len(req.Permissions) > 0 {
		perms = map[string]string{}
		for k, v := range req.Permissions {
			granted := in.perms[k]
			if granted == "" || (v == "write" && granted != "write") || (v != "read" && v != "write") {
				c.fail(http.StatusUnprocessableEntity, "The permissions requested are not granted to this installation.")
				return
			}
			perms[k] = v
		}
	}
	t := s.mintInstallationToken(in, scoped, perms)
	pj := obj{}
	for k, v := range perms {
		pj[k] = v
	}
	sel := "selected"
	if in.all && scoped == nil {
		sel = "all"
	}
	out := obj{"token": t.value, "expires_at": ts(t.expires), "permissions": pj, "repository_selection": sel}
	if scoped != nil {
		repos := []obj{}
		for _, r := range s.installationRepos(in, scoped) {
			repos = append(repos, s.repoJSON(r, nil, false))
		}
		out["repositories"] = repos
	}
	c.header.Set("Location", fmt.Sprintf("%s/app/installations/%d/access_tokens", s.api(), in.id))
	c.json(http.StatusCreated, out)
}

func (c *call) getRepoInstallation() {
	r := c.s.lookupRepo(c.p("owner") + "/" + c.p("repo"))
	if r == nil {
		c.notFound()
		return
	}
	in := c.s.installationFor(r)
	if in == nil {
		c.notFound()
		return
	}
	c.json(http.StatusOK, c.s.installationJSON(in))
}

func (c *call) listInstallationRepos() {
	t := c.cred.tok
	var all []obj
	for _, r := range c.s.installationRepos(t.inst, t.repos) {
		all = append(all, c.s.repoJSON(r, c.cred, false))
	}
	lo, hi := c.paginate(len(all), 30)
	sel := "selected"
	if t.inst.all && t.repos == nil {
		sel = "all"
	}
	c.json(http.StatusOK, obj{"total_count": len(all), "repository_selection": sel, "repositories": append([]obj{}, all[lo:hi]...)})
}

func (c *call) revokeInstallationToken() {
	c.cred.tok.revoked = true
	c.status, c.out = http.StatusNoContent, nil
}
