package githubtest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func gitHTTPBackend() (string, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return "", fmt.Errorf("git --exec-path: %v (is git installed?)", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("git http-backend: %v", err)
	}
	return p, nil
}

type gitReq struct {
	owner, name, rest string
}

// gitPath parses /{owner}/{repo}.git/{rest} and /{owner}/{repo}/{rest}
// for the smart-HTTP endpoints.
func gitPath(p string) *gitReq {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[0] == "api" {
		return nil
	}
	rest := parts[2]
	switch {
	case rest == "info/refs", rest == "git-upload-pack", rest == "git-receive-pack", rest == "HEAD":
	default:
		return nil
	}
	name := parts[1]
	if !strings.HasSuffix(name, ".git") && rest == "HEAD" {
		return nil
	}
	return &gitReq{owner: parts[0], name: strings.TrimSuffix(name, ".git"), rest: rest}
}

func (s *Server) repoDir(r *repo) string {
	return filepath.Join(s.gitRoot, strings.ToLower(r.owner.login), strings.ToLower(r.name)+".git")
}

func (s *Server) gitEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + s.gitHome, "LANG=C", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
	}
}

// git runs git in dir and returns its trimmed stdout.
func (s *Server) git(dir string, stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(s.gitEnv(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

func (s *Server) revParse(r *repo, ref string) string {
	out, err := s.git(s.repoDir(r), nil, nil, "rev-parse", "--verify", "-q", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

const preReceive = `#!/bin/sh
# githubtest: refuse updates of protected branches, as GitHub does.
while read old new ref; do
  if [ -f protected-refs ] && grep -qxF "$ref" protected-refs; then
    echo "error: GH006: Protected branch update failed for $ref." >&2
    exit 1
  fi
done
exit 0
`

// initBare creates r's bare repository, empty or as a copy of from.
func (s *Server) initBare(r *repo, from *repo) error {
	dir := s.repoDir(r)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if from != nil {
		if _, err := s.git(s.gitRoot, nil, nil, "clone", "--bare", "--quiet", s.repoDir(from), dir); err != nil {
			return err
		}
		if _, err := s.git(dir, nil, nil, "remote", "remove", "origin"); err != nil {
			return err
		}
	} else if _, err := s.git(s.gitRoot, nil, nil, "init", "--bare", "--quiet", "--initial-branch="+r.defaultBranch, dir); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"http.receivepack", "true"}, {"receive.hideRefs", "refs/pull"}, {"uploadpack.allowAnySHA1InWant", "true"}} {
		if _, err := s.git(dir, nil, nil, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	if _, err := s.git(dir, nil, nil, "symbolic-ref", "HEAD", "refs/heads/"+r.defaultBranch); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "hooks", "pre-receive"), []byte(preReceive), 0o755)
}

// commitFiles commits files on branch with git fast-import (the branch
// starts from base when it does not exist yet) and returns the new head.
func (s *Server) commitFiles(r *repo, branch, base, msg string, files map[string]string, name, email string) (string, error) {
	dir := s.repoDir(r)
	from := s.revParse(r, "refs/heads/"+branch)
	if from == "" && base != "" {
		from = s.revParse(r, "refs/heads/"+base)
	}
	now := time.Now().Unix()
	var b bytes.Buffer
	fmt.Fprintf(&b, "commit refs/heads/%s\n", branch)
	fmt.Fprintf(&b, "author %s <%s> %d +0000\n", name, email, now)
	fmt.Fprintf(&b, "committer %s <%s> %d +0000\n", name, email, now)
	fmt.Fprintf(&b, "data %d\n%s\n", len(msg), msg)
	if from != "" {
		fmt.Fprintf(&b, "from %s\n", from)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
	}
	if _, err := s.git(dir, b.Bytes(), nil, "fast-import", "--quiet", "--force"); err != nil {
		return "", err
	}
	sha := s.revParse(r, "refs/heads/"+branch)
	if sha == "" {
		return "", fmt.Errorf("commit on %s left no branch", branch)
	}
	return sha, nil
}

// Commit adds a commit with files (path → content) to branch, creating
// the branch from the default branch when it does not exist, and returns
// its SHA. Pull requests whose head or base is that branch follow it.
func (s *Server) Commit(repoName, branch, message string, files map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repoName)
	sha, err := s.commitFiles(r, branch, r.defaultBranch, message, files, "githubtest", "githubtest@example.invalid")
	if err != nil {
		s.fatalf("Commit: %v", err)
	}
	r.pushed = s.stamp()
	s.refsChanged(r, []string{"refs/heads/" + branch})
	return sha
}

// repoNamed finds a repository or fails the test, without keeping s.mu.
func (s *Server) repoNamed(name string) *repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mustRepo(name)
}

// GitURL is the clone URL of a repository, without credentials.
func (s *Server) GitURL(repoName string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.URL + "/" + s.mustRepo(repoName).fullName() + ".git"
}

// GitDir is the path of a repository's bare git directory.
func (s *Server) GitDir(repoName string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repoDir(s.mustRepo(repoName))
}

// Branch resolves ref (a branch name, or a full ref such as
// "refs/pull/3/head", or a SHA) to a commit SHA, "" if it does not exist.
func (s *Server) Branch(repoName, ref string) string {
	r := s.repoNamed(repoName)
	if !strings.HasPrefix(ref, "refs/") {
		if sha := s.revParse(r, "refs/heads/"+ref); sha != "" {
			return sha
		}
	}
	return s.revParse(r, ref)
}

// Commit is one commit of a Log.
type Commit struct {
	SHA            string
	Parents        []string
	AuthorName     string
	AuthorEmail    string
	CommitterName  string
	CommitterEmail string
	Time           time.Time
	// Subject is the first line of Message.
	Subject string
	Message string
}

// Log lists the commits reachable from ref, newest first (nil if the ref
// does not exist).
func (s *Server) Log(repoName, ref string) []Commit {
	sha := s.Branch(repoName, ref)
	if sha == "" {
		return nil
	}
	r := s.repoNamed(repoName)
	out, err := s.git(s.repoDir(r), nil, nil, "log", "--format=%H%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x00%ct%x00%B%x1e", sha)
	if err != nil {
		s.fatalf("Log: %v", err)
	}
	var cs []Commit
	for _, rec := range strings.Split(out, "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
		if len(f) < 8 {
			continue
		}
		sec, _ := strconv.ParseInt(f[6], 10, 64)
		msg := strings.TrimRight(f[7], "\n")
		subject, _, _ := strings.Cut(msg, "\n")
		cs = append(cs, Commit{
			SHA: f[0], Parents: strings.Fields(f[1]), AuthorName: f[2], AuthorEmail: f[3],
			CommitterName: f[4], CommitterEmail: f[5], Time: time.Unix(sec, 0).UTC(),
			Subject: subject, Message: msg,
		})
	}
	return cs
}

// ReadFile returns a file's content at ref.
func (s *Server) ReadFile(repoName, ref, path string) (string, bool) {
	sha := s.Branch(repoName, ref)
	if sha == "" {
		return "", false
	}
	r := s.repoNamed(repoName)
	cmd := exec.Command("git", "show", sha+":"+path)
	cmd.Dir = s.repoDir(r)
	cmd.Env = s.gitEnv()
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

// ProtectBranch makes pushes to branch fail the way GitHub's branch
// protection does (GH006, the push is rejected).
func (s *Server) ProtectBranch(repoName, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(repoName)
	r.protected[branch] = true
	var refs []string
	for b := range r.protected {
		refs = append(refs, "refs/heads/"+b)
	}
	sort.Strings(refs)
	if err := os.WriteFile(filepath.Join(s.repoDir(r), "protected-refs"), []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
		s.fatalf("ProtectBranch: %v", err)
	}
}

// refsChanged updates pull requests after refs of r moved: heads from r
// are fetched to refs/pull/<n>/head of their base repository.
func (s *Server) refsChanged(r *repo, refs []string) {
	changed := map[string]bool{}
	for _, ref := range refs {
		changed[strings.TrimPrefix(ref, "refs/heads/")] = true
	}
	for _, base := range s.st.repoOrder {
		for _, is := range base.issues {
			p := is.pr
			if p == nil {
				continue
			}
			if (p.headRepo == r && changed[p.headRef]) || (base == r && changed[p.baseRef]) {
				s.syncPull(is)
			}
		}
	}
}

// syncPull refreshes refs/pull/<n>/head, the head and base SHAs and the
// commit and file counts of a pull request. Closed pull requests keep
// their last head.
func (s *Server) syncPull(is *issue) {
	p, base := is.pr, is.repo
	dir := s.repoDir(base)
	if is.state == "open" && p.headRepo != nil {
		pullRef := fmt.Sprintf("refs/pull/%d/head", is.number)
		if sha := s.revParse(p.headRepo, "refs/heads/"+p.headRef); sha != "" {
			if p.headRepo == base {
				_, _ = s.git(dir, nil, nil, "update-ref", pullRef, sha)
			} else {
				_, _ = s.git(dir, nil, nil, "fetch", "--quiet", "--no-tags", s.repoDir(p.headRepo), "+refs/heads/"+p.headRef+":"+pullRef)
			}
			if s.revParse(base, pullRef) == sha {
				p.headSHA = sha
			}
		}
	}
	if sha := s.revParse(base, "refs/heads/"+p.baseRef); sha != "" {
		p.baseSHA = sha
	}
	if p.headSHA != "" && p.baseSHA != "" {
		if out, err := s.git(dir, nil, nil, "rev-list", "--count", p.baseSHA+".."+p.headSHA); err == nil {
			p.commits, _ = strconv.Atoi(out)
		}
		if out, err := s.git(dir, nil, nil, "diff", "--name-only", p.baseSHA+"..."+p.headSHA); err == nil {
			p.files = len(strings.Fields(out))
		}
	}
}

func (s *Server) pullStats(is *issue) (commits, files int) { return is.pr.commits, is.pr.files }

// Push is one ref update accepted by git-receive-pack.
type Push struct {
	Time           time.Time
	Repo           string
	Ref            string
	Old            string
	New            string // all zeros for a deletion
	Auth           AuthKind
	Login          string
	InstallationID int64
}

// Pushes lists accepted ref updates of a repository ("" for all), oldest
// first.
func (s *Server) Pushes(repoName string) []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Push
	for _, p := range s.st.pushes {
		if repoName == "" || strings.EqualFold(p.Repo, repoName) {
			out = append(out, p)
		}
	}
	return out
}

// gitCred reads git's credentials: Basic (any user with a personal token,
// or x-access-token with an installation token) or a token header.
func (s *Server) gitCred(r *http.Request) *cred {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return &cred{kind: AuthNone}
	}
	scheme, val, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "basic") {
		c := s.authenticate(r)
		if c.kind == AuthApp {
			return &cred{kind: AuthInvalid, msg: "Bad credentials"}
		}
		return c
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
	if err != nil {
		return &cred{kind: AuthInvalid}
	}
	u, p, _ := strings.Cut(string(raw), ":")
	if p == "" {
		p = u
	}
	c := s.tokenCred(p)
	if c.kind == AuthInstallation && u != "x-access-token" && u != p {
		return &cred{kind: AuthInvalid}
	}
	return c
}

