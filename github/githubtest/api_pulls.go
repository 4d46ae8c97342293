package githubtest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// loadPull is loadIssue for an issue that is a pull request.
func (c *call) loadPull() (*repo, *issue) {
	r, is := c.loadIssue()
	if is != nil && is.pr == nil {
		c.notFound()
		return nil, nil
	}
	return r, is
}

func (c *call) getPull() {
	if _, is := c.loadPull(); is != nil {
		c.json(http.StatusOK, c.s.pullJSON(is))
	}
}

func (c *call) listPulls() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	state := c.q("state")
	if state == "" {
		state = "open"
	}
	headOwner, headRef, byHead := strings.Cut(c.q("head"), ":")
	base := c.q("base")
	var list []*issue
	for _, is := range sortedIssues(r) {
		p := is.pr
		if p == nil || (state != "all" && is.state != state) || (base != "" && p.baseRef != base) {
			continue
		}
		if byHead && (!strings.EqualFold(p.headOwner.login, headOwner) || p.headRef != headRef) {
			continue
		}
		list = append(list, is)
	}
	key := func(is *issue) time.Time { return is.created }
	asc := c.q("direction") == "asc"
	if srt := c.q("sort"); srt != "" && srt != "created" {
		key = func(is *issue) time.Time { return is.updated }
		asc = c.q("direction") != "desc"
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := key(list[i]), key(list[j])
		if a.Equal(b) {
			return (list[i].number < list[j].number) == asc
		}
		return a.Before(b) == asc
	})
	lo, hi := c.paginate(len(list), 30)
	out := []obj{}
	for _, is := range list[lo:hi] {
		out = append(out, c.s.pullJSON(is))
	}
	c.json(http.StatusOK, out)
}

// findHeadRepo resolves the head repository of a new pull request: the
// base itself, head_repo, or owner's repository in the base's network.
func (s *Server) findHeadRepo(base *repo, owner, headRepo string) *repo {
	if headRepo != "" {
		if !strings.Contains(headRepo, "/") {
			headRepo = owner + "/" + headRepo
		}
		return s.lookupRepo(headRepo)
	}
	if strings.EqualFold(owner, base.owner.login) {
		return base
	}
	root := func(r *repo) *repo {
		for r.parent != nil {
			r = r.parent
		}
		return r
	}
	var found *repo
	for _, r := range s.st.repoOrder {
		if strings.EqualFold(r.owner.login, owner) && root(r) == root(base) {
			if found == nil || strings.EqualFold(r.name, base.name) {
				found = r
			}
		}
	}
	return found
}

// ahead counts the commits of head:headRef not on base:baseRef.
func (s *Server) ahead(base *repo, baseRef string, head *repo, headRef string) int {
	dir := s.repoDir(base)
	headSpec := "refs/heads/" + headRef
	if head != base {
		tmp := "refs/githubtest/compare"
		if _, err := s.git(dir, nil, nil, "fetch", "--quiet", "--no-tags", s.repoDir(head), "+"+headSpec+":"+tmp); err != nil {
			return 0
		}
		defer func() { _, _ = s.git(dir, nil, nil, "update-ref", "-d", tmp) }()
		headSpec = tmp
	}
	out, err := s.git(dir, nil, nil, "rev-list", "--count", "refs/heads/"+baseRef+".."+headSpec)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(out)
	return n
}

