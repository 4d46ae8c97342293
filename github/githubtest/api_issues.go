package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

func (c *call) loadIssue() (*repo, *issue) {
	r := c.loadRepo()
	if r == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(c.p("number"))
	is := r.issues[n]
	if err != nil || is == nil {
		c.notFound()
		return nil, nil
	}
	return r, is
}

// cats are the installation permissions that allow writing to an issue:
// issues, or pull_requests for a pull request's issue side.
func cats(is *issue) []string {
	if is.pr != nil {
		return []string{"issues", "pull_requests"}
	}
	return []string{"issues"}
}

// author is who a write through this credential is attributed to.
func (c *call) author() (*user, bool) {
	return c.cred.user, c.cred.kind == AuthInstallation
}

// isAuthor reports whether the caller wrote something by u.
func (c *call) isAuthor(u *user, viaApp bool) bool {
	switch c.cred.kind {
	case AuthPersonal:
		return c.cred.user == u
	case AuthInstallation:
		return viaApp && u == c.s.st.bot
	}
	return false
}

// since parses the since parameter; ok is false after answering 422.
func (c *call) since() (time.Time, bool) {
	v := c.q("since")
	if v == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		c.invalid("Issue", "since", "invalid", "")
		return time.Time{}, false
	}
	return t, true
}

func (c *call) listIssues() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	since, ok := c.since()
	if !ok {
		return
	}
	state := c.q("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := c.q("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var list []*issue
	for _, is := range sortedIssues(r) {
		if state != "all" && is.state != state {
			continue
		}
		if !since.IsZero() && is.updated.Before(since) {
			continue
		}
		all := true
		for _, w := range want {
			found := false
			for _, l := range is.labels {
				found = found || strings.EqualFold(l.name, strings.TrimSpace(w))
			}
			all = all && found
		}
		if all {
			list = append(list, is)
		}
	}
	key := func(is *issue) time.Time { return is.created }
	if c.q("sort") == "updated" {
		key = func(is *issue) time.Time { return is.updated }
	}
	asc := c.q("direction") == "asc"
	sort.SliceStable(list, func(i, j int) bool {
		a, b := key(list[i]), key(list[j])
		if a.Equal(b) {
			if asc {
				return list[i].number < list[j].number
			}
			return list[i].number > list[j].number
		}
		return a.Before(b) == asc
	})
	lo, hi := c.paginate(len(list), 30)
	out := []obj{}
	for _, is := range list[lo:hi] {
		out = append(out, c.s.issueJSON(is))
	}
	c.json(http.StatusOK, out)
}

// commentList filters comments by since (updated at or after it, as
// GitHub's inclusive since), sorts them and answers one page.
func (c *call) commentList(list []*comment, sortable bool) {
	since, ok := c.since()
	if !ok {
		return
	}
	var sel []*comment
	for _, cm := range list {
		if !cm.deleted && (since.IsZero() || !cm.updated.Before(since)) {
			sel = append(sel, cm)
		}
	}
	if sortable {
		byUpdated := c.q("sort") == "updated"
		desc := c.q("sort") != "" && c.q("direction") == "desc"
		sort.SliceStable(sel, func(i, j int) bool {
			a, b := sel[i], sel[j]
			less := a.id < b.id
			if byUpdated && !a.updated.Equal(b.updated) {
				less = a.updated.Before(b.updated)
			}
			if desc {
				return !less
			}
			return less
		})
	}
	lo, hi := c.paginate(len(sel), 30)
	out := []obj{}
	for _, cm := range sel[lo:hi] {
		out = append(out, c.s.commentJSON(cm))
	}
	c.json(http.StatusOK, out)
}

func (c *call) listRepoComments() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	var list []*comment
	for _, cm := range c.s.st.commentOrder {
		if cm.issue.repo == r {
			list = append(list, cm)
		}
	}
	c.commentList(list, true)
}

func (c *call) listIssueComments() {
	if _, is := c.loadIssue(); is != nil {
		c.commentList(is.comments, false)
	}
}

func (c *call) loadComment() (*repo, *comment) {
	r := c.loadRepo()
	if r == nil {
		return nil, nil
	}
	id, err := strconv.ParseInt(c.p("id"), 10, 64)
	cm := c.s.st.comments[id]
	if err != nil || cm == nil || cm.deleted || cm.issue.repo != r {
		c.notFound()
		return nil, nil
	}
	return r, cm
}

func (c *call) getComment() {
	if _, cm := c.loadComment(); cm != nil {
		c.json(http.StatusOK, c.s.commentJSON(cm))
	}
}

