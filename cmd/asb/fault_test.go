package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/github/githubtest"
	"github.com/asb-dev/asb/sandbox/inbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
	"github.com/asb-dev/asb/sandbox/sshtest"
)

// The fault suite (docs/reliability.md): every test here is named
// TestFault… so `go test -run Fault ./...` runs the suite alone.

const (
	faultWebhookSecret = "fault-suite-webhook-secret-0123"
	faultOneStepSecret = "fault-suite-one-step-secret-4567"
)

// faultRig is one controller process over a fake GitHub (real git), a
// fake msb host with the scripted agent, and a data folder that outlives
// the process, so a test can SIGKILL it and start it again.
type faultRig struct {
	t      *testing.T
	gh     *githubtest.Server
	pr     githubtest.PullRequest
	msb    *msbtest.Host
	dir    string
	env    []string
	before string
	p      *process
	c      *e2eClient
	// logs keeps the logs of every process the rig started.
	logs []*syncBuffer
}

func newFaultRig(t *testing.T, extra ...string) *faultRig {
	t.Helper()
	srv := githubtest.New(t, githubtest.Options{})
	srv.CreateRepo("acme", "api", map[string]string{"README.md": "# api\n"})
	srv.Commit("acme/api", "feature", "start the feature", map[string]string{"feature.go": "package api\n"})
	srv.AddUser("octo")
	srv.SetPermission("acme/api", "octo", "write")
	srv.AddInstallation("acme", "acme/api")
	pr := srv.AddPull("acme/api", githubtest.PullSpec{Author: "octo", Title: "Add the feature", Head: "feature", Base: "main"})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, srv.AppPrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	host := agentHost(t)
	env := append([]string{
		"SANDBOX_HOSTS=local", "MSB_PATH=" + host.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M", "POOL_SIZE=0",
		"AGENT_COMMAND=" + inbox.ToolDir + "/bin/claude", "MCP_HTTP_TOKEN=" + e2eToken,
		"GITHUB_WEBHOOK_SECRET=" + faultWebhookSecret,
		"GITHUB_APP_ID=" + strconv.FormatInt(srv.AppID(), 10), "GITHUB_APP_PRIVATE_KEY_FILE=" + keyFile,
		"GITHUB_API_URL=" + srv.APIURL(), "GITHUB_WEB_URL=" + srv.URL + "/"}, extra...)
	return &faultRig{t: t, gh: srv, pr: pr, msb: host, dir: dir, env: env, before: srv.Branch("acme/api", "feature")}
}

// newLocalRig is a rig without GitHub: runs come from /delegate.json.
func newLocalRig(t *testing.T, host *msbtest.Host, extra ...string) *faultRig {
	t.Helper()
	env := append([]string{"SANDBOX_HOSTS=local", "MSB_PATH=" + host.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M",
		"POOL_SIZE=0", "AGENT_COMMAND=" + inbox.ToolDir + "/bin/claude", "MCP_HTTP_TOKEN=" + e2eToken}, extra...)
	return &faultRig{t: t, msb: host, dir: t.TempDir(), env: env}
}

// delegate starts a task through the JSON route and returns its session.
func (r *faultRig) delegate(task string) string {
	r.t.Helper()
	var d struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if code := r.c.do("POST", "/delegate.json", map[string]any{"task": task}, &d); code != 200 {
		r.t.Fatalf("delegate: %d", code)
	}
	return d.Session.ID
}

// notices are the texts of a session's run.notice events.
func notices(w faultSession) []string {
	var out []string
	for _, e := range w.Events {
		if e.Type == "run.notice" {
			var d struct {
				Text string `json:"text"`
			}
			json.Unmarshal(e.Data, &d)
			out = append(out, d.Text)
		}
	}
	return out
}

// agentSaid reports whether an agent record contains text.
func agentSaid(w faultSession, text string) bool {
	for _, e := range w.Events {
		if e.Type == "agent" && strings.Contains(string(e.Data), text) {
			return true
		}
	}
	return false
}

// hasNotice reports whether a notice contains text.
func hasNotice(w faultSession, text string) bool {
	for _, n := range notices(w) {
		if strings.Contains(n, text) {
			return true
		}
	}
	return false
}

// start runs a controller process over the rig's data folder.
func (r *faultRig) start() {
	r.t.Helper()
	r.p = startProcess(r.t, r.dir, r.env...)
	r.logs = append(r.logs, r.p.logs)
	r.c = &e2eClient{t: r.t, base: "http://" + r.p.addr}
}

