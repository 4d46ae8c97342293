package githubtest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// User is a GitHub account: Type is "User", "Bot" or "Organization".
type User struct {
	ID    int64
	Login string
	Type  string
	Name  string
	Email string
}

func (u *user) public() User {
	return User{ID: u.id, Login: u.login, Type: u.typ, Name: u.name, Email: u.email}
}

// AddUser creates a user (type "User"), or returns the existing one.
func (s *Server) AddUser(login string) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newUser(login, "User").public()
}

// AddBot creates a bot account (type "Bot"), such as "dependabot[bot]".
func (s *Server) AddBot(login string) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newUser(login, "Bot").public()
}

// AddOrg creates an organization with members (created as users when
// new). Members are listed by GET /user/orgs and are MEMBER in
// author_association; repository permissions still come from
// SetPermission.
func (s *Server) AddOrg(login string, members ...string) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.newUser(login, "Organization")
	for _, m := range members {
		u := s.newUser(m, "User")
		found := false
		for _, x := range u.orgs {
			found = found || x == o
		}
		if !found {
			u.orgs = append(u.orgs, o)
		}
	}
	return o.public()
}

// SetProfile sets a user's display name and public email.
func (s *Server) SetProfile(login, name, email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.mustUser(login)
	u.name, u.email = name, email
}

// User returns a user by login.
func (s *Server) User(login string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.lookupUser(login)
	if u == nil {
		return User{}, false
	}
	return u.public(), true
}

// Repo describes a repository.
type Repo struct {
	ID            int64
	Owner         string
	Name          string
	FullName      string
	DefaultBranch string
	Private       bool
	// Parent is the full name of the repository this one is a fork of.
	Parent   string
	CloneURL string
}

func (s *Server) publicRepo(r *repo) Repo {
	out := Repo{
		ID: r.id, Owner: r.owner.login, Name: r.name, FullName: r.fullName(),
		DefaultBranch: r.defaultBranch, Private: r.private, CloneURL: s.URL + "/" + r.fullName() + ".git",
	}
	if r.parent != nil {
		out.Parent = r.parent.fullName()
	}
	return out
}

// RepoSpec describes a repository to create.
type RepoSpec struct {
	Owner string
	Name  string
	// DefaultBranch defaults to "main".
	DefaultBranch string
	Private       bool
	// Files are the initial commit's files (path → content); a README.md
	// is written when empty. Ignored for forks.
	Files map[string]string
	// ForkOf, "owner/name", makes this repository a fork with a copy of
	// the parent's branches.
	ForkOf string
}

// CreateRepo creates a public repository with an initial commit of files
// on "main". The owner is created as a user if unknown.
func (s *Server) CreateRepo(owner, name string, files map[string]string) Repo {
	return s.AddRepo(RepoSpec{Owner: owner, Name: name, Files: files})
}

// Fork creates owner's fork of parent, with the same name.
func (s *Server) Fork(parent, owner string) Repo {
	_, name, _ := strings.Cut(parent, "/")
	return s.AddRepo(RepoSpec{Owner: owner, Name: name, ForkOf: parent})
}

// AddRepo creates a repository as spec describes.
func (s *Server) AddRepo(spec RepoSpec) Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if spec.Owner == "" || spec.Name == "" || strings.ContainsAny(spec.Owner+spec.Name, "/ ") {
		s.fatalf("AddRepo: bad name %q/%q", spec.Owner, spec.Name)
	}
	if s.lookupRepo(spec.Owner+"/"+spec.Name) != nil {
		s.fatalf("AddRepo: %s/%s exists", spec.Owner, spec.Name)
	}
	owner := s.lookupUser(spec.Owner)
	if owner == nil {
		owner = s.newUser(spec.Owner, "User")
	}
	r := &repo{
		id: s.st.nextID("repo"), owner: owner, name: spec.Name, defaultBranch: spec.DefaultBranch,
		private: spec.Private, perms: map[string]string{}, issues: map[int]*issue{},
		labels: map[string]*label{}, protected: map[string]bool{}, created: s.stamp(),
	}
	var parent *repo
	if spec.ForkOf != "" {
		parent = s.mustRepo(spec.ForkOf)
		r.parent = parent
		if r.defaultBranch == "" {
			r.defaultBranch = parent.defaultBranch
		}
	}
	if r.defaultBranch == "" {
		r.defaultBranch = "main"
	}
	for _, d := range defaultLabels {
		l := s.labelFor(r, d[0])
		l.color, l.description, l.isDefault = d[1], d[2], true
	}
	if err := s.initBare(r, parent); err != nil {
		s.fatalf("AddRepo %s: %v", r.fullName(), err)
	}
	if parent == nil {
		files := spec.Files
		if len(files) == 0 {
			files = map[string]string{"README.md": "# " + spec.Name + "\n"}
		}
		if _, err := s.commitFiles(r, r.defaultBranch, "", "Initial commit", files, "githubtest", "githubtest@example.invalid"); err != nil {
			s.fatalf("AddRepo %s: %v", r.fullName(), err)
		}
	}
	r.pushed = r.created
	s.st.repos[strings.ToLower(r.fullName())] = r
	s.st.repoOrder = append(s.st.repoOrder, r)
	return s.publicRepo(r)
}