type pushCmd struct{ old, new, ref string }

// pushCommands reads the ref updates at the start of a receive-pack body.
func pushCommands(body []byte, gz bool) ([]pushCmd, bool) {
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, false
		}
		if body, err = io.ReadAll(zr); err != nil && len(body) == 0 {
			return nil, false
		}
	}
	var cmds []pushCmd
	for {
		if len(body) < 4 {
			return nil, false
		}
		n, err := strconv.ParseUint(string(body[:4]), 16, 16)
		if err != nil {
			return nil, false
		}
		if n == 0 {
			return cmds, true
		}
		if int(n) > len(body) || n < 4 {
			return nil, false
		}
		line := strings.TrimSuffix(string(body[4:n]), "\n")
		body = body[n:]
		line, _, _ = strings.Cut(line, "\x00")
		f := strings.Fields(line)
		if len(f) == 3 && len(f[0]) == 40 {
			cmds = append(cmds, pushCmd{old: f[0], new: f[1], ref: f[2]})
			continue
		}
		if strings.HasPrefix(line, "shallow ") {
			continue
		}
		return nil, false
	}
}

func gitDeny(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// serveGit checks credentials and hands the request to git http-backend.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, idx int) {
	g := gitPath(r.URL.Path)
	service := g.rest
	if service == "info/refs" {
		service = r.URL.Query().Get("service")
	}
	write := service == "git-receive-pack"

	var body []byte
	if r.Method == http.MethodPost {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 256<<20))
		r.Body.Close()
	}
	var cmds []pushCmd
	if write && r.Method == http.MethodPost {
		var ok bool
		if cmds, ok = pushCommands(body, strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip")); !ok {
			gitDeny(w, http.StatusBadRequest, "githubtest: cannot read the push commands")
			return
		}
	}

	var (
		rp       *repo
		c        *cred
		status   int
		msg, dir string
	)
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		rp = s.lookupRepo(g.owner + "/" + g.name)
		c = s.gitCred(r)
		s.noteAuthAt(idx, c)
		status, msg = s.gitAllowed(rp, c, write, r.Method == http.MethodPost, cmds)
		if rp != nil {
			dir = s.repoDir(rp)
		}
	}()
	if status != 0 {
		gitDeny(w, status, msg)
		return
	}

	rel, _ := filepath.Rel(s.gitRoot, dir)
	req := r.Clone(r.Context())
	req.URL.Path = "/" + filepath.ToSlash(rel) + "/" + g.rest
	req.URL.RawPath = ""
	req.Header.Del("Authorization")
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.TransferEncoding = nil
	}
	env := append(s.gitEnv(), "GIT_PROJECT_ROOT="+s.gitRoot, "GIT_HTTP_EXPORT_ALL=1")
	if l := c.login(); l != "" {
		env = append(env, "REMOTE_USER="+l)
	}
	h := &cgi.Handler{Path: s.backend, Dir: s.gitRoot, Env: env, Stderr: io.Discard}
	h.ServeHTTP(w, req)

	if len(cmds) > 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.afterPush(rp, c, cmds)
	}
}

