package githubtest

import (
	"sort"
	"strings"
	"time"
)

// The internal model. Everything here is guarded by Server.mu.

type user struct {
	id      int64
	login   string
	typ     string // User, Bot, Organization
	name    string
	email   string
	orgs    []*user // organizations this user belongs to
	app     bool    // the App's own bot user
	created time.Time
}

type repo struct {
	id            int64
	owner         *user
	name          string
	defaultBranch string
	private       bool
	parent        *repo
	perms         map[string]string // lower login -> admin|maintain|write|triage|read|none
	issues        map[int]*issue
	nextNumber    int
	labels        map[string]*label // lower name
	events        []*issueEvent
	protected     map[string]bool
	checkRuns     []*checkRun
	created       time.Time
	pushed        time.Time
}

func (r *repo) fullName() string { return r.owner.login + "/" + r.name }

type issue struct {
	id        int64
	number    int
	repo      *repo
	title     string
	body      string
	user      *user
	viaApp    bool
	state     string
	reason    string
	locked    bool
	labels    []*label
	comments  []*comment
	reactions []*reaction
	created   time.Time
	updated   time.Time
	closed    time.Time
	closedBy  *user
	pr        *pull
}

type pull struct {
	id                  int64
	headRepo            *repo // nil when the fork was deleted
	headOwner           *user
	headRef             string
	headSHA             string
	baseRef             string
	baseSHA             string
	draft               bool
	maintainerCanModify bool
	merged              bool
	mergedAt            time.Time
	commits             int
	files               int
}

type comment struct {
	id        int64
	issue     *issue
	user      *user
	viaApp    bool
	body      string
	prevBody  string
	created   time.Time
	updated   time.Time
	reactions []*reaction
	deleted   bool
}

type reaction struct {
	id      int64
	user    *user
	content string
	created time.Time
}

type label struct {
	id          int64
	name        string
	color       string
	description string
	isDefault   bool
}

type issueEvent struct {
	id      int64
	issue   *issue
	actor   *user
	viaApp  bool
	event   string
	label   *label
	created time.Time
}

type userEvent struct {
	id      int64
	typ     string
	actor   *user
	repo    *repo
	payload map[string]any
	created time.Time
}

type installation struct {
	id      int64
	account *user
	all     bool
	repos   []*repo
	perms   map[string]string
	created time.Time
	removed bool
}

// has reports whether the installation covers r.
func (in *installation) has(r *repo) bool {
	if in.removed {
		return false
	}
	if in.all {
		return r.owner == in.account
	}
	for _, x := range in.repos {
		if x == r {
			return true
		}
	}
	return false
}

type checkRun struct {
	id          int64
	repo        *repo
	name        string
	headSHA     string
	status      string
	conclusion  string
	detailsURL  string
	externalID  string
	title       string
	summary     string
	text        string
	started     time.Time
	completed   time.Time
	installID   int64
	annotations int
}

type manifestCode struct {
	code     string
	manifest map[string]any
	used     bool
}

type state struct {
	ids           map[string]int64
	users         map[string]*user
	repos         map[string]*repo
	repoOrder     []*repo
	installations map[int64]*installation
	instOrder     []*installation
	tokens        map[string]*token
	comments      map[int64]*comment
	commentOrder  []*comment
	userEvents    []*userEvent
	buckets       map[string]*bucket
	faults        []*faultState
	requests      []Request
	reqBase       int
	deliveries    []Delivery
	pushes        []Push
	codes         map[string]*manifestCode
	manifests     []map[string]any
	bot           *user
	appOwner      *user
	appName       string
	appSlug       string
	appCreated    time.Time
	clientID      string
	clientSecret  string
}

