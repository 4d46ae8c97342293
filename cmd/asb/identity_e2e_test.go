package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asb-dev/asb/github/githubtest"
	"github.com/asb-dev/asb/sandbox/inbox"
	"github.com/asb-dev/asb/sandbox/msbtest"
)

// TestEventsFeedWithoutAppEndToEnd: no GitHub App at all. A person stores
// their token through POST /github/accounts.json; their `/agent` comment
// on a pull request is found in their events feed; the run clones with
// their token, pushes the agent's commit to the PR branch authored as
// them, and the tracking comment (posted with their token) becomes the
// final report. Their token is in no log line and no file in clear.
func TestEventsFeedWithoutAppEndToEnd(t *testing.T) {
	srv := githubtest.New(t, githubtest.Options{PollInterval: 1})
	srv.AddUser("octo")
	srv.SetProfile("octo", "Octo Cat", "")
	srv.AddRepo(githubtest.RepoSpec{Owner: "octo", Name: "api", Private: true, Files: map[string]string{"README.md": "# api\n"}})
	srv.Commit("octo/api", "feature", "start the feature", map[string]string{"feature.go": "package api\n"})
	pr := srv.AddPull("octo/api", githubtest.PullSpec{Author: "octo", Title: "Add the feature", Head: "feature", Base: "main"})
	before := srv.Branch("octo/api", "feature")
	token := srv.AddToken("octo")

	st, stop := serveWithGitHub(t, srv)
	defer stop()
	dataDir, logs, addr := st.dataDir, st.logs, st.addr

	body, _ := json.Marshal(map[string]string{"token": token, "repo": "octo/api"})
	req, _ := http.NewRequest("POST", "http://"+addr+"/github/accounts.json", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var stored struct {
		Account struct {
			Login string `json:"login"`
		} `json:"account"`
		CanPush bool `json:"can_push"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(answer, &stored) != nil || stored.Account.Login != "octo" || !stored.CanPush ||
		strings.Contains(string(answer), token) {
		t.Fatalf("store the token: %d %s", resp.StatusCode, answer)
	}

	c := srv.AddComment("octo/api", pr.Number, "octo", agentComment)
	waitUntil(t, "the agent's commit on the PR branch", 120*time.Second, func() bool {
		return srv.Branch("octo/api", "feature") != before
	})
	log := srv.Log("octo/api", "feature")
	if log[0].Subject != "add a test for the feature" || log[0].AuthorName != "Octo Cat" ||
		!strings.Contains(log[0].AuthorEmail, "+octo@users.noreply.") || log[1].SHA != before {
		t.Fatalf("PR branch head: %+v", log[0])
	}
	pushes := srv.Pushes("octo/api")
	if len(pushes) == 0 || pushes[len(pushes)-1].Login != "octo" || pushes[len(pushes)-1].Auth != githubtest.AuthPersonal {
		t.Fatalf("pushes = %+v", pushes)
	}
	waitUntil(t, "the final report, posted as octo", 60*time.Second, func() bool {
		for _, cm := range srv.Comments("octo/api", pr.Number) {
			if cm.ID != c.ID && cm.User == "octo" && strings.Contains(cm.Body, "asb:tracking") && strings.Contains(cm.Body, "Done") {
				return true
			}
		}
		return false
	})
	stop()
	if strings.Contains(logs.String(), token) {
		t.Fatal("the token reached the log")
	}
	filepath.Walk(dataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("the token is stored in clear in %s", p)
			}
		}
		return nil
	})
}

// ghStack is asb serve running on the fake msb host (whose boxes have the
// scripted agent) against a fake GitHub.
type ghStack struct {
	fake    *msbtest.Host
	dataDir string
	logs    *syncBuffer
	addr    string
}

// serveWithGitHub starts asb serve against srv; the caller stops it.
func serveWithGitHub(t *testing.T, srv *githubtest.Server) (ghStack, func() int) {
	t.Helper()
	st := ghStack{fake: agentHost(t), dataDir: filepath.Join(t.TempDir(), "data")}
	env, _, logs := testEnv(t, st.dataDir,
		"SANDBOX_HOSTS=local", "MSB_PATH="+st.fake.Path, "MSB_SNAPSHOT=agent-base", "MSB_MEMORY=256M", "POOL_SIZE=0",
		"AGENT_COMMAND="+inbox.ToolDir+"/bin/claude", "MCP_HTTP_TOKEN="+e2eToken, "POLL_INTERVAL=10s",
		"GITHUB_API_URL="+srv.APIURL(), "GITHUB_WEB_URL="+srv.URL+"/")
	env.hookBinary = buildHook(t)
	st.logs = logs
	addr, stop := startServe(t, env)
	st.addr = addr
	return st, stop
}