// gitAllowed decides a git request; status 0 means go ahead.
func (s *Server) gitAllowed(rp *repo, c *cred, write, post bool, cmds []pushCmd) (int, string) {
	if c.kind == AuthInvalid {
		return http.StatusUnauthorized, "Invalid username or token. Password authentication is not supported for Git operations."
	}
	if rp == nil {
		if c.kind == AuthNone {
			return http.StatusUnauthorized, "Authentication required"
		}
		return http.StatusNotFound, "Repository not found."
	}
	var read, push bool
	switch c.kind {
	case AuthNone:
		read = !rp.private
	case AuthInstallation:
		has := c.inst.has(rp) && (c.tok.repos == nil || c.tok.repos[rp])
		read = !rp.private || has
		push = has && c.tok.perms["contents"] == "write"
	case AuthPersonal:
		p := s.permission(rp, c.user)
		read, push = atLeast(p, "read"), atLeast(p, "write")
	}
	if !read {
		if c.kind == AuthNone {
			return http.StatusUnauthorized, "Authentication required"
		}
		return http.StatusNotFound, "Repository not found."
	}
	if !write || push {
		return 0, ""
	}
	if c.kind == AuthNone {
		return http.StatusUnauthorized, "Authentication required"
	}
	// Maintainers may push to the head branch of a fork pull request that
	// allows it.
	allowed := s.maintainerBranches(rp, c)
	if len(allowed) > 0 {
		if !post {
			return 0, ""
		}
		ok := len(cmds) > 0
		for _, cmd := range cmds {
			if !allowed[cmd.ref] {
				ok = false
			}
		}
		if ok {
			return 0, ""
		}
	}
	return http.StatusForbidden, fmt.Sprintf("Permission to %s.git denied to %s.", rp.fullName(), c.login())
}

