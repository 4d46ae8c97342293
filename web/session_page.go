package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/asb-dev/asb/app"
)

// threadEvents is how many of a session's latest events the page shows;
// older ones stay in /watch.json.
const threadEvents = 400

type runBlock struct {
	app.RunView
	Heading string
	Items   []eventItem
	PR      string
	Active  bool
}

type askItem struct {
	Question string
	Answer   string
	By       string
	TimedOut bool
	At       time.Time
}

// sessionForm carries what a rejected form submitted, and why, so the
// page shows the message next to the field. Secrets are never put back.
type sessionForm struct {
	Answer      string
	AnswerErr   string
	SecretsErr  string
	FollowUp    string
	FollowUpErr string
	Ask         string
	AskErr      string
}

type sessionData struct {
	ID          string
	State       string
	Closed      bool
	Pinned      bool
	Title       string
	Repos       []link
	Origin      link
	Host        string
	Box         string
	Uptime      string
	Question    string
	QuestionKey string
	Runs        []runBlock
	Asks        []askItem
	LastEventID int64
	Truncated   bool
	Queued      int
	Notice      string
	Form        sessionForm
}

func (d *dash) pathSession(r *http.Request) (app.SessionID, error) {
	return app.ParseSessionID(chi.URLParam(r, "id"))
}

// pathSessionView loads the session the path names. When it cannot, it
// has answered the request and ok is false.
func (d *dash) pathSessionView(w http.ResponseWriter, r *http.Request) (id app.SessionID, v app.SessionView, ok bool) {
	id, err := d.pathSession(r)
	if err == nil {
		v, err = d.svc.Session(r.Context(), id)
	}
	if err != nil {
		d.fail(w, r, err)
		return id, v, false
	}
	return id, v, true
}

func (d *dash) sessionPage(w http.ResponseWriter, r *http.Request) {
	d.renderSession(w, r, http.StatusOK, sessionForm{}, noticeOf(r.URL.Query()))
}