var defaultLabels = [][3]string{
	{"bug", "d73a4a", "Something isn't working"},
	{"documentation", "0075ca", "Improvements or additions to documentation"},
	{"enhancement", "a2eeef", "New feature or request"},
}

// Repo returns a repository by full name.
func (s *Server) Repo(full string) (Repo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.lookupRepo(full)
	if r == nil {
		return Repo{}, false
	}
	return s.publicRepo(r), true
}

// SetPermission gives login a permission on a repository: "admin",
// "maintain", "write", "triage", "read" or "none". The owner of a
// user-owned repository is always admin; without an entry, everyone can
// read a public repository and nobody a private one.
func (s *Server) SetPermission(repoName, login, perm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := permRank[perm]; !ok {
		s.fatalf("SetPermission: unknown permission %q", perm)
	}
	r := s.mustRepo(repoName)
	u := s.lookupUser(login)
	if u == nil {
		u = s.newUser(login, "User")
	}
	r.perms[strings.ToLower(u.login)] = perm
}

// Installation describes an installation of the App.
type Installation struct {
	ID      int64
	Account string
	// All is set when the installation covers every repository of the
	// account ("repository_selection": "all"); Repos lists them either way.
	All         bool
	Repos       []string
	Permissions map[string]string
}

func (s *Server) publicInstallation(in *installation) Installation {
	out := Installation{ID: in.id, Account: in.account.login, All: in.all, Permissions: map[string]string{}}
	for k, v := range in.perms {
		out.Permissions[k] = v
	}
	for _, r := range s.installationRepos(in, nil) {
		out.Repos = append(out.Repos, r.fullName())
	}
	return out
}

// installationRepos lists what an installation (or a token scoped to
// only) covers.
func (s *Server) installationRepos(in *installation, only map[*repo]bool) []*repo {
	var out []*repo
	for _, r := range s.st.repoOrder {
		if in.has(r) && (only == nil || only[r]) {
			out = append(out, r)
		}
	}
	return sortedRepos(out)
}

// AddInstallation installs the App on account for repos (full names);
// with no repos it covers all of the account's repositories, present and
// future.
func (s *Server) AddInstallation(account string, repos ...string) Installation {
	s.mu.Lock()
	defer s.mu.Unlock()
	acct := s.lookupUser(account)
	if acct == nil {
		acct = s.newUser(account, "User")
	}
	perms := map[string]string{}
	for k, v := range s.opts.AppPermissions {
		perms[k] = v
	}
	in := &installation{id: s.st.nextID("installation"), account: acct, all: len(repos) == 0, perms: perms, created: s.stamp()}
	for _, name := range repos {
		in.repos = append(in.repos, s.mustRepo(name))
	}
	s.st.installations[in.id] = in
	s.st.instOrder = append(s.st.instOrder, in)
	return s.publicInstallation(in)
}

// AddInstallationRepos adds repositories to a selected-repositories
// installation.
func (s *Server) AddInstallationRepos(id int64, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.st.installations[id]
	if in == nil {
		s.fatalf("no installation %d", id)
	}
	for _, name := range repos {
		r := s.mustRepo(name)
		if !in.has(r) {
			in.repos = append(in.repos, r)
		}
	}
}

// RemoveInstallation uninstalls the App: the installation's tokens stop
// working and its endpoints answer 404.
func (s *Server) RemoveInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in := s.st.installations[id]; in != nil {
		in.removed = true
	}
}