// commentBody reads {"body": ...} and validates it like GitHub.
func (c *call) commentBody() (string, bool) {
	var req struct {
		Body *string `json:"body"`
	}
	if !c.decode(&req) {
		return "", false
	}
	if req.Body == nil || *req.Body == "" {
		c.invalid("IssueComment", "body", "missing_field", "")
		return "", false
	}
	if len([]rune(*req.Body)) > 65536 {
		c.invalid("IssueComment", "body", "custom", "body is too long (maximum is 65536 characters)")
		return "", false
	}
	return *req.Body, true
}

func (c *call) createComment() {
	r, is := c.loadIssue()
	if is == nil {
		return
	}
	body, ok := c.commentBody()
	if !ok || !c.allow(r, "read", cats(is)...) {
		return
	}
	if is.locked && c.cred.kind == AuthPersonal && !atLeast(c.s.permission(r, c.cred.user), "write") {
		c.fail(http.StatusForbidden, "Unable to create comment because issue is locked.")
		return
	}
	u, via := c.author()
	cm := c.s.newComment(is, u, via, body)
	c.header.Set("Location", fmt.Sprintf("%s/issues/comments/%d", c.s.repoAPI(r), cm.id))
	c.json(http.StatusCreated, c.s.commentJSON(cm))
}

