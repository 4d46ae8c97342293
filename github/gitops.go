package github

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// DefaultGitTimeout bounds one git command.
const DefaultGitTimeout = 10 * time.Minute

// gitCmd runs git without a shell. A token is handed to git only through
// its environment as an http.<web>/.extraheader, so it never appears in
// a URL, in argv or in .git/config. Repositories are untrusted: hooks and
// fsmonitor are disabled on every command.
type gitCmd struct {
	webURL  string // "https://github.com", no trailing slash
	timeout time.Duration
}

var accessTokenRE = regexp.MustCompile(`(?i)(x-access-token:)[^@\s]+@|(authorization:\s*\S+\s+)\S+`)

// redact removes secrets from git output.
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return accessTokenRE.ReplaceAllString(s, "${1}${2}[redacted]")
}

func basicHeader(token string) string {
	return base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
}

func (g gitCmd) env(token string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_ASKPASS=", "SSH_ASKPASS=")
	if token != "" {
		env = append(env,
			"GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=http."+g.webURL+"/.extraheader",
			"GIT_CONFIG_VALUE_0=AUTHORIZATION: basic "+basicHeader(token),
		)
	}
	return env
}

// run runs git in dir (or with no dir), returning trimmed stdout. On
// failure the error is an *app.Error whose text carries git's redacted
// stderr and never the token.
func (g gitCmd) run(ctx context.Context, dir, token string, stdin []byte, args ...string) (string, error) {
	timeout := g.timeout
	if timeout <= 0 {
		timeout = DefaultGitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=", "-c", "credential.helper=",
		"-c", "protocol.ext.allow=never", "-c", "transfer.fsckObjects=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = g.env(token)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err == nil {
		return strings.TrimRight(out.String(), "\n"), nil
	}
	secrets := []string{token}
	if token != "" {
		secrets = append(secrets, basicHeader(token))
	}
	detail := redact(strings.TrimSpace(errb.String()), secrets...)
	if len(detail) > 600 {
		detail = detail[len(detail)-600:]
	}
	verb := "git"
	if len(args) > 0 {
		verb = "git " + args[0]
	}
	cause := errors.New(verb + ": " + redact(err.Error(), secrets...) + ": " + detail)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", app.WrapError(app.EUNAVAILABLE, cause, "%s timed out", verb)
		}
		return "", app.WrapError(app.EUNAVAILABLE, cause, "%s was cancelled", verb)
	}
	return "", gitError(cause, verb, detail)
}

// gitError classifies a failed git command by what git printed.
func gitError(cause error, verb, detail string) error {
	d := strings.ToLower(detail)
	switch {
	case strings.Contains(d, "returned error: 429"):
		return app.WrapError(app.ERATELIMIT, cause, "%s: GitHub rate limit exceeded", verb)
	case strings.Contains(d, "returned error: 5"), strings.Contains(d, "could not resolve host"),
		strings.Contains(d, "failed to connect"), strings.Contains(d, "connection refused"),
		strings.Contains(d, "connection reset"), strings.Contains(d, "timed out"),
		strings.Contains(d, "unexpected disconnect"), strings.Contains(d, "the remote end hung up"),
		strings.Contains(d, "empty reply"), strings.Contains(d, "rpc failed"):
		return app.WrapError(app.EUNAVAILABLE, cause, "%s: GitHub could not be reached", verb)
	case strings.Contains(d, "non-fast-forward"), strings.Contains(d, "fetch first"), strings.Contains(d, "stale info"):
		return app.WrapError(app.ECONFLICT, cause, "%s: the branch moved on GitHub", verb)
	case strings.Contains(d, "returned error: 401"), strings.Contains(d, "returned error: 403"),
		strings.Contains(d, "permission"), strings.Contains(d, "protected branch"), strings.Contains(d, "pre-receive hook declined"),
		strings.Contains(d, "authentication failed"), strings.Contains(d, "[remote rejected]"):
		return app.WrapError(app.EFORBIDDEN, cause, "%s: GitHub refused the push or fetch", verb)
	case strings.Contains(d, "returned error: 404"), strings.Contains(d, "not found"), strings.Contains(d, "couldn't find remote ref"):
		return app.WrapError(app.ENOTFOUND, cause, "%s: not found on GitHub", verb)
	}
	return app.WrapError(app.EINTERNAL, cause, "%s failed", verb)
}