// maintainerBranches lists the refs of head repository rp that c may push
// through "allow edits by maintainers".
func (s *Server) maintainerBranches(rp *repo, c *cred) map[string]bool {
	out := map[string]bool{}
	for _, base := range s.st.repoOrder {
		for _, is := range base.issues {
			p := is.pr
			if p == nil || p.headRepo != rp || base == rp || is.state != "open" || !p.maintainerCanModify {
				continue
			}
			ok := false
			switch c.kind {
			case AuthPersonal:
				ok = atLeast(s.permission(base, c.user), "write")
			case AuthInstallation:
				ok = s.opts.InstallationMaintainerEdits && c.inst.has(base) &&
					(c.tok.repos == nil || c.tok.repos[base]) && c.tok.perms["contents"] == "write"
			}
			if ok {
				out["refs/heads/"+p.headRef] = true
			}
		}
	}
	return out
}

const zeroSHA = "0000000000000000000000000000000000000000"

func (s *Server) afterPush(rp *repo, c *cred, cmds []pushCmd) {
	var moved []string
	var pushed []pushCmd
	for _, cmd := range cmds {
		now := s.revParse(rp, cmd.ref)
		if now == cmd.new || (cmd.new == zeroSHA && now == "") {
			moved = append(moved, cmd.ref)
			pushed = append(pushed, cmd)
			s.st.pushes = append(s.st.pushes, Push{
				Time: time.Now(), Repo: rp.fullName(), Ref: cmd.ref, Old: cmd.old, New: cmd.new,
				Auth: c.kind, Login: c.login(), InstallationID: c.installationID(),
			})
		}
	}
	if len(moved) == 0 {
		return
	}
	rp.pushed = s.stamp()
	s.refsChanged(rp, moved)
	for _, cmd := range pushed {
		s.addUserEvent(c.user, rp, "PushEvent", obj{
			"repository_id": rp.id, "push_id": s.st.nextID("userevent"), "size": 1, "distinct_size": 1,
			"ref": cmd.ref, "head": cmd.new, "before": cmd.old, "commits": []obj{},
		})
	}
}