func (st *state) init(o Options) {
	st.ids = map[string]int64{
		"user": 5000, "repo": 700000, "issue": 2000000, "comment": 3000000000,
		"reaction": 150000000, "label": 6000000, "event": 9000000000,
		"installation": 40000, "pull": 1800000000, "check": 2500000000, "userevent": 30000000000,
	}
	st.users = map[string]*user{}
	st.repos = map[string]*repo{}
	st.installations = map[int64]*installation{}
	st.tokens = map[string]*token{}
	st.comments = map[int64]*comment{}
	st.buckets = map[string]*bucket{}
	st.codes = map[string]*manifestCode{}
	st.appName = o.AppName
	st.appSlug = o.AppSlug
	st.appCreated = time.Now().UTC().Truncate(time.Second)
	st.clientID = "Iv1." + randHex(8)
	st.clientSecret = randHex(20)
}

func (st *state) nextID(kind string) int64 {
	st.ids[kind]++
	return st.ids[kind]
}

func (s *Server) stamp() time.Time { return s.now().UTC().Truncate(time.Second) }

// newUser creates or returns the user; callers hold s.mu.
func (s *Server) newUser(login, typ string) *user {
	if u := s.st.users[strings.ToLower(login)]; u != nil {
		return u
	}
	u := &user{id: s.st.nextID("user"), login: login, typ: typ, created: s.stamp()}
	s.st.users[strings.ToLower(login)] = u
	return u
}

func (s *Server) lookupUser(login string) *user { return s.st.users[strings.ToLower(login)] }

func (s *Server) lookupRepo(full string) *repo { return s.st.repos[strings.ToLower(full)] }

// mustRepo finds a seeded repository or fails the test. Callers hold s.mu
// and release it with defer, which also runs when Fatalf exits the goroutine.
func (s *Server) mustRepo(full string) *repo {
	r := s.lookupRepo(full)
	if r == nil {
		s.fatalf("no repository %q", full)
	}
	return r
}

func (s *Server) mustIssue(full string, n int) *issue {
	r := s.mustRepo(full)
	is := r.issues[n]
	if is == nil {
		s.fatalf("no issue %s#%d", full, n)
	}
	return is
}

func (s *Server) mustUser(login string) *user {
	u := s.lookupUser(login)
	if u == nil {
		s.fatalf("no user %q (AddUser first)", login)
	}
	return u
}

// installationFor returns the live installation covering r, if any.
func (s *Server) installationFor(r *repo) *installation {
	for _, in := range s.st.instOrder {
		if in.has(r) {
			return in
		}
	}
	return nil
}

// permission is login's permission on r: admin, maintain, write, triage,
// read or none, as GitHub computes it for a classic token.
func (s *Server) permission(r *repo, u *user) string {
	if u == nil {
		if r.private {
			return "none"
		}
		return "read"
	}
	if r.owner == u {
		return "admin"
	}
	if p, ok := r.perms[strings.ToLower(u.login)]; ok && p != "none" {
		return p
	}
	if !r.private {
		return "read"
	}
	return "none"
}

var permRank = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

func atLeast(p, want string) bool { return permRank[p] >= permRank[want] }

// association is the author_association of u on r.
func (s *Server) association(r *repo, u *user) string {
	switch {
	case u == nil:
		return "NONE"
	case r.owner == u:
		return "OWNER"
	}
	if r.owner.typ == "Organization" {
		for _, o := range u.orgs {
			if o == r.owner {
				return "MEMBER"
			}
		}
	}
	if p, ok := r.perms[strings.ToLower(u.login)]; ok && p != "none" {
		return "COLLABORATOR"
	}
	return "NONE"
}

func (s *Server) labelFor(r *repo, name string) *label {
	if l := r.labels[strings.ToLower(name)]; l != nil {
		return l
	}
	l := &label{id: s.st.nextID("label"), name: name, color: labelColor(name)}
	r.labels[strings.ToLower(name)] = l
	return l
}

func labelColor(name string) string {
	var h uint32 = 2166136261
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	const hex = "0123456789abcdef"
	b := make([]byte, 6)
	for i := range b {
		b[i] = hex[(h>>(4*i))&15]
	}
	return string(b)
}