// cloneAt makes a fresh repository in dir (which must not exist or be
// empty) holding remote's ref, shallow (depth 1), checked out. ref may be
// a branch, a tag, a full ref such as refs/pull/3/head, a commit SHA, or
// empty for the remote's default branch. The remote URL is stored
// without credentials.
func (g gitCmd) cloneAt(ctx context.Context, dir, remote, token, ref string) (string, error) {
	if _, err := g.run(ctx, "", "", nil, "init", "-q", dir); err != nil {
		return "", err
	}
	if _, err := g.run(ctx, dir, "", nil, "remote", "add", "origin", remote); err != nil {
		return "", err
	}
	branch := ""
	if ref == "" {
		head, err := g.defaultBranch(ctx, dir, token)
		if err != nil {
			return "", err
		}
		ref, branch = "refs/heads/"+head, head
	} else if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		branch = b
	} else if !strings.HasPrefix(ref, "refs/") && !isSHA(ref) {
		branch = ref
	}
	if strings.HasPrefix(ref, "-") {
		return "", app.Errorf(app.EINVALID, "ref %q is not valid", ref)
	}
	if _, err := g.run(ctx, dir, token, nil, "fetch", "-q", "--no-tags", "--depth=1", "origin", ref); err != nil {
		if !isSHA(ref) {
			return "", err
		}
		// Not every server lets a client want an arbitrary commit: fetch
		// the branches and look for it.
		if _, err := g.run(ctx, dir, token, nil, "fetch", "-q", "--no-tags", "origin", "+refs/heads/*:refs/remotes/origin/*"); err != nil {
			return "", err
		}
		if _, err := g.run(ctx, dir, "", nil, "update-ref", "FETCH_HEAD", ref); err != nil {
			return "", app.Errorf(app.ENOTFOUND, "commit %s is not on GitHub", ref)
		}
	}
	args := []string{"checkout", "-q", "--detach", "FETCH_HEAD"}
	if branch != "" {
		if _, err := g.run(ctx, dir, "", nil, "check-ref-format", "--branch", branch); err == nil {
			args = []string{"checkout", "-q", "-B", branch, "FETCH_HEAD"}
		}
	}
	if _, err := g.run(ctx, dir, "", nil, args...); err != nil {
		return "", err
	}
	return g.run(ctx, dir, "", nil, "rev-parse", "HEAD")
}

// defaultBranch asks the remote which branch its HEAD points at.
func (g gitCmd) defaultBranch(ctx context.Context, dir, token string) (string, error) {
	out, err := g.run(ctx, dir, token, nil, "ls-remote", "--symref", "origin", "HEAD")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "ref: refs/heads/"); ok {
			b, _, _ := strings.Cut(rest, "\t")
			return b, nil
		}
	}
	return "", app.Errorf(app.ENOTFOUND, "the repository has no default branch")
}

// remoteRef returns the SHA remote's ref points at, "" when it does not exist.
func (g gitCmd) remoteRef(ctx context.Context, dir, remote, token, ref string) (string, error) {
	out, err := g.run(ctx, dir, token, nil, "ls-remote", remote, ref)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		sha, name, ok := strings.Cut(line, "\t")
		if ok && name == ref {
			return sha, nil
		}
	}
	return "", nil
}

// fetchBundle imports a bundle's HEAD into ref in the repository at dir.
func (g gitCmd) fetchBundle(ctx context.Context, dir, bundle, ref string) (string, error) {
	if _, err := g.run(ctx, dir, "", nil, "fetch", "-q", "--no-tags", bundle, "+HEAD:"+ref); err != nil {
		return "", err
	}
	return g.run(ctx, dir, "", nil, "rev-parse", ref)
}

// push updates remote's refs/heads/<branch> to sha. lease, when not
// empty, is the SHA the branch must still have ("none" for absent), so
// a branch asb owns may be rewritten but never clobbered blindly;
// without a lease only fast-forwards are pushed.
func (g gitCmd) push(ctx context.Context, dir, remote, token, sha, branch, lease string) error {
	args := []string{"push", "-q", "--no-verify", "--porcelain"}
	if lease != "" {
		if lease == "none" {
			lease = ""
		}
		args = append(args, "--force-with-lease=refs/heads/"+branch+":"+lease)
	}
	args = append(args, remote, sha+":refs/heads/"+branch)
	_, err := g.run(ctx, dir, token, nil, args...)
	return err
}

// bundlePrerequisites lists the commits a bundle needs the receiving
// repository to have already.
func bundlePrerequisites(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, app.WrapError(app.EINVALID, err, "the agent's bundle cannot be read")
	}
	defer f.Close()
	r := bufio.NewReader(f)
	first, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "# v") || !strings.Contains(first, "git bundle") {
		return nil, app.Errorf(app.EINVALID, "the agent's bundle is not a git bundle")
	}
	var out []string
	for {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\n")
		if line == "" || err != nil {
			break
		}
		if rest, ok := strings.CutPrefix(line, "-"); ok {
			sha, _, _ := strings.Cut(rest, " ")
			out = append(out, sha)
		}
	}
	return out, nil
}

func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
