package githubtest

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// JSON renderers: GitHub's shapes, with the fake's URLs (API under
// /api/v3, web and git at the root, like GitHub Enterprise Server).
// Callers hold s.mu.

type obj = map[string]any

func (s *Server) userJSON(u *user) obj {
	if u == nil {
		return nil
	}
	api := s.api() + "/users/" + url.PathEscape(u.login)
	html := s.URL + "/" + u.login
	if u.app {
		html = s.URL + "/apps/" + s.st.appSlug
	}
	return obj{
		"login":               u.login,
		"id":                  u.id,
		"node_id":             nodeID(u.typ, u.id),
		"avatar_url":          fmt.Sprintf("%s/avatars/u/%d?v=4", s.URL, u.id),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            html,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                u.typ,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

// fullUserJSON is GET /users/{login}; private adds the fields GitHub shows
// only to the user themself (GET /user).
func (s *Server) fullUserJSON(u *user, private bool) obj {
	o := s.userJSON(u)
	var public int
	for _, r := range s.st.repoOrder {
		if r.owner == u && !r.private {
			public++
		}
	}
	var name, email any
	if u.name != "" {
		name = u.name
	}
	if u.email != "" {
		email = u.email
	}
	extra := obj{
		"name": name, "company": nil, "blog": "", "location": nil, "email": email,
		"hireable": nil, "bio": nil, "twitter_username": nil, "public_repos": public,
		"public_gists": 0, "followers": 0, "following": 0,
		"created_at": ts(u.created), "updated_at": ts(u.created),
	}
	for k, v := range extra {
		o[k] = v
	}
	if u.typ == "Organization" {
		o["is_verified"] = false
		o["has_organization_projects"] = true
		o["has_repository_projects"] = true
	}
	if private {
		var owned int
		for _, r := range s.st.repoOrder {
			if r.owner == u && r.private {
				owned++
			}
		}
		o["private_gists"] = 0
		o["total_private_repos"] = owned
		o["owned_private_repos"] = owned
		o["disk_usage"] = 0
		o["collaborators"] = 0
		o["two_factor_authentication"] = true
		o["plan"] = obj{"name": "free", "space": 976562499, "private_repos": 10000, "collaborators": 0}
	}
	return o
}

func (s *Server) orgJSON(o *user) obj {
	api := s.api() + "/orgs/" + url.PathEscape(o.login)
	return obj{
		"login":              o.login,
		"id":                 o.id,
		"node_id":            nodeID("Organization", o.id),
		"url":                api,
		"repos_url":          api + "/repos",
		"events_url":         api + "/events",
		"hooks_url":          api + "/hooks",
		"issues_url":         api + "/issues",
		"members_url":        api + "/members{/member}",
		"public_members_url": api + "/public_members{/member}",
		"avatar_url":         fmt.Sprintf("%s/avatars/u/%d?v=4", s.URL, o.id),
		"description":        nil,
	}
}

func (s *Server) repoAPI(r *repo) string {
	return s.api() + "/repos/" + r.owner.login + "/" + r.name
}

// repoJSON renders a repository; viewer, when not nil, adds the viewer's
// permissions object, and full adds the fields of GET /repos/{o}/{r}.
func (s *Server) repoJSON(r *repo, viewer *cred, full bool) obj {
	api := s.repoAPI(r)
	html := s.URL + "/" + r.fullName()
	host := strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://")
	open := 0
	for _, is := range r.issues {
		if is.state == "open" {
			open++
		}
	}
	forks := 0
	for _, x := range s.st.repoOrder {
		if x.parent == r {
			forks++
		}
	}
	vis := "public"
	if r.private {
		vis = "private"
	}
	o := obj{
		"id": r.id, "node_id": nodeID("Repository", r.id), "name": r.name, "full_name": r.fullName(),
		"private": r.private, "owner": s.userJSON(r.owner), "html_url": html, "description": nil,
		"fork": r.parent != nil, "url": api,
		"forks_url":         api + "/forks",
		"keys_url":          api + "/keys{/key_id}",
		"collaborators_url": api + "/collaborators{/collaborator}",
		"teams_url":         api + "/teams",
		"hooks_url":         api + "/hooks",
		"issue_events_url":  api + "/issues/events{/number}",
		"events_url":        api + "/events",
		"assignees_url":     api + "/assignees{/user}",
		"branches_url":      api + "/branches{/branch}",
		"tags_url":          api + "/tags",
		"blobs_url":         api + "/git/blobs{/sha}",
		"git_tags_url":      api + "/git/tags{/sha}",
		"git_refs_url":      api + "/git/refs{/sha}",
		"trees_url":         api + "/git/trees{/sha}",
		"statuses_url":      api + "/statuses/{sha}",
		"languages_url":     api + "/languages",
		"stargazers_url":    api + "/stargazers",
		"contributors_url":  api + "/contributors",
		"subscribers_url":   api + "/subscribers",
		"subscription_url":  api + "/subscription",
		"commits_url":       api + "/commits{/sha}",
		"git_commits_url":   api + "/git/commits{/sha}",
		"comments_url":      api + "/comments{/number}",
		"issue_comment_url": api + "/issues/comments{/number}",
		"contents_url":      api + "/contents/{+path}",
		"compare_url":       api + "/compare/{base}...{head}",
		"merges_url":        api + "/merges",
		"archive_url":       api + "/{archive_format}{/ref}",
		"downloads_url":     api + "/downloads",
		"issues_url":        api + "/issues{/number}",
		"pulls_url":         api + "/pulls{/number}",
		"milestones_url":    api + "/milestones{/number}",
		"notifications_url": api + "/notifications{?since,all,participating}",
		"labels_url":        api + "/labels{/name}",
		"releases_url":      api + "/releases{/id}",
		"deployments_url":   api + "/deployments",
		"created_at":        ts(r.created), "updated_at": ts(r.created), "pushed_at": ts(r.pushed),
		"git_url":   "git://" + host + "/" + r.fullName() + ".git",
		"ssh_url":   "git@" + strings.Split(host, ":")[0] + ":" + r.fullName() + ".git",
		"clone_url": s.URL + "/" + r.fullName() + ".git",
		"svn_url":   html,
		"homepage":  nil, "size": 0, "stargazers_count": 0, "watchers_count": 0, "language": nil,
		"has_issues": true, "has_projects": true, "has_downloads": true, "has_wiki": true, "has_pages": false,
		"has_discussions": false, "forks_count": forks, "mirror_url": nil, "archived": false, "disabled": false,
		"open_issues_count": open, "license": nil, "allow_forking": true, "is_template": false,
		"web_commit_signoff_required": false, "topics": []string{}, "visibility": vis,
		"forks": forks, "open_issues": open, "watchers": 0, "default_branch": r.defaultBranch,
		"custom_properties": obj{},
	}
	if viewer != nil && viewer.kind != AuthNone {
		var p string
		switch viewer.kind {
		case AuthPersonal:
			p = s.permission(r, viewer.user)
		case AuthInstallation:
			p = "read"
			if viewer.tok.perms["contents"] == "write" && viewer.inst.has(r) {
				p = "write"
			}
		}
		o["permissions"] = obj{
			"admin": atLeast(p, "admin"), "maintain": atLeast(p, "maintain"), "push": atLeast(p, "write"),
			"triage": atLeast(p, "triage"), "pull": atLeast(p, "read"),
		}
	}
	if full {
		o["temp_clone_token"] = ""
		o["allow_squash_merge"] = true
		o["allow_merge_commit"] = true
		o["allow_rebase_merge"] = true
		o["allow_auto_merge"] = false
		o["delete_branch_on_merge"] = false
		o["allow_update_branch"] = false
		o["network_count"] = forks
		o["subscribers_count"] = 0
		if r.owner.typ == "Organization" {
			o["organization"] = s.userJSON(r.owner)
		}
		if r.parent != nil {
			o["parent"] = s.repoJSON(r.parent, nil, false)
			src := r.parent
			for src.parent != nil {
				src = src.parent
			}
			o["source"] = s.repoJSON(src, nil, false)
		}
	}
	return o
}

// smallRepoJSON is the short form of installation payloads.
func (s *Server) smallRepoJSON(r *repo) obj {
	return obj{"id": r.id, "node_id": nodeID("Repository", r.id), "name": r.name, "full_name": r.fullName(), "private": r.private}
}

func (s *Server) labelJSON(r *repo, l *label) obj {
	return obj{
		"id": l.id, "node_id": nodeID("Label", l.id),
		"url":  s.repoAPI(r) + "/labels/" + url.PathEscape(l.name),
		"name": l.name, "color": l.color, "default": l.isDefault, "description": nilIfEmpty(l.description),
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) reactionsRollup(apiURL string, list []*reaction) obj {
	o := obj{"url": apiURL + "/reactions", "total_count": len(list)}
	for _, c := range reactionContents {
		o[c] = 0
	}
	for _, x := range list {
		o[x.content] = o[x.content].(int) + 1
	}
	return o
}

func (s *Server) reactionJSON(x *reaction) obj {
	return obj{"id": x.id, "node_id": nodeID("Reaction", x.id), "user": s.userJSON(x.user), "content": x.content, "created_at": ts(x.created)}
}

func (s *Server) issueHTML(is *issue) string {
	kind := "issues"
	if is.pr != nil {
		kind = "pull"
	}
	return fmt.Sprintf("%s/%s/%s/%d", s.URL, is.repo.fullName(), kind, is.number)
}

func (s *Server) issueJSON(is *issue) obj {
	r := is.repo
	api := fmt.Sprintf("%s/issues/%d", s.repoAPI(r), is.number)
	labels := []obj{}
	for _, l := range is.labels {
		labels = append(labels, s.labelJSON(r, l))
	}
	live := 0
	for _, c := range is.comments {
		if !c.deleted {
			live++
		}
	}
	var reason any
	if is.reason != "" {
		reason = is.reason
	}
	o := obj{
		"url": api, "repository_url": s.repoAPI(r),
		"labels_url": api + "/labels{/name}", "comments_url": api + "/comments",
		"events_url": api + "/events", "html_url": s.issueHTML(is),
		"id": is.id, "node_id": nodeID("Issue", is.id), "number": is.number, "title": is.title,
		"user": s.userJSON(is.user), "labels": labels, "state": is.state, "locked": is.locked,
		"assignee": nil, "assignees": []obj{}, "milestone": nil, "comments": live,
		"created_at": ts(is.created), "updated_at": ts(is.updated), "closed_at": ts(is.closed),
		"author_association": s.association(r, is.user), "active_lock_reason": nil,
		"body": nilIfEmpty(is.body), "reactions": s.reactionsRollup(api, is.reactions),
		"timeline_url": api + "/timeline", "performed_via_github_app": s.viaApp(is.viaApp),
		"state_reason": reason, "draft": false,
	}
	if is.pr != nil {
		papi := fmt.Sprintf("%s/pulls/%d", s.repoAPI(r), is.number)
		o["draft"] = is.pr.draft
		o["pull_request"] = obj{
			"url": papi, "html_url": s.issueHTML(is), "diff_url": s.issueHTML(is) + ".diff",
			"patch_url": s.issueHTML(is) + ".patch", "merged_at": ts(is.pr.mergedAt),
		}
	}
	return o
}

func (s *Server) viaApp(via bool) any {
	if !via {
		return nil
	}
	return s.appJSON()
}

func (s *Server) commentHTML(c *comment) string {
	return s.issueHTML(c.issue) + "#issuecomment-" + strconv.FormatInt(c.id, 10)
}

func (s *Server) commentJSON(c *comment) obj {
	r := c.issue.repo
	api := fmt.Sprintf("%s/issues/comments/%d", s.repoAPI(r), c.id)
	return obj{
		"url": api, "html_url": s.commentHTML(c),
		"issue_url": fmt.Sprintf("%s/issues/%d", s.repoAPI(r), c.issue.number),
		"id":        c.id, "node_id": nodeID("IssueComment", c.id), "user": s.userJSON(c.user),
		"created_at": ts(c.created), "updated_at": ts(c.updated),
		"author_association":       s.association(r, c.user),
		"body":                     c.body,
		"reactions":                s.reactionsRollup(api, c.reactions),
		"performed_via_github_app": s.viaApp(c.viaApp),
	}
}

func (s *Server) issueEventJSON(e *issueEvent, withIssue bool) obj {
	r := e.issue.repo
	o := obj{
		"id": e.id, "node_id": nodeID("LabeledEvent", e.id),
		"url":   fmt.Sprintf("%s/issues/events/%d", s.repoAPI(r), e.id),
		"actor": s.userJSON(e.actor), "event": e.event, "commit_id": nil, "commit_url": nil,
		"created_at": ts(e.created), "performed_via_github_app": s.viaApp(e.viaApp),
	}
	if e.label != nil {
		o["label"] = obj{"name": e.label.name, "color": e.label.color}
	}
	if withIssue {
		o["issue"] = s.issueJSON(e.issue)
	}
	return o
}

func (s *Server) branchJSON(r *repo, owner *user, ref, sha string) obj {
	if r == nil {
		return obj{"label": owner.login + ":" + ref, "ref": ref, "sha": sha, "user": s.userJSON(owner), "repo": nil}
	}
	return obj{
		"label": r.owner.login + ":" + ref, "ref": ref, "sha": sha,
		"user": s.userJSON(r.owner), "repo": s.repoJSON(r, nil, false),
	}
}

func (s *Server) pullJSON(is *issue) obj {
	r, p := is.repo, is.pr
	api := fmt.Sprintf("%s/pulls/%d", s.repoAPI(r), is.number)
	iapi := fmt.Sprintf("%s/issues/%d", s.repoAPI(r), is.number)
	html := s.issueHTML(is)
	labels := []obj{}
	for _, l := range is.labels {
		labels = append(labels, s.labelJSON(r, l))
	}
	live := 0
	for _, c := range is.comments {
		if !c.deleted {
			live++
		}
	}
	statuses := s.repoAPI(r) + "/statuses/" + p.headSHA
	commits, files := s.pullStats(is)
	return obj{
		"url": api, "id": p.id, "node_id": nodeID("PullRequest", p.id), "html_url": html,
		"diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": iapi,
		"commits_url": api + "/commits", "review_comments_url": api + "/comments",
		"review_comment_url": s.repoAPI(r) + "/pulls/comments{/number}",
		"comments_url":       iapi + "/comments", "statuses_url": statuses,
		"number": is.number, "state": is.state, "locked": is.locked, "title": is.title,
		"user": s.userJSON(is.user), "body": nilIfEmpty(is.body), "labels": labels,
		"milestone": nil, "active_lock_reason": nil,
		"created_at": ts(is.created), "updated_at": ts(is.updated), "closed_at": ts(is.closed),
		"merged_at": ts(p.mergedAt), "merge_commit_sha": nil,
		"assignee": nil, "assignees": []obj{}, "requested_reviewers": []obj{}, "requested_teams": []obj{},
		"head": s.branchJSON(p.headRepo, p.headOwner, p.headRef, p.headSHA),
		"base": s.branchJSON(r, r.owner, p.baseRef, p.baseSHA),
		"_links": obj{
			"self": obj{"href": api}, "html": obj{"href": html}, "issue": obj{"href": iapi},
			"comments": obj{"href": iapi + "/comments"}, "review_comments": obj{"href": api + "/comments"},
			"review_comment": obj{"href": s.repoAPI(r) + "/pulls/comments{/number}"},
			"commits":        obj{"href": api + "/commits"}, "statuses": obj{"href": statuses},
		},
		"author_association": s.association(r, is.user), "auto_merge": nil, "draft": p.draft,
		"merged": p.merged, "mergeable": nil, "rebaseable": nil, "mergeable_state": "unknown",
		"merged_by": nil, "comments": live, "review_comments": 0,
		"maintainer_can_modify": p.maintainerCanModify, "commits": commits,
		"additions": 0, "deletions": 0, "changed_files": files,
	}
}

func (s *Server) appJSON() obj {
	perms := obj{}
	for k, v := range s.opts.AppPermissions {
		perms[k] = v
	}
	return obj{
		"id": s.opts.AppID, "slug": s.st.appSlug, "node_id": nodeID("Integration", s.opts.AppID),
		"client_id": s.st.clientID, "owner": s.userJSON(s.appOwner()), "name": s.st.appName,
		"description": "", "external_url": s.URL, "html_url": s.URL + "/apps/" + s.st.appSlug,
		"created_at": ts(s.st.appCreated), "updated_at": ts(s.st.appCreated),
		"permissions": perms, "events": appEvents(), "installations_count": s.liveInstallations(),
	}
}

func appEvents() []string {
	return []string{"issue_comment", "issues", "pull_request", "pull_request_review_comment"}
}

func (s *Server) appOwner() *user {
	if s.st.appOwner == nil {
		s.st.appOwner = s.newUser("githubtest-apps", "Organization")
	}
	return s.st.appOwner
}

func (s *Server) liveInstallations() int {
	n := 0
	for _, in := range s.st.instOrder {
		if !in.removed {
			n++
		}
	}
	return n
}

func (s *Server) installationJSON(in *installation) obj {
	perms := obj{}
	for k, v := range in.perms {
		perms[k] = v
	}
	sel := "selected"
	if in.all {
		sel = "all"
	}
	html := s.URL + "/settings/installations/" + strconv.FormatInt(in.id, 10)
	if in.account.typ == "Organization" {
		html = s.URL + "/organizations/" + in.account.login + "/settings/installations/" + strconv.FormatInt(in.id, 10)
	}
	return obj{
		"id": in.id, "account": s.userJSON(in.account), "repository_selection": sel,
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", s.api(), in.id),
		"repositories_url":  s.api() + "/installation/repositories",
		"html_url":          html, "app_id": s.opts.AppID, "app_slug": s.st.appSlug,
		"target_id": in.account.id, "target_type": in.account.typ, "permissions": perms,
		"events": appEvents(), "created_at": ts(in.created), "updated_at": ts(in.created),
		"single_file_name": nil, "has_multiple_single_files": false, "single_file_paths": []string{},
		"suspended_by": nil, "suspended_at": nil,
	}
}

func (s *Server) checkRunJSON(cr *checkRun) obj {
	api := fmt.Sprintf("%s/check-runs/%d", s.repoAPI(cr.repo), cr.id)
	var concl any
	if cr.conclusion != "" {
		concl = cr.conclusion
	}
	return obj{
		"id": cr.id, "node_id": nodeID("CheckRun", cr.id), "head_sha": cr.headSHA,
		"external_id": cr.externalID, "url": api,
		"html_url":    fmt.Sprintf("%s/%s/runs/%d", s.URL, cr.repo.fullName(), cr.id),
		"details_url": nilIfEmpty(cr.detailsURL), "status": cr.status, "conclusion": concl,
		"started_at": ts(cr.started), "completed_at": ts(cr.completed), "name": cr.name,
		"output": obj{
			"title": nilIfEmpty(cr.title), "summary": nilIfEmpty(cr.summary), "text": nilIfEmpty(cr.text),
			"annotations_count": cr.annotations, "annotations_url": api + "/annotations",
		},
		"check_suite":   obj{"id": cr.id + 1},
		"app":           s.appJSON(),
		"pull_requests": []obj{},
	}
}

func (s *Server) userEventJSON(e *userEvent) obj {
	a := e.actor
	o := obj{
		"id":   strconv.FormatInt(e.id, 10),
		"type": e.typ,
		"actor": obj{
			"id": a.id, "login": a.login, "display_login": a.login, "gravatar_id": "",
			"url": s.api() + "/users/" + a.login, "avatar_url": fmt.Sprintf("%s/avatars/u/%d?", s.URL, a.id),
		},
		"repo":       obj{"id": e.repo.id, "name": e.repo.fullName(), "url": s.repoAPI(e.repo)},
		"payload":    e.payload,
		"public":     !e.repo.private,
		"created_at": ts(e.created),
	}
	if e.repo.owner.typ == "Organization" {
		org := s.orgJSON(e.repo.owner)
		o["org"] = obj{"id": org["id"], "login": org["login"], "gravatar_id": "", "url": org["url"], "avatar_url": org["avatar_url"]}
	}
	return o
}