func (c *call) editComment() {
	r, cm := c.loadComment()
	if cm == nil {
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	if !c.isAuthor(cm.user, cm.viaApp) && !c.allow(r, "write", cats(cm.issue)...) {
		return
	}
	cm.prevBody, cm.body, cm.updated = cm.body, body, c.s.stamp()
	c.json(http.StatusOK, c.s.commentJSON(cm))
}

func (c *call) deleteComment() {
	r, cm := c.loadComment()
	if cm == nil {
		return
	}
	if !c.isAuthor(cm.user, cm.viaApp) && !c.allow(r, "write", cats(cm.issue)...) {
		return
	}
	c.s.deleteComment(cm)
	c.status, c.out = http.StatusNoContent, nil
}

func (c *call) reactionList(list []*reaction) {
	var sel []*reaction
	for _, x := range list {
		if ct := c.q("content"); ct == "" || ct == x.content {
			sel = append(sel, x)
		}
	}
	lo, hi := c.paginate(len(sel), 30)
	out := []obj{}
	for _, x := range sel[lo:hi] {
		out = append(out, c.s.reactionJSON(x))
	}
	c.json(http.StatusOK, out)
}

// react adds a reaction: 201 when new, 200 with the existing one.
func (c *call) react(r *repo, is *issue, list *[]*reaction) {
	var req struct {
		Content string `json:"content"`
	}
	if !c.decode(&req) {
		return
	}
	if !validReaction(req.Content) {
		c.invalid("Reaction", "content", "invalid", "")
		return
	}
	if !c.allow(r, "read", cats(is)...) {
		return
	}
	x, isNew := c.s.addReaction(list, c.cred.user, req.Content)
	st := http.StatusOK
	if isNew {
		st = http.StatusCreated
	}
	c.json(st, c.s.reactionJSON(x))
}

func (c *call) listCommentReactions() {
	if _, cm := c.loadComment(); cm != nil {
		c.reactionList(cm.reactions)
	}
}

func (c *call) createCommentReaction() {
	if r, cm := c.loadComment(); cm != nil {
		c.react(r, cm.issue, &cm.reactions)
	}
}

func (c *call) deleteCommentReaction() {
	r, cm := c.loadComment()
	if cm == nil {
		return
	}
	rid, _ := strconv.ParseInt(c.p("rid"), 10, 64)
	for i, x := range cm.reactions {
		if x.id == rid {
			if !c.isAuthor(x.user, c.cred.kind == AuthInstallation) && !c.allow(r, "write", cats(cm.issue)...) {
				return
			}
			cm.reactions = append(cm.reactions[:i:i], cm.reactions[i+1:]...)
			c.status, c.out = http.StatusNoContent, nil
			return
		}
	}
	c.notFound()
}

func (c *call) listIssueReactions() {
	if _, is := c.loadIssue(); is != nil {
		c.reactionList(is.reactions)
	}
}

func (c *call) createIssueReaction() {
	if r, is := c.loadIssue(); is != nil {
		c.react(r, is, &is.reactions)
	}
}

// listRepoIssueEvents lists a repository's issue events, newest first.
func (c *call) listRepoIssueEvents() {
	r := c.loadRepo()
	if r == nil {
		return
	}
	n := len(r.events)
	lo, hi := c.paginate(n, 30)
	out := []obj{}
	for i := lo; i < hi; i++ {
		out = append(out, c.s.issueEventJSON(r.events[n-1-i], true))
	}
	c.json(http.StatusOK, out)
}

func (c *call) listIssueEvents() {
	r, is := c.loadIssue()
	if is == nil {
		return
	}
	var sel []*issueEvent
	for _, e := range r.events {
		if e.issue == is {
			sel = append(sel, e)
		}
	}
	lo, hi := c.paginate(len(sel), 30)
	out := []obj{}
	for _, e := range sel[lo:hi] {
		out = append(out, c.s.issueEventJSON(e, false))
	}
	c.json(http.StatusOK, out)
}

func (c *call) getIssue() {
	if _, is := c.loadIssue(); is != nil {
		o := c.s.issueJSON(is)
		o["closed_by"] = c.s.userJSON(is.closedBy)
		c.json(http.StatusOK, o)
	}
}

func (c *call) editIssue() {
	r, is := c.loadIssue()
	if is == nil {
		return
	}
	var req struct {
		Title       *string   `json:"title"`
		Body        *string   `json:"body"`
		State       *string   `json:"state"`
		StateReason *string   `json:"state_reason"`
		Labels      *[]string `json:"labels"`
	}
	if !c.decode(&req) {
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		c.invalid("Issue", "state", "invalid", "")
		return
	}
	if !c.isAuthor(is.user, is.viaApp) || req.Labels != nil {
		if !c.allow(r, "triage", cats(is)...) {
			return
		}
	}
	c.applyIssueEdit(is, req.Title, req.Body, req.State, req.StateReason, req.Labels)
	o := c.s.issueJSON(is)
	o["closed_by"] = c.s.userJSON(is.closedBy)
	c.json(http.StatusOK, o)
}

func (c *call) applyIssueEdit(is *issue, title, body, state, reason *string, labels *[]string) {
	u, via := c.author()
	if title != nil {
		is.title = *title
	}
	if body != nil {
		is.body = *body
	}
	if state != nil {
		c.s.setIssueState(is, u, via, *state)
		if reason != nil && *state == "closed" {
			is.reason = *reason
		}
	}
	if labels != nil {
		c.setLabels(is, *labels)
	}
	is.updated = c.s.stamp()
}

func (c *call) setLabels(is *issue, names []string) {
	u, via := c.author()
	keep := map[string]bool{}
	for _, n := range names {
		keep[strings.ToLower(n)] = true
	}
	for _, l := range append([]*label(nil), is.labels...) {
		if !keep[strings.ToLower(l.name)] {
			c.s.removeLabel(is, u, via, l.name)
		}
	}
	c.s.addLabels(is, u, via, names)
}

// labelNames reads a label list in any of the forms GitHub accepts:
// ["a"], {"labels": ["a"]} or {"labels": [{"name": "a"}]}.
func labelNames(body []byte) ([]string, bool) {
	var arr []string
	if json.Unmarshal(body, &arr) == nil {
		return arr, true
	}
	var o struct {
		Labels json.RawMessage `json:"labels"`
	}
	if json.Unmarshal(body, &o) != nil {
		return nil, false
	}
	if json.Unmarshal(o.Labels, &arr) == nil {
		return arr, true
	}
	var objs []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(o.Labels, &objs) != nil {
		return nil, false
	}
	for _, x := range objs {
		arr = append(arr, x.Name)
	}
	return arr, true
}

func (c *call) issueLabels(is *issue) {
	out := []obj{}
	for _, l := range is.labels {
		out = append(out, c.s.labelJSON(is.repo, l))
	}
	c.json(http.StatusOK, out)
}

func (c *call) listIssueLabels() {
	if _, is := c.loadIssue(); is != nil {
		c.issueLabels(is)
	}
}

func (c *call) changeLabels(replace bool) {
	r, is := c.loadIssue()
	if is == nil {
		return
	}
	names, ok := labelNames(c.body)
	if !ok {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if !c.allow(r, "triage", cats(is)...) {
		return
	}
	if replace {
		c.setLabels(is, names)
	} else {
		u, via := c.author()
		c.s.addLabels(is, u, via, names)
	}
	c.issueLabels(is)
}

func (c *call) addIssueLabels()     { c.changeLabels(false) }
func (c *call) replaceIssueLabels() { c.changeLabels(true) }

func (c *call) removeIssueLabel() {
	r, is := c.loadIssue()
	if is == nil || !c.allow(r, "triage", cats(is)...) {
		return
	}
	u, via := c.author()
	if !c.s.removeLabel(is, u, via, c.p("name")) {
		c.json(http.StatusNotFound, obj{"message": "Label does not exist", "documentation_url": docREST, "status": "404"})
		return
	}
	c.issueLabels(is)
}