// Installations lists the live installations.
func (s *Server) Installations() []Installation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Installation
	for _, in := range s.st.instOrder {
		if !in.removed {
			out = append(out, s.publicInstallation(in))
		}
	}
	return out
}

// Issue describes an issue or the issue side of a pull request.
type Issue struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	User      string
	State     string
	Labels    []string
	Locked    bool
	IsPull    bool
	CreatedAt time.Time
	UpdatedAt time.Time
	HTMLURL   string
}

func (s *Server) publicIssue(is *issue) Issue {
	out := Issue{
		Repo: is.repo.fullName(), Number: is.number, Title: is.title, Body: is.body, User: is.user.login,
		State: is.state, Locked: is.locked, IsPull: is.pr != nil, CreatedAt: is.created,
		UpdatedAt: is.updated, HTMLURL: s.issueHTML(is),
	}
	for _, l := range is.labels {
		out.Labels = append(out.Labels, l.name)
	}
	return out
}

// IssueSpec describes an issue to create.
type IssueSpec struct {
	Author string
	Title  string
	Body   string
	Labels []string
	// State is "open" (default) or "closed".
	State  string
	Locked bool
}

// AddIssue creates an issue as its author would. Labels are added by the
// author, with labeled events.
func (s *Server) AddIssue(repoName string, spec IssueSpec) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repoName)
	author := s.mustUser(spec.Author)
	is := s.newIssue(r, author, false, spec.Title, spec.Body)
	is.locked = spec.Locked
	s.addUserEvent(author, r, "IssuesEvent", obj{"action": "opened", "issue": s.issueJSON(is)})
	s.addLabels(is, author, false, spec.Labels)
	if spec.State == "closed" {
		is.state, is.closed, is.closedBy, is.reason = "closed", s.stamp(), author, "completed"
		s.addIssueEvent(is, author, false, "closed", nil)
	}
	return s.publicIssue(is)
}

// Issue returns an issue (or a pull request's issue side).
func (s *Server) Issue(repoName string, number int) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.lookupRepo(repoName)
	if r == nil || r.issues[number] == nil {
		return Issue{}, false
	}
	return s.publicIssue(r.issues[number]), true
}

// PullRequest describes a pull request.
type PullRequest struct {
	Issue
	// Head is the head branch; HeadRepo its repository's full name ("" if
	// deleted) and HeadSHA the commit refs/pull/<n>/head points at.
	Head                string
	HeadRepo            string
	HeadSHA             string
	Base                string
	BaseSHA             string
	Draft               bool
	MaintainerCanModify bool
	Merged              bool
}

func (s *Server) publicPull(is *issue) PullRequest {
	p := is.pr
	out := PullRequest{
		Issue: s.publicIssue(is), Head: p.headRef, HeadSHA: p.headSHA, Base: p.baseRef, BaseSHA: p.baseSHA,
		Draft: p.draft, MaintainerCanModify: p.maintainerCanModify, Merged: p.merged,
	}
	if p.headRepo != nil {
		out.HeadRepo = p.headRepo.fullName()
	}
	return out
}

// PullSpec describes a pull request to create.
type PullSpec struct {
	Author string
	Title  string
	Body   string
	// Head is the head branch, which must exist in HeadRepo (default: the
	// base repository); Base defaults to the default branch.
	Head                string
	HeadRepo            string
	Base                string
	Draft               bool
	MaintainerCanModify bool
	Labels              []string
}

// AddPull opens a pull request as its author would; refs/pull/<n>/head
// is created in the base repository and follows pushes to the head.
func (s *Server) AddPull(repoName string, spec PullSpec) PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repoName)
	author := s.mustUser(spec.Author)
	head := r
	if spec.HeadRepo != "" {
		head = s.mustRepo(spec.HeadRepo)
	}
	if spec.Base == "" {
		spec.Base = r.defaultBranch
	}
	if s.revParse(head, "refs/heads/"+spec.Head) == "" {
		s.fatalf("AddPull: no branch %q in %s (Commit to it first)", spec.Head, head.fullName())
	}
	is := s.openPull(r, author, false, spec.Title, spec.Body, head, spec.Head, spec.Base, spec.Draft, spec.MaintainerCanModify)
	s.addLabels(is, author, false, spec.Labels)
	return s.publicPull(is)
}