func (s *Server) addIssueEvent(is *issue, actor *user, viaApp bool, event string, l *label) {
	r := is.repo
	r.events = append(r.events, &issueEvent{
		id: s.st.nextID("event"), issue: is, actor: actor, viaApp: viaApp,
		event: event, label: l, created: s.stamp(),
	})
}

// addLabels adds labels to an issue, recording a labeled event for each
// new one, and returns whether anything changed.
func (s *Server) addLabels(is *issue, actor *user, viaApp bool, names []string) {
	for _, n := range names {
		if n == "" {
			continue
		}
		l := s.labelFor(is.repo, n)
		if hasLabel(is, l) {
			continue
		}
		is.labels = append(is.labels, l)
		is.updated = s.stamp()
		s.addIssueEvent(is, actor, viaApp, "labeled", l)
		s.addUserEvent(actor, is.repo, "IssuesEvent", map[string]any{
			"action": "labeled", "issue": s.issueJSON(is), "label": s.labelJSON(is.repo, l),
		})
	}
}

func (s *Server) removeLabel(is *issue, actor *user, viaApp bool, name string) bool {
	for i, l := range is.labels {
		if strings.EqualFold(l.name, name) {
			is.labels = append(is.labels[:i:i], is.labels[i+1:]...)
			is.updated = s.stamp()
			s.addIssueEvent(is, actor, viaApp, "unlabeled", l)
			s.addUserEvent(actor, is.repo, "IssuesEvent", map[string]any{
				"action": "unlabeled", "issue": s.issueJSON(is), "label": s.labelJSON(is.repo, l),
			})
			return true
		}
	}
	return false
}

func hasLabel(is *issue, l *label) bool {
	for _, x := range is.labels {
		if x == l {
			return true
		}
	}
	return false
}

// addUserEvent appends to actor's events feed (GET /users/{login}/events).
// The payload is a snapshot, as on GitHub.
func (s *Server) addUserEvent(actor *user, r *repo, typ string, payload map[string]any) {
	if actor == nil {
		return
	}
	s.st.userEvents = append(s.st.userEvents, &userEvent{
		id: s.st.nextID("userevent"), typ: typ, actor: actor, repo: r,
		payload: payload, created: s.stamp(),
	})
}

func (s *Server) newIssue(r *repo, author *user, viaApp bool, title, body string) *issue {
	r.nextNumber++
	now := s.stamp()
	is := &issue{
		id: s.st.nextID("issue"), number: r.nextNumber, repo: r, title: title, body: body,
		user: author, viaApp: viaApp, state: "open", created: now, updated: now,
	}
	r.issues[is.number] = is
	return is
}

func (s *Server) newComment(is *issue, author *user, viaApp bool, body string) *comment {
	now := s.stamp()
	c := &comment{id: s.st.nextID("comment"), issue: is, user: author, viaApp: viaApp, body: body, created: now, updated: now}
	is.comments = append(is.comments, c)
	is.updated = now
	s.st.comments[c.id] = c
	s.st.commentOrder = append(s.st.commentOrder, c)
	s.addUserEvent(author, is.repo, "IssueCommentEvent", map[string]any{
		"action": "created", "issue": s.issueJSON(is), "comment": s.commentJSON(c),
	})
	return c
}

// addReaction returns the reaction and whether it was new.
func (s *Server) addReaction(list *[]*reaction, u *user, content string) (*reaction, bool) {
	for _, x := range *list {
		if x.user == u && x.content == content {
			return x, false
		}
	}
	x := &reaction{id: s.st.nextID("reaction"), user: u, content: content, created: s.stamp()}
	*list = append(*list, x)
	return x, true
}

var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

func validReaction(c string) bool {
	for _, x := range reactionContents {
		if x == c {
			return true
		}
	}
	return false
}

func sortedRepos(in []*repo) []*repo {
	out := append([]*repo(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}