func (c *call) createPull() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	var req struct {
		Title               *string `json:"title"`
		Body                *string `json:"body"`
		Head                string  `json:"head"`
		HeadRepo            string  `json:"head_repo"`
		Base                string  `json:"base"`
		Draft               bool    `json:"draft"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if !c.decode(&req) {
		return
	}
	switch {
	case req.Title == nil || *req.Title == "":
		c.invalid("PullRequest", "title", "missing_field", "")
		return
	case req.Head == "":
		c.invalid("PullRequest", "head", "missing_field", "")
		return
	case req.Base == "":
		c.invalid("PullRequest", "base", "missing_field", "")
		return
	}
	if !c.allow(r, "read", "pull_requests") {
		return
	}
	s := c.s
	owner, ref, cross := strings.Cut(req.Head, ":")
	if !cross {
		owner, ref = r.owner.login, req.Head
	}
	head := s.findHeadRepo(r, owner, req.HeadRepo)
	if head == nil || !c.canRead(head) || s.revParse(head, "refs/heads/"+ref) == "" {
		c.invalid("PullRequest", "head", "invalid", "")
		return
	}
	if s.revParse(r, "refs/heads/"+req.Base) == "" {
		c.invalid("PullRequest", "base", "invalid", "")
		return
	}
	for _, is := range r.issues {
		if p := is.pr; p != nil && is.state == "open" && p.headRepo == head && p.headRef == ref && p.baseRef == req.Base {
			c.invalid("PullRequest", "", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", head.owner.login, ref))
			return
		}
	}
	if s.ahead(r, req.Base, head, ref) == 0 {
		c.invalid("PullRequest", "", "custom", fmt.Sprintf("No commits between %s and %s", req.Base, req.Head))
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	u, via := c.author()
	mcm := req.MaintainerCanModify != nil && *req.MaintainerCanModify
	is := s.openPull(r, u, via, *req.Title, body, head, ref, req.Base, req.Draft, mcm)
	c.header.Set("Location", fmt.Sprintf("%s/pulls/%d", s.repoAPI(r), is.number))
	c.json(http.StatusCreated, s.pullJSON(is))
}

func (c *call) editPull() {
	r, is := c.loadPull()
	if is == nil {
		return
	}
	var req struct {
		Title               *string `json:"title"`
		Body                *string `json:"body"`
		State               *string `json:"state"`
		Base                *string `json:"base"`
		MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	}
	if !c.decode(&req) {
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		c.invalid("PullRequest", "state", "invalid", "")
		return
	}
	if !c.isAuthor(is.user, is.viaApp) && !c.allow(r, "write", "pull_requests") {
		return
	}
	if req.Base != nil {
		if c.s.revParse(r, "refs/heads/"+*req.Base) == "" {
			c.invalid("PullRequest", "base", "invalid", "")
			return
		}
		is.pr.baseRef = *req.Base
	}
	if req.MaintainerCanModify != nil {
		is.pr.maintainerCanModify = *req.MaintainerCanModify && is.pr.headRepo != r
	}
	c.applyIssueEdit(is, req.Title, req.Body, req.State, nil, nil)
	c.s.syncPull(is)
	c.json(http.StatusOK, c.s.pullJSON(is))
}

type checkRunReq struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title       *string `json:"title"`
		Summary     *string `json:"summary"`
		Text        *string `json:"text"`
		Annotations []any   `json:"annotations"`
	} `json:"output"`
}

var (
	checkStatuses    = map[string]bool{"queued": true, "in_progress": true, "completed": true, "waiting": true, "requested": true, "pending": true}
	checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true, "neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}
)

func (c *call) checkRunRepo() *repo {
	r := c.loadRepo()
	if r == nil {
		return nil
	}
	switch c.cred.kind {
	case AuthInstallation:
	case AuthNone:
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return nil
	default:
		c.fail(http.StatusForbidden, "You must authenticate via a GitHub App.")
		return nil
	}
	if !c.allow(r, "write", "checks") {
		return nil
	}
	return r
}

func (c *call) applyCheckRun(cr *checkRun, req *checkRunReq) bool {
	if req.Status != nil && !checkStatuses[*req.Status] {
		c.invalid("CheckRun", "status", "invalid", "")
		return false
	}
	if req.Conclusion != nil && !checkConclusions[*req.Conclusion] {
		c.invalid("CheckRun", "conclusion", "invalid", "")
		return false
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&cr.name, req.Name)
	set(&cr.detailsURL, req.DetailsURL)
	set(&cr.externalID, req.ExternalID)
	set(&cr.status, req.Status)
	if req.StartedAt != nil {
		cr.started = req.StartedAt.UTC().Truncate(time.Second)
	}
	if req.Conclusion != nil {
		cr.conclusion, cr.status = *req.Conclusion, "completed"
	}
	if cr.status == "completed" && cr.conclusion == "" {
		c.invalid("CheckRun", "conclusion", "missing_field", "")
		return false
	}
	if cr.status == "completed" {
		cr.completed = c.s.stamp()
		if req.CompletedAt != nil {
			cr.completed = req.CompletedAt.UTC().Truncate(time.Second)
		}
	}
	if o := req.Output; o != nil {
		set(&cr.title, o.Title)
		set(&cr.summary, o.Summary)
		set(&cr.text, o.Text)
		cr.annotations += len(o.Annotations)
	}
	return true
}

func (c *call) createCheckRun() {
	r := c.checkRunRepo()
	if r == nil {
		return
	}
	var req checkRunReq
	if !c.decode(&req) {
		return
	}
	switch {
	case req.Name == nil || *req.Name == "":
		c.invalid("CheckRun", "name", "missing_field", "")
		return
	case req.HeadSHA == nil || *req.HeadSHA == "":
		c.invalid("CheckRun", "head_sha", "missing_field", "")
		return
	}
	sha := c.s.revParse(r, *req.HeadSHA)
	if sha == "" {
		c.fail(http.StatusUnprocessableEntity, "No commit found for SHA: "+*req.HeadSHA)
		return
	}
	cr := &checkRun{id: c.s.st.nextID("check"), repo: r, headSHA: sha, status: "queued", started: c.s.stamp(), installID: c.cred.inst.id}
	if !c.applyCheckRun(cr, &req) {
		return
	}
	r.checkRuns = append(r.checkRuns, cr)
	c.json(http.StatusCreated, c.s.checkRunJSON(cr))
}

func (c *call) findCheckRun(r *repo) *checkRun {
	id, _ := strconv.ParseInt(c.p("id"), 10, 64)
	for _, cr := range r.checkRuns {
		if cr.id == id {
			return cr
		}
	}
	c.notFound()
	return nil
}

func (c *call) getCheckRun() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	if cr := c.findCheckRun(r); cr != nil {
		c.json(http.StatusOK, c.s.checkRunJSON(cr))
	}
}

func (c *call) updateCheckRun() {
	r := c.checkRunRepo()
	if r == nil {
		return
	}
	cr := c.findCheckRun(r)
	if cr == nil {
		return
	}
	var req checkRunReq
	if !c.decode(&req) {
		return
	}
	next := *cr
	if !c.applyCheckRun(&next, &req) {
		return
	}
	*cr = next
	c.json(http.StatusOK, c.s.checkRunJSON(cr))
}