func (s *Server) openPull(r *repo, author *user, viaApp bool, title, body string, head *repo, headRef, baseRef string, draft, mcm bool) *issue {
	is := s.newIssue(r, author, viaApp, title, body)
	is.pr = &pull{
		id: s.st.nextID("pull"), headRepo: head, headOwner: head.owner, headRef: headRef, baseRef: baseRef,
		draft: draft, maintainerCanModify: mcm && head != r,
	}
	s.syncPull(is)
	s.addUserEvent(author, r, "PullRequestEvent", obj{"action": "opened", "number": is.number, "pull_request": s.pullJSON(is)})
	return is
}

// PullRequest returns a pull request.
func (s *Server) PullRequest(repoName string, number int) (PullRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.lookupRepo(repoName)
	if r == nil || r.issues[number] == nil || r.issues[number].pr == nil {
		return PullRequest{}, false
	}
	return s.publicPull(r.issues[number]), true
}

// PullRequests lists a repository's pull requests by number.
func (s *Server) PullRequests(repoName string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repoName)
	var out []PullRequest
	for _, is := range sortedIssues(r) {
		if is.pr != nil {
			out = append(out, s.publicPull(is))
		}
	}
	return out
}

// SetPullState closes, reopens or merges a pull request as login would
// ("open", "closed" or "merged").
func (s *Server) SetPullState(repoName string, number int, login, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	u := s.mustUser(login)
	if is.pr == nil {
		s.fatalf("%s#%d is not a pull request", repoName, number)
	}
	s.setIssueState(is, u, false, state)
}

func (s *Server) setIssueState(is *issue, u *user, viaApp bool, state string) {
	now := s.stamp()
	switch state {
	case "open":
		if is.state == "closed" {
			is.state, is.closed, is.closedBy, is.reason = "open", time.Time{}, nil, "reopened"
			s.addIssueEvent(is, u, viaApp, "reopened", nil)
		}
	case "closed", "merged":
		if is.state == "open" {
			is.state, is.closed, is.closedBy, is.reason = "closed", now, u, "completed"
			if state == "merged" && is.pr != nil {
				is.pr.merged, is.pr.mergedAt = true, now
				s.addIssueEvent(is, u, viaApp, "merged", nil)
			}
			s.addIssueEvent(is, u, viaApp, "closed", nil)
		}
	}
	is.updated = now
}

var closingRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+#(\d+)\b`)

// LinkedIssues lists the issues a pull request's body closes with
// GitHub's keywords ("Fixes #12", "closes #3", "Resolved #4").
func (s *Server) LinkedIssues(repoName string, number int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	var out []int
	for _, m := range closingRE.FindAllStringSubmatch(is.body, -1) {
		n, _ := strconv.Atoi(m[1])
		if x := is.repo.issues[n]; x != nil && x.pr == nil {
			out = append(out, n)
		}
	}
	return out
}

