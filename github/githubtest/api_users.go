package githubtest

import (
	"net/http"
	"strconv"
	"strings"
)

func (c *call) needUser() bool {
	switch c.cred.kind {
	case AuthPersonal:
		return true
	case AuthNone:
		c.fail(http.StatusUnauthorized, "Requires authentication")
	default:
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
	}
	return false
}

func (c *call) getAuthenticatedUser() {
	if c.needUser() {
		c.json(http.StatusOK, c.s.fullUserJSON(c.cred.user, true))
	}
}

func (c *call) orgList(u *user) {
	all := []obj{}
	for _, o := range u.orgs {
		all = append(all, c.s.orgJSON(o))
	}
	lo, hi := c.paginate(len(all), 30)
	c.json(http.StatusOK, all[lo:hi])
}

func (c *call) listMyOrgs() {
	if c.needUser() {
		c.orgList(c.cred.user)
	}
}

func (c *call) pathUser() *user {
	u := c.s.lookupUser(c.p("login"))
	if u == nil {
		c.notFound()
	}
	return u
}

func (c *call) getUser() {
	if u := c.pathUser(); u != nil {
		c.json(http.StatusOK, c.s.fullUserJSON(u, false))
	}
}

func (c *call) listUserOrgs() {
	if u := c.pathUser(); u != nil {
		c.orgList(u)
	}
}

// listUserEvents is the user's own activity feed, newest first, at most
// 300 events; private-repository events only for the user themself.
func (c *call) listUserEvents() {
	u := c.pathUser()
	if u == nil {
		return
	}
	self := c.cred.kind == AuthPersonal && c.cred.user == u && !strings.HasSuffix(c.r.URL.Path, "/public")
	var all []obj
	evs := c.s.st.userEvents
	for i := len(evs) - 1; i >= 0 && len(all) < 300; i-- {
		e := evs[i]
		if e.actor == u && (!e.repo.private || self) {
			all = append(all, c.s.userEventJSON(e))
		}
	}
	lo, hi := c.paginate(len(all), 30)
	c.header.Set("X-Poll-Interval", strconv.Itoa(c.s.opts.PollInterval))
	c.json(http.StatusOK, append([]obj{}, all[lo:hi]...))
}

func (c *call) getRepo() {
	if r := c.loadRepo(); r != nil {
		c.json(http.StatusOK, c.s.repoJSON(r, c.cred, true))
	}
}

var foldPerm = map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "none": "none"}

func (c *call) getPermission() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	switch c.cred.kind {
	case AuthNone:
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return
	case AuthPersonal:
		if !atLeast(c.s.permission(r, c.cred.user), "write") {
			c.fail(http.StatusForbidden, "Must have push access to view repository collaborators.")
			return
		}
	}
	u := c.s.lookupUser(c.p("login"))
	if u == nil {
		c.notFound()
		return
	}
	p := c.s.permission(r, u)
	role := p
	if p == "none" {
		role = ""
	}
	uj := c.s.userJSON(u)
	uj["permissions"] = obj{
		"admin": atLeast(p, "admin"), "maintain": atLeast(p, "maintain"), "push": atLeast(p, "write"),
		"triage": atLeast(p, "triage"), "pull": atLeast(p, "read"),
	}
	uj["role_name"] = role
	c.json(http.StatusOK, obj{"permission": foldPerm[p], "role_name": role, "user": uj})
}

func (c *call) getBranch() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	name := c.p("branch")
	sha := c.s.revParse(r, "refs/heads/"+name)
	if sha == "" {
		c.fail(http.StatusNotFound, "Branch not found")
		return
	}
	api := c.s.repoAPI(r)
	c.json(http.StatusOK, obj{
		"name":      name,
		"commit":    obj{"sha": sha, "node_id": nodeID("Commit", int64(len(sha))), "url": api + "/commits/" + sha},
		"_links":    obj{"self": api + "/branches/" + name, "html": c.s.URL + "/" + r.fullName() + "/tree/" + name},
		"protected": r.protected[name],
		"protection": obj{
			"enabled": r.protected[name], "required_status_checks": obj{"enforcement_level": "off", "contexts": []string{}, "checks": []string{}},
		},
		"protection_url": api + "/branches/" + name + "/protection",
	})
}

// listMyRepos is GET /user/repos: the repositories the token's user owns,
// collaborates on or sees through an organization, each with the user's
// permissions, oldest first, 30 a page by default.
func (c *call) listMyRepos() {
	if !c.needUser() {
		return
	}
	u := c.cred.user
	all := []obj{}
	for _, r := range c.s.st.repoOrder {
		member := false
		for _, o := range u.orgs {
			member = member || o == r.owner
		}
		_, explicit := r.perms[strings.ToLower(u.login)]
		if (r.owner == u || explicit || member) && atLeast(c.s.permission(r, u), "read") {
			all = append(all, c.s.repoJSON(r, c.cred, false))
		}
	}
	lo, hi := c.paginate(len(all), 30)
	c.json(http.StatusOK, all[lo:hi])
}