// noticeOf turns the redirect after a successful form into one sentence.
func noticeOf(q url.Values) string {
	switch q.Get("done") {
	case "answered":
		return "Answer sent; the agent is working again."
	case "queued":
		n, _ := strconv.Atoi(q.Get("position"))
		if n <= 0 {
			return "Follow-up queued; it starts now."
		}
		return "Follow-up queued at position " + strconv.Itoa(n) + ": it starts when the " + plural(n, "run", "runs") + " ahead of it finish."
	case "pinned":
		return "Pinned: the box stays until you unpin or tear it down."
	case "unpinned":
		return "Unpinned."
	case "started":
		return "Run started."
	case "torndown":
		return "Torn down: the box is gone; the record and events stay."
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (d *dash) renderSession(w http.ResponseWriter, r *http.Request, code int, form sessionForm, notice string) {
	id, v, ok := d.pathSessionView(w, r)
	if !ok {
		return
	}
	events, err := d.api.tail(r, id, threadEvents+1)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	sd := sessionData{
		ID: string(id), State: v.State(), Closed: v.Session.State == app.SessionClosed, Pinned: v.Session.Pinned,
		Title: v.Session.Title, Origin: originLink(v.Session.Origin), Host: v.Session.Box.Host, Box: v.Session.Box.Name,
		Question: v.Question, Queued: v.Queued, Notice: notice, Form: form,
	}
	if v.Question != "" && v.Current != nil {
		sd.QuestionKey = string(v.Current.ID) + "/" + strconv.Itoa(v.Current.Turn)
	}
	if !sd.Closed {
		sd.Uptime = humanDuration(time.Since(v.Session.CreatedAt))
	}
	for _, repo := range sessionRepos(v.Session) {
		sd.Repos = append(sd.Repos, link{Label: repo, URL: "https://github.com/" + repo})
	}
	if len(events) > threadEvents {
		events, sd.Truncated = events[1:], true
	}
	byRun := map[app.RunID][]eventItem{}
	var loose []eventItem
	for _, e := range events {
		sd.LastEventID = e.ID
		if e.Type == app.EventAsk {
			var a app.AskData
			if e.Decode(&a) == nil {
				sd.Asks = append(sd.Asks, askItem{Question: a.Question, Answer: a.Answer, By: a.AskedBy, TimedOut: a.TimedOut, At: e.At})
			}
			continue
		}
		for _, it := range eventItems(e) {
			if e.RunID == "" {
				loose = append(loose, it)
			} else {
				byRun[e.RunID] = append(byRun[e.RunID], it)
			}
		}
	}
	for i, rv := range v.Runs {
		b := runBlock{RunView: rv, Items: byRun[rv.ID], PR: rv.Result.PullRequestURL, Active: rv.State.Active()}
		if !strings.HasPrefix(b.PR, "https://") {
			b.PR = ""
		}
		b.Heading = "Task"
		if rv.Kind == app.RunFollowUp {
			b.Heading = "Follow-up " + strconv.Itoa(i)
		}
		sd.Runs = append(sd.Runs, b)
	}
	if len(loose) > 0 {
		// Session-level events (box assigned, pinned, closed) form their own block at the end.
		sd.Runs = append(sd.Runs, runBlock{Heading: "Session", Items: loose})
	}
	p := d.newPage(r, clipText(v.Session.Title, 80), "session")
	p.Data = sd
	d.render(w, r, code, "session", p)
}

// formError renders the session page again with a message next to the
// field that caused it, keeping the status of the error.
func (d *dash) formError(w http.ResponseWriter, r *http.Request, err error, form sessionForm, set func(*sessionForm, string)) {
	code := StatusCode(app.ErrorCode(err))
	if code >= 500 || code == http.StatusNotFound {
		d.fail(w, r, err)
		return
	}
	set(&form, app.ErrorMessage(err))
	d.renderSession(w, r, code, form, "")
}

func (d *dash) answerPost(w http.ResponseWriter, r *http.Request) {
	id, err := d.pathSession(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	answer := r.PostFormValue("answer")
	form := sessionForm{Answer: answer}
	secrets, err := parseSecrets(r.PostFormValue("secrets"))
	if err != nil {
		d.formError(w, r, err, form, func(f *sessionForm, m string) { f.SecretsErr = m })
		return
	}
	if _, err := d.svc.AnswerFrom(r.Context(), id, answer, secrets, dashOrigin(r)); err != nil {
		field := func(f *sessionForm, m string) { f.AnswerErr = m }
		if strings.HasPrefix(app.ErrorMessage(err), "secret") || strings.HasPrefix(app.ErrorMessage(err), "at most") {
			field = func(f *sessionForm, m string) { f.SecretsErr = m }
		}
		d.formError(w, r, err, form, field)
		return
	}
	http.Redirect(w, r, "/s/"+string(id)+"?done=answered", http.StatusSeeOther)
}

// parseSecrets reads KEY=VALUE lines. Errors name the line, never its
// content: it may be a secret pasted in the wrong place.
func parseSecrets(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, app.Errorf(app.EINVALID, "secrets line %d is not KEY=VALUE", i+1)
		}
		if err := app.CheckSecretName(k); err != nil {
			return nil, app.Errorf(app.EINVALID, "secrets line %d: the name must be an environment variable name (A-Z, 0-9, _), not a reserved one like PATH or LD_*", i+1)
		}
		if _, dup := out[k]; dup {
			return nil, app.Errorf(app.EINVALID, "secret %s is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

func (d *dash) followUpPost(w http.ResponseWriter, r *http.Request) {
	id, err := d.pathSession(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	msg := r.PostFormValue("message")
	dl, err := d.svc.FollowUp(r.Context(), id, msg, dashOrigin(r))
	if err != nil {
		d.formError(w, r, err, sessionForm{FollowUp: msg}, func(f *sessionForm, m string) { f.FollowUpErr = m })
		return
	}
	http.Redirect(w, r, "/s/"+string(id)+"?done=queued&position="+strconv.Itoa(dl.Position), http.StatusSeeOther)
}

func (d *dash) askPost(w http.ResponseWriter, r *http.Request) {
	id, err := d.pathSession(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	q := r.PostFormValue("question")
	if _, err := d.svc.Ask(r.Context(), id, q, r.PostFormValue("new_thread") == "1"); err != nil {
		d.formError(w, r, err, sessionForm{Ask: q}, func(f *sessionForm, m string) { f.AskErr = m })
		return
	}
	http.Redirect(w, r, "/s/"+string(id)+"#ask", http.StatusSeeOther)
}

func (d *dash) pinPost(w http.ResponseWriter, r *http.Request) {
	id, err := d.pathSession(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	pinned, err := strconv.ParseBool(r.PostFormValue("pinned"))
	if err != nil {
		d.fail(w, r, app.Errorf(app.EINVALID, "pinned must be true or false"))
		return
	}
	if _, err := d.svc.Pin(r.Context(), id, pinned); err != nil {
		d.fail(w, r, err)
		return
	}
	done := "unpinned"
	if pinned {
		done = "pinned"
	}
	http.Redirect(w, r, "/s/"+string(id)+"?done="+done, http.StatusSeeOther)
}

type teardownData struct {
	ID    string
	Title string
	State string
	Error string
}

// teardownPage is the confirmation step: nothing is removed until its
// form is posted with confirm=yes.
func (d *dash) teardownPage(w http.ResponseWriter, r *http.Request) {
	d.renderTeardown(w, r, http.StatusOK, "")
}

func (d *dash) renderTeardown(w http.ResponseWriter, r *http.Request, code int, msg string) {
	id, v, ok := d.pathSessionView(w, r)
	if !ok {
		return
	}
	p := d.newPage(r, "Tear down", "teardown")
	p.Data = teardownData{ID: string(id), Title: v.Session.Title, State: v.State(), Error: msg}
	d.render(w, r, code, "teardown", p)
}

func (d *dash) teardownPost(w http.ResponseWriter, r *http.Request) {
	id, err := d.pathSession(r)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		d.renderTeardown(w, r, http.StatusBadRequest, "Tick the box to confirm: the box and its files will be removed.")
		return
	}
	if _, err := d.svc.Teardown(r.Context(), id); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/s/"+string(id)+"?done=torndown", http.StatusSeeOther)
}