func sortedIssues(r *repo) []*issue {
	out := make([]*issue, 0, len(r.issues))
	for _, is := range r.issues {
		out = append(out, is)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	return out
}

// Comment describes an issue comment.
type Comment struct {
	ID        int64
	Repo      string
	Issue     int
	User      string
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
	HTMLURL   string
	// ViaApp is set for comments made with an installation token.
	ViaApp bool
}

func (s *Server) publicComment(c *comment) Comment {
	return Comment{
		ID: c.id, Repo: c.issue.repo.fullName(), Issue: c.issue.number, User: c.user.login, Body: c.body,
		CreatedAt: c.created, UpdatedAt: c.updated, HTMLURL: s.commentHTML(c), ViaApp: c.viaApp,
	}
}

// AddComment comments on an issue or pull request as author would.
func (s *Server) AddComment(repoName string, number int, author, body string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	return s.publicComment(s.newComment(is, s.mustUser(author), false, body))
}

// EditComment changes a comment's body as its author would (updated_at
// moves; an issue_comment "edited" payload carries the previous body).
func (s *Server) EditComment(id int64, body string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.comments[id]
	if c == nil || c.deleted {
		s.fatalf("no comment %d", id)
	}
	c.prevBody, c.body, c.updated = c.body, body, s.stamp()
	return s.publicComment(c)
}

// DeleteComment deletes a comment.
func (s *Server) DeleteComment(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.st.comments[id]; c != nil {
		s.deleteComment(c)
	}
}

func (s *Server) deleteComment(c *comment) {
	c.deleted = true
	is := c.issue
	for i, x := range is.comments {
		if x == c {
			is.comments = append(is.comments[:i:i], is.comments[i+1:]...)
			break
		}
	}
}

// Comment returns a comment by id (deleted ones too, with ok false).
func (s *Server) Comment(id int64) (Comment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.comments[id]
	if c == nil {
		return Comment{}, false
	}
	return s.publicComment(c), !c.deleted
}

// Comments lists the comments on an issue or pull request, oldest first.
func (s *Server) Comments(repoName string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	var out []Comment
	for _, c := range is.comments {
		out = append(out, s.publicComment(c))
	}
	return out
}

// Reaction is one reaction on a comment or an issue.
type Reaction struct {
	ID        int64
	User      string
	Content   string
	CreatedAt time.Time
}

func publicReactions(list []*reaction) []Reaction {
	var out []Reaction
	for _, x := range list {
		out = append(out, Reaction{ID: x.id, User: x.user.login, Content: x.content, CreatedAt: x.created})
	}
	return out
}

// Reactions lists the reactions on a comment.
func (s *Server) Reactions(commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.comments[commentID]
	if c == nil {
		return nil
	}
	return publicReactions(c.reactions)
}

// IssueReactions lists the reactions on an issue or pull request body.
func (s *Server) IssueReactions(repoName string, number int) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return publicReactions(s.mustIssue(repoName, number).reactions)
}

// React adds a reaction to a comment as login would.
func (s *Server) React(commentID int64, login, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.comments[commentID]
	if c == nil || !validReaction(content) {
		s.fatalf("React: no comment %d or bad content %q", commentID, content)
	}
	s.addReaction(&c.reactions, s.mustUser(login), content)
}

// Labels lists the labels on an issue or pull request.
func (s *Server) Labels(repoName string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.mustIssue(repoName, number).labels {
		out = append(out, l.name)
	}
	return out
}

// AddLabels labels an issue or pull request as actor would, recording a
// "labeled" issue event per new label.
func (s *Server) AddLabels(repoName string, number int, actor string, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	s.addLabels(is, s.mustUser(actor), false, labels)
}

// RemoveLabel removes a label as actor would ("unlabeled" event).
func (s *Server) RemoveLabel(repoName string, number int, actor, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.mustIssue(repoName, number)
	s.removeLabel(is, s.mustUser(actor), false, label)
}

// IssueEvent is one entry of a repository's issue events.
type IssueEvent struct {
	ID        int64
	Repo      string
	Issue     int
	Event     string // labeled, unlabeled, closed, reopened, merged
	Actor     string
	Label     string
	CreatedAt time.Time
}

// IssueEvents lists a repository's issue events, oldest first.
func (s *Server) IssueEvents(repoName string) []IssueEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []IssueEvent
	for _, e := range s.mustRepo(repoName).events {
		ev := IssueEvent{ID: e.id, Repo: e.issue.repo.fullName(), Issue: e.issue.number, Event: e.event, Actor: e.actor.login, CreatedAt: e.created}
		if e.label != nil {
			ev.Label = e.label.name
		}
		out = append(out, ev)
	}
	return out
}

// CheckRun describes a check run.
type CheckRun struct {
	ID         int64
	Repo       string
	Name       string
	HeadSHA    string
	Status     string
	Conclusion string
	DetailsURL string
	ExternalID string
	Title      string
	Summary    string
	Text       string
}

// CheckRuns lists a repository's check runs, oldest first.
func (s *Server) CheckRuns(repoName string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, cr := range s.mustRepo(repoName).checkRuns {
		out = append(out, CheckRun{
			ID: cr.id, Repo: cr.repo.fullName(), Name: cr.name, HeadSHA: cr.headSHA, Status: cr.status,
			Conclusion: cr.conclusion, DetailsURL: cr.detailsURL, ExternalID: cr.externalID,
			Title: cr.title, Summary: cr.summary, Text: cr.text,
		})
	}
	return out
}

// String renders a comment for test failure messages.
func (c Comment) String() string {
	return fmt.Sprintf("%s#%d comment %d by %s: %q", c.Repo, c.Issue, c.ID, c.User, c.Body)
}