// kill SIGKILLs the controller: no shutdown code runs.
func (r *faultRig) kill() {
	r.t.Helper()
	if err := r.p.cmd.Process.Kill(); err != nil {
		r.t.Fatal(err)
	}
	r.p.cmd.Wait()
}

func (r *faultRig) allLogs() string {
	var b strings.Builder
	for _, l := range r.logs {
		b.WriteString(l.String())
	}
	return b.String()
}

// comment posts an /agent comment on the pull request and delivers its
// webhook, as GitHub would.
func (r *faultRig) comment(body string) githubtest.Comment {
	r.t.Helper()
	return r.commentOn(r.pr.Number, body)
}

// commentOn comments on an issue or pull request and delivers the webhook.
func (r *faultRig) commentOn(number int, body string) githubtest.Comment {
	r.t.Helper()
	c := r.gh.AddComment("acme/api", number, "octo", body)
	resp, err := r.gh.Deliver(context.Background(), "http://"+r.p.addr+"/webhooks/github", faultWebhookSecret, "issue_comment", r.gh.IssueCommentPayload(c.ID, "created"))
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		r.t.Fatalf("webhook answered %d", resp.StatusCode)
	}
	return c
}

// faultSession is what /watch.json says about a session.
type faultSession struct {
	State   string `json:"state"`
	Session struct {
		ID  string `json:"id"`
		Box struct {
			Name string `json:"name"`
		} `json:"box"`
	} `json:"session"`
	Runs []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Turn     int    `json:"turn"`
		Error    string `json:"error"`
		Question string `json:"question"`
	} `json:"runs"`
	Events []struct {
		ID    int64           `json:"id"`
		RunID string          `json:"run_id"`
		Type  string          `json:"type"`
		Data  json.RawMessage `json:"data"`
	} `json:"events"`
}

// session returns the rig's only session (the pull request's thread), or
// false while there is none yet.
func (r *faultRig) session() (faultSession, bool) {
	r.t.Helper()
	var fleet struct {
		Sessions []struct {
			Session struct {
				ID string `json:"id"`
			} `json:"session"`
		} `json:"sessions"`
	}
	if code := r.c.do("GET", "/fleet.json?all=1", nil, &fleet); code != 200 {
		r.t.Fatalf("fleet: %d", code)
	}
	if len(fleet.Sessions) == 0 {
		return faultSession{}, false
	}
	if len(fleet.Sessions) != 1 {
		r.t.Fatalf("%d sessions for one pull request", len(fleet.Sessions))
	}
	var w faultSession
	if code := r.c.do("GET", "/watch.json?events=1000&session="+fleet.Sessions[0].Session.ID, nil, &w); code != 200 {
		r.t.Fatalf("watch: %d", code)
	}
	return w, true
}

// waitSession polls the session until cond holds.
func (r *faultRig) waitSession(what string, limit time.Duration, cond func(faultSession) bool) faultSession {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if w, ok := r.session(); ok && cond(w) {
			return w
		}
		if time.Now().After(deadline) {
			w, _ := r.session()
			r.t.Fatalf("timed out waiting for %s; runs: %+v\nlogs:\n%s", what, w.Runs, r.allLogs())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// runsAre reports whether the session has n runs, all in state.
func runsAre(n int, state string) func(faultSession) bool {
	return func(w faultSession) bool {
		if len(w.Runs) != n {
			return false
		}
		for _, run := range w.Runs {
			if run.State != state {
				return false
			}
		}
		return true
	}
}

// checkAgentRecords checks that the stored agent records of every turn of
// every run are the lines the agent wrote in the box, each once, in order.
func (r *faultRig) checkAgentRecords(w faultSession) {
	r.t.Helper()
	for _, run := range w.Runs {
		var got []string
		for _, e := range w.Events {
			if e.Type == "agent" && e.RunID == run.ID {
				got = append(got, string(e.Data))
			}
		}
		out, stderr, code := r.msb.Run("exec", w.Session.Box.Name, "--", "sh", "-c", "cat "+inbox.RunsDir+"/"+run.ID+"-*/events.ndjson")
		if code != 0 {
			r.t.Fatalf("read the agent's stream of %s: %s", run.ID, stderr)
		}
		var want []string
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				want = append(want, l)
			}
		}
		if len(want) == 0 || len(got) != len(want) {
			r.t.Fatalf("run %s: stored %d agent records; the agent wrote %d", run.ID, len(got), len(want))
		}
		for i := range want {
			var a, b any
			if json.Unmarshal([]byte(got[i]), &a) != nil || json.Unmarshal([]byte(want[i]), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
				r.t.Fatalf("run %s record %d differs:\n got %s\nwant %s", run.ID, i, got[i], want[i])
			}
		}
	}
}

// checkLaunches checks the agent was invoked once per turn: the scripted
// agent keeps one state file per conversation with a count of its
// invocations, and the box holds one turn folder per turn.
func (r *faultRig) checkLaunches(w faultSession, turns int) {
	r.t.Helper()
	out, stderr, code := r.msb.Run("exec", w.Session.Box.Name, "--", "sh", "-c", "cat "+inbox.Home+"/.scripted-agent/*.json")
	if code != 0 {
		r.t.Fatalf("read the agent's conversations: %s", stderr)
	}
	var st struct {
		Turns int `json:"turns"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	n := 0
	for dec.More() {
		if err := dec.Decode(&st); err != nil {
			r.t.Fatalf("agent state: %v\n%s", err, out)
		}
		n++
	}
	if n != 1 || st.Turns != turns {
		r.t.Fatalf("%d agent conversations, the last with %d invocations; want 1 with %d", n, st.Turns, turns)
	}
	out, _, _ = r.msb.Run("exec", w.Session.Box.Name, "--", "ls", inbox.RunsDir)
	if got := len(strings.Fields(out)); got != turns {
		r.t.Fatalf("%d turn folders in the box, want %d: %s", got, turns, out)
	}
	if boxes := r.msb.Boxes(); len(boxes) != 1 {
		r.t.Fatalf("boxes on the host: %v; want the session's one", boxes)
	}
}

// checkPushedOnce checks the pull request branch gained exactly the
// agent's one commit, pushed by one successful receive-pack.
func (r *faultRig) checkPushedOnce(subject string) {
	r.t.Helper()
	waitUntil(r.t, "the agent's commit on the PR branch", 30*time.Second, func() bool {
		return r.gh.Branch("acme/api", "feature") != r.before
	})
	log := r.gh.Log("acme/api", "feature")
	if len(log) < 2 || log[0].Subject != subject || log[1].SHA != r.before {
		r.t.Fatalf("PR branch: %+v", log)
	}
	ok := 0
	for _, q := range r.gh.Requests(githubtest.Match("POST", "/acme/api.git/git-receive-pack")) {
		if q.Status == 200 {
			ok++
		}
	}
	if ok != 1 {
		r.t.Fatalf("%d successful pushes, want 1", ok)
	}
}

// trackingComments waits until the pull request has n bot comments,
// each saying every, the last saying last, and returns them.
func (r *faultRig) trackingComments(n int, every, last string) []githubtest.Comment {
	r.t.Helper()
	var cs []githubtest.Comment
	deadline := time.Now().Add(30 * time.Second)
	for {
		cs = botComments(r.gh, r.pr.Number)
		done := len(cs) == n && strings.Contains(cs[len(cs)-1].Body, last)
		for _, c := range cs {
			done = done && strings.Contains(c.Body, every)
		}
		if done {
			return cs
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, c := range cs {
				fmt.Fprintf(&b, "---\n%s\n", c.Body)
			}
			r.t.Fatalf("want %d tracking comments saying %q, the last %q; have %d:\n%s", n, every, last, len(cs), b.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// checkNoSecrets checks that no token the fake GitHub issued, nor the
// operator token, nor the webhook secret, nor any of extra, is in a log,
// an API answer or a file of the data folder.
func (r *faultRig) checkNoSecrets(extra ...string) {
	r.t.Helper()
	secrets := append([]string{e2eToken, faultWebhookSecret}, extra...)
	if r.gh != nil {
		tokens := r.gh.IssuedTokens()
		if len(tokens) == 0 {
			r.t.Fatal("the fake issued no tokens: nothing was checked")
		}
		secrets = append(secrets, tokens...)
	}
	logs := r.allLogs()
	var files []string
	filepath.Walk(filepath.Join(r.dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		r.t.Fatal("no data files to check")
	}
	seen := ""
	if r.c != nil {
		r.c.mu.Lock()
		seen = r.c.seen.String()
		r.c.mu.Unlock()
	}
	for i, s := range secrets {
		if strings.Contains(logs, s) {
			r.t.Fatalf("secret #%d is in the log", i)
		}
		// The operator token is the client's own credential; answers must
		// not echo any secret.
		if strings.Contains(seen, s) {
			r.t.Fatalf("secret #%d is in an API answer", i)
		}
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(s)) {
				r.t.Fatalf("secret #%d is stored in %s", i, f)
			}
		}
	}
}

// TestFaultSIGKILLAtEachStage kills the controller with SIGKILL while a
// run is queued, starting, running, waiting for an answer and pushing,
// starts it again over the same data folder, and checks that the run
// finishes (or waits again for its answer) with nothing lost (every agent
// record stored once, in order), nothing done twice (one box, one agent
// invocation per turn, one push, one tracking comment per run) and the
// pull request told the outcome.
func TestFaultSIGKILLAtEachStage(t *testing.T) {
	const commitScript = "write fault.txt survived\\n\ncommit survive a SIGKILL\nsay all done"
	cases := []struct {
		name string
		// before runs before the trigger (knobs, faults).
		before func(r *faultRig)
		// trigger makes the run (and any runs queued behind it).
		trigger func(r *faultRig)
		// hold waits until the run is in the stage the process dies in.
		hold func(r *faultRig)
		// release lifts the fault that held the run, while no process runs.
		release func(r *faultRig)
		// after drives the run to its end after the restart and checks
		// what the stage needs.
		after       func(r *faultRig)
		runs, turns int
		// told is set when the run was live in the process that died: the
		// run's events must say the controller picked it up again.
		told bool
	}{{
		name: "queued",
		trigger: func(r *faultRig) {
			r.comment("/agent first\n#!asb-script\nsay first\nsleep 2s\nsay first done")
			r.waitSession("the first run going", 60*time.Second, func(w faultSession) bool {
				return len(w.Runs) == 1 && w.Runs[0].State == "running"
			})
			r.comment("/agent second\n#!asb-script\n" + commitScript)
		},
		hold: func(r *faultRig) {
			r.waitSession("a follow-up queued behind the run", 30*time.Second, func(w faultSession) bool {
				return len(w.Runs) == 2 && w.Runs[0].State == "running" && w.Runs[1].State == "queued"
			})
		},
		runs: 2, turns: 2, told: true,
	}, {
		name: "starting",
		before: func(r *faultRig) {
			r.msb.SetKnob(t, "FAKE_MSB_BOOT_FAIL=*")
		},
		trigger: func(r *faultRig) { r.comment("/agent go\n#!asb-script\n" + commitScript) },
		hold: func(r *faultRig) {
			r.waitSession("a run starting", 60*time.Second, runsAre(1, "starting"))
			waitUntil(t, "a failed boot", 30*time.Second, func() bool {
				return strings.Contains(r.p.logs.String(), "run step failed; retrying")
			})
		},
		release: func(r *faultRig) {
			if err := os.Remove(filepath.Join(r.msb.Home, "fake-knobs.env")); err != nil {
				t.Fatal(err)
			}
		},
		runs: 1, turns: 1, told: true,
	}, {
		name: "starting, box booted",
		before: func(r *faultRig) {
			r.msb.SetKnob(t, "FAKE_MSB_EXEC_DELAY=1500ms") // the box boots, its set-up crawls
		},
		trigger: func(r *faultRig) { r.comment("/agent go\n#!asb-script\n" + commitScript) },
		hold: func(r *faultRig) {
			waitUntil(t, "a box booted for the run", 60*time.Second, func() bool { return len(r.msb.Boxes()) == 1 })
			if w, _ := r.session(); !runsAre(1, "starting")(w) {
				t.Fatalf("run while its box is set up: %+v", w.Runs)
			}
		},
		release: func(r *faultRig) {
			if err := os.Remove(filepath.Join(r.msb.Home, "fake-knobs.env")); err != nil {
				t.Fatal(err)
			}
		},
		runs: 1, turns: 1, told: true,
	}, {
		name:    "running",
		trigger: func(r *faultRig) { r.comment("/agent go\n#!asb-script\nemit 10\nsleep 2s\nemit 10\n" + commitScript) },
		hold: func(r *faultRig) {
			r.waitSession("the agent writing", 60*time.Second, func(w faultSession) bool {
				n := 0
				for _, e := range w.Events {
					if e.Type == "agent" {
						n++
					}
				}
				return n >= 5 && runsAre(1, "running")(w)
			})
		},
		runs: 1, turns: 1, told: true,
	}, {
		name: "waiting",
		trigger: func(r *faultRig) {
			r.comment("/agent go\n#!asb-script\nask Which greeting?\nenv DB_PASSWORD\n" + commitScript)
		},
		hold: func(r *faultRig) {
			r.waitSession("the run waiting", 60*time.Second, runsAre(1, "waiting"))
		},
		after: func(r *faultRig) {
			// Still waiting after the restart, the question still shown.
			w := r.waitSession("the run waiting again", 30*time.Second, runsAre(1, "waiting"))
			if w.Runs[0].Question != "Which greeting?" {
				t.Fatalf("question after restart: %q", w.Runs[0].Question)
			}
			r.trackingComments(1, "Which greeting?", "Which greeting?")
			var res struct {
				Outcome string `json:"outcome"`
			}
			// The answer carries a one-step secret (checked nowhere below).
			secrets := map[string]string{"DB_PASSWORD": faultOneStepSecret}
			if code := r.c.do("POST", "/resume.json", map[string]any{"session": w.Session.ID, "message": "hello", "secrets": secrets}, &res); code != 200 || res.Outcome != "answered" {
				t.Fatalf("answer: %d %+v", code, res)
			}
			r.waitSession("the agent seeing its secret", 60*time.Second, func(w faultSession) bool {
				return agentSaid(w, fmt.Sprintf("DB_PASSWORD is set (%d bytes)", len(faultOneStepSecret)))
			})
		},
		runs: 1, turns: 2,
	}, {
		name: "pushing",
		before: func(r *faultRig) {
			r.gh.Inject(githubtest.Fault{Kind: githubtest.FaultHang, Method: "POST", Path: "/acme/api.git/git-receive-pack", Times: -1})
		},
		trigger: func(r *faultRig) { r.comment("/agent go\n#!asb-script\n" + commitScript) },
		hold: func(r *faultRig) {
			waitUntil(t, "the push hanging", 60*time.Second, func() bool {
				return len(r.gh.Requests(func(q githubtest.Request) bool {
					return q.Fault == githubtest.FaultHang && strings.HasSuffix(q.Path, "git-receive-pack")
				})) > 0
			})
			if w, _ := r.session(); !runsAre(1, "running")(w) {
				t.Fatalf("pushing run: %+v", w.Runs)
			}
		},
		release: func(r *faultRig) { r.gh.ClearFaults() },
		runs:    1, turns: 1, told: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			if tc.before != nil {
				tc.before(r)
			}
			r.start()
			tc.trigger(r)
			tc.hold(r)
			r.kill()
			if tc.release != nil {
				tc.release(r)
			}
			r.start()
			if tc.after != nil {
				tc.after(r)
			}
			w := r.waitSession("every run done", 90*time.Second, runsAre(tc.runs, "done"))
			if tc.told != hasNotice(w, "controller restarted") {
				t.Fatalf("told of the restart: %v, want %v; notices: %q", !tc.told, tc.told, notices(w))
			}
			r.checkAgentRecords(w)
			r.checkLaunches(w, tc.turns)
			r.checkPushedOnce("survive a SIGKILL")
			r.trackingComments(tc.runs, "Done", "all done")
			r.checkNoSecrets(faultOneStepSecret)
		})
	}
}

// TestFaultGitHubPublish makes GitHub fail while a finished run publishes:
// the push answered 5xx or dropped, the pull request creation answered
// 5xx, a 403 primary rate limit or a 429 with Retry-After, and the edit
// of the tracking comment answered 5xx. Each is retried: the commit lands
// once, one draft pull request is opened, and one tracking comment ends
// as the final report.
func TestFaultGitHubPublish(t *testing.T) {
	const repoPulls = "/api/v3/repos/acme/api/pulls"
	cases := []struct {
		name  string
		fault githubtest.Fault
	}{
		{"push 502", githubtest.Fault{Kind: githubtest.FaultServerError, Method: "POST", Path: "/acme/api.git/git-receive-pack", Times: 2}},
		{"push dropped", githubtest.Fault{Kind: githubtest.FaultDrop, Method: "POST", Path: "/acme/api.git/git-receive-pack"}},
		{"pull request 500", githubtest.Fault{Kind: githubtest.FaultServerError, Status: 500, Method: "POST", Path: repoPulls, Times: 2}},
		{"pull request 403 rate limit", githubtest.Fault{Kind: githubtest.FaultRateLimit, Method: "POST", Path: repoPulls}},
		{"pull request 429", githubtest.Fault{Kind: githubtest.FaultTooManyRequests, Method: "POST", Path: repoPulls, RetryAfter: time.Second}},
		{"tracking comment edit 503", githubtest.Fault{Kind: githubtest.FaultServerError, Status: 503, Method: "PATCH", Path: "/api/v3/repos/acme/api/issues/comments/*", Times: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newFaultRig(t)
			issue := r.gh.AddIssue("acme/api", githubtest.IssueSpec{Author: "octo", Title: "Write the fault file"})
			r.start()
			if tc.fault.Kind == githubtest.FaultRateLimit {
				tc.fault.Reset = time.Now().Add(2 * time.Second) // go-github holds calls until then
			}
			r.gh.Inject(tc.fault)
			r.commentOn(issue.Number, "/agent go\n#!asb-script\nwrite fault.txt survived\\n\ncommit survive GitHub faults\nsay all done")
			w := r.waitSession("the run done", 90*time.Second, runsAre(1, "done"))
			faulted := r.gh.Requests(func(q githubtest.Request) bool { return q.Fault == tc.fault.Kind })
			if len(faulted) == 0 {
				t.Fatal("the fault never hit: nothing was tested")
			}
			var pulls []githubtest.PullRequest
			for _, p := range r.gh.PullRequests("acme/api") {
				if strings.HasPrefix(p.Head, "agent/") {
					pulls = append(pulls, p)
				}
			}
			if len(pulls) != 1 || !pulls[0].Draft {
				t.Fatalf("agent pull requests: %+v", pulls)
			}
			if log := r.gh.Log("acme/api", pulls[0].Head); len(log) < 2 || log[0].Subject != "survive GitHub faults" || log[1].Subject == "survive GitHub faults" {
				t.Fatalf("branch %s: %+v", pulls[0].Head, log)
			}
			ok := 0
			for _, q := range r.gh.Requests(githubtest.Match("POST", "/acme/api.git/git-receive-pack")) {
				if q.Status == 200 {
					ok++
				}
			}
			if ok != 1 {
				t.Fatalf("%d successful pushes, want 1", ok)
			}
			var cs []githubtest.Comment
			waitUntil(t, "the final report", 30*time.Second, func() bool {
				cs = botComments(r.gh, issue.Number)
				return len(cs) == 1 && strings.Contains(cs[0].Body, "Done") && strings.Contains(cs[0].Body, pulls[0].HTMLURL)
			})
			r.checkAgentRecords(w)
			r.checkNoSecrets()
		})
	}
}

// TestFaultGitHubRefusesPublish: when GitHub refuses the pull request
// for good (422), the run fails once, without retrying forever, and the
// tracking comment says why; the pushed branch stays.
func TestFaultGitHubRefusesPublish(t *testing.T) {
	r := newFaultRig(t)
	issue := r.gh.AddIssue("acme/api", githubtest.IssueSpec{Author: "octo", Title: "Write the fault file"})
	r.start()
	r.gh.Inject(githubtest.Fault{Kind: githubtest.FaultServerError, Status: 422, Method: "POST", Path: "/api/v3/repos/acme/api/pulls", Times: -1})
	r.commentOn(issue.Number, "/agent go\n#!asb-script\nwrite fault.txt refused\\n\ncommit refused by GitHub\nsay all done")
	w := r.waitSession("the run failed", 90*time.Second, runsAre(1, "failed"))
	if !strings.Contains(w.Runs[0].Error, "could not open a pull request") {
		t.Fatalf("run error: %q", w.Runs[0].Error)
	}
	waitUntil(t, "the tracking comment to say why", 30*time.Second, func() bool {
		cs := botComments(r.gh, issue.Number)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "could not open a pull request")
	})
	if n := len(r.gh.Requests(githubtest.Match("POST", "/api/v3/repos/acme/api/pulls"))); n != 1 {
		t.Fatalf("%d pull request attempts for a refusal, want 1", n)
	}
	r.checkNoSecrets()
}

// TestFaultWebhookRedeliveries sends one delivery, then the same delivery
// id many times at once (GitHub's "Redeliver", retries after a timeout),
// also across a SIGKILL and restart of the controller: one run, one
// tracking comment, one push.
func TestFaultWebhookRedeliveries(t *testing.T) {
	r := newFaultRig(t)
	r.start()
	c := r.gh.AddComment("acme/api", r.pr.Number, "octo", "/agent go\n#!asb-script\nsleep 1s\nwrite fault.txt once\\n\ncommit survive a SIGKILL\nsay all done")
	payload := r.gh.IssueCommentPayload(c.ID, "created")
	const id = "5f0c1a2e-0000-4000-8000-00000000fa17"
	// send posts the delivery as GitHub signs it, always with the same id,
	// to whichever process is listening now.
	send := func() {
		mac := hmac.New(sha256.New, []byte(faultWebhookSecret))
		mac.Write(payload)
		req, _ := http.NewRequest("POST", "http://"+r.p.addr+"/webhooks/github", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Errorf("delivery: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("delivery answered %d", resp.StatusCode)
		}
	}
	redeliver := func(n int) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				send()
			}()
		}
		wg.Wait()
	}
	redeliver(12)
	r.waitSession("the run going", 60*time.Second, func(w faultSession) bool {
		return len(w.Runs) == 1 && (w.Runs[0].State == "running" || w.Runs[0].State == "done")
	})
	r.kill()
	r.start()
	redeliver(6)
	w := r.waitSession("the run done", 90*time.Second, runsAre(1, "done"))
	r.trackingComments(1, "Done", "all done")
	r.checkPushedOnce("survive a SIGKILL")
	r.checkLaunches(w, 1)
	r.checkAgentRecords(w)
	// A last burst after the end starts nothing either.
	redeliver(6)
	if w, _ := r.session(); len(w.Runs) != 1 {
		t.Fatalf("%d runs after redeliveries", len(w.Runs))
	}
	if n := len(botComments(r.gh, r.pr.Number)); n != 1 {
		t.Fatalf("%d tracking comments after redeliveries", n)
	}
	r.checkNoSecrets()
}

// TestFaultMSB makes msb fail under a run: boots that fail, an image that
// is not there, and a box that crashes under a running agent. No run is
// left stuck without a word: it either fails with msb's reason in its
// state and events, or says in a run.notice what it is retrying, and goes
// on once msb works again.
func TestFaultMSB(t *testing.T) {
	knobs := func(h *msbtest.Host) string { return filepath.Join(h.Home, "fake-knobs.env") }
	t.Run("boot failure is retried and told", func(t *testing.T) {
		t.Parallel()
		r := newLocalRig(t, agentHost(t))
		r.msb.SetKnob(t, "FAKE_MSB_BOOT_FAIL=*")
		r.start()
		r.delegate("#!asb-script\nsay booted")
		r.waitSession("a notice of the failed boot", 60*time.Second, func(w faultSession) bool {
			return runsAre(1, "starting")(w) && hasNotice(w, "failed to start") && hasNotice(w, "retrying")
		})
		if err := os.Remove(knobs(r.msb)); err != nil {
			t.Fatal(err)
		}
		w := r.waitSession("the run done once msb boots again", 90*time.Second, runsAre(1, "done"))
		if n := len(notices(w)); n != 1 {
			t.Fatalf("the same failure was told %d times: %q", n, notices(w))
		}
		r.checkAgentRecords(w)
		r.checkLaunches(w, 1)
		r.checkNoSecrets()
	})
	t.Run("missing image fails with the reason", func(t *testing.T) {
		t.Parallel()
		r := newLocalRig(t, agentHost(t), "MSB_SNAPSHOT=", "MSB_IMAGE=ghcr.io/acme/missing:1")
		r.start()
		r.delegate("#!asb-script\nsay never")
		w := r.waitSession("the run failed", 60*time.Second, runsAre(1, "failed"))
		if !strings.Contains(w.Runs[0].Error, "image not cached: ghcr.io/acme/missing:1") {
			t.Fatalf("run error: %q", w.Runs[0].Error)
		}
		if boxes := r.msb.Boxes(); len(boxes) != 0 {
			t.Fatalf("boxes left behind: %v", boxes)
		}
		r.checkNoSecrets()
	})
	t.Run("box crash mid-run fails the run and the next run gets a box", func(t *testing.T) {
		t.Parallel()
		r := newLocalRig(t, agentHost(t))
		r.start()
		id := r.delegate("#!asb-script\nsay going\nsleep 30s\nsay never")
		r.waitSession("the agent going", 60*time.Second, func(w faultSession) bool {
			return runsAre(1, "running")(w) && agentSaid(w, "going")
		})
		r.msb.SetKnob(t, "FAKE_MSB_CRASH=*")
		w := r.waitSession("the run failed", 60*time.Second, runsAre(1, "failed"))
		if !strings.Contains(w.Runs[0].Error, "stopped before it finished") {
			t.Fatalf("run error: %q", w.Runs[0].Error)
		}
		if err := os.Remove(knobs(r.msb)); err != nil {
			t.Fatal(err)
		}
		if code := r.c.do("POST", "/followup.json", map[string]any{"session": id, "message": "#!asb-script\nsay back"}, nil); code != 200 {
			t.Fatalf("follow-up: %d", code)
		}
		w = r.waitSession("the follow-up done", 60*time.Second, func(w faultSession) bool {
			return len(w.Runs) == 2 && w.Runs[1].State == "done"
		})
		r.checkNoSecrets()
	})
}

// TestFaultHostDown: with one of two sandbox hosts down (its SSH server
// gone) the controller still starts, says it is ready, and runs land on
// the host that answers.
func TestFaultHostDown(t *testing.T) {
	down := sshtest.NewServer(t, sshtest.ServerOptions{})
	addr, keyFile, knownHosts := down.Addr, down.ClientKey.File, down.KnownHostsFile
	down.Close()
	r := newLocalRig(t, agentHost(t), "SANDBOX_HOSTS=ssh://test@"+addr+",local", "SSH_KEY_FILE="+keyFile, "SSH_KNOWN_HOSTS="+knownHosts)
	r.start()
	for i := 0; i < 3; i++ {
		r.delegate("#!asb-script\nsay on the live host")
	}
	var fleet struct {
		Sessions []struct {
			Session struct {
				Box struct {
					Host string `json:"host"`
				} `json:"box"`
			} `json:"session"`
			State string `json:"state"`
		} `json:"sessions"`
	}
	waitUntil(t, "three runs done", 90*time.Second, func() bool {
		r.c.do("GET", "/fleet.json", nil, &fleet)
		n := 0
		for _, s := range fleet.Sessions {
			if s.State == "done" {
				n++
			}
		}
		return n == 3
	})
	for _, s := range fleet.Sessions {
		if s.Session.Box.Host != "local" {
			t.Fatalf("a run went to %q", s.Session.Box.Host)
		}
	}
	if code, body := httpGet(t, "http://"+r.p.addr+"/readyz"); code != 200 {
		t.Fatalf("readyz with one host up: %d %s", code, body)
	}
	r.checkNoSecrets()
}

// TestFaultSIGKILLAfterPush kills the controller after the agent's commits
// were pushed but while the pull request is being opened (GitHub holds
// the request), then restarts it: the branch is not pushed again, one
// draft pull request is opened, the tracking comment links it.
func TestFaultSIGKILLAfterPush(t *testing.T) {
	r := newFaultRig(t)
	issue := r.gh.AddIssue("acme/api", githubtest.IssueSpec{Author: "octo", Title: "Write the fault file"})
	r.gh.Inject(githubtest.Fault{Kind: githubtest.FaultHang, Method: "POST", Path: "/api/v3/repos/acme/api/pulls", Times: -1})
	r.start()
	r.commentOn(issue.Number, "/agent go\n#!asb-script\nwrite fault.txt pushed\\n\ncommit pushed before the kill\nsay all done")
	waitUntil(t, "the pull request creation hanging", 60*time.Second, func() bool {
		return len(r.gh.Requests(func(q githubtest.Request) bool {
			return q.Fault == githubtest.FaultHang && strings.HasSuffix(q.Path, "/pulls")
		})) > 0
	})
	pushes := func() int {
		n := 0
		for _, q := range r.gh.Requests(githubtest.Match("POST", "/acme/api.git/git-receive-pack")) {
			if q.Status == 200 {
				n++
			}
		}
		return n
	}
	if pushes() != 1 {
		t.Fatalf("%d pushes before the kill, want 1", pushes())
	}
	r.kill()
	r.gh.ClearFaults()
	r.start()
	w := r.waitSession("the run done", 90*time.Second, runsAre(1, "done"))
	var pulls []githubtest.PullRequest
	for _, p := range r.gh.PullRequests("acme/api") {
		if strings.HasPrefix(p.Head, "agent/") {
			pulls = append(pulls, p)
		}
	}
	if len(pulls) != 1 {
		t.Fatalf("agent pull requests: %+v", pulls)
	}
	if n := pushes(); n != 1 {
		t.Fatalf("the branch was pushed %d times", n)
	}
	waitUntil(t, "the final report", 30*time.Second, func() bool {
		cs := botComments(r.gh, issue.Number)
		return len(cs) == 1 && strings.Contains(cs[0].Body, "Done") && strings.Contains(cs[0].Body, pulls[0].HTMLURL)
	})
	if !hasNotice(w, "controller restarted") {
		t.Fatalf("no restart notice: %q", notices(w))
	}
	r.checkAgentRecords(w)
	r.checkLaunches(w, 1)
	r.checkNoSecrets()
}
