package web

import (
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/httprate"

	"github.com/asb-dev/asb/app"
)

// Defaults of the JSON routes' Options.
const (
	DefaultWaitTimeout        = 50 * time.Second
	DefaultMutationsPerMinute = 60
	DefaultMaxBodyBytes       = 1 << 20
	DefaultMaxDownloadBytes   = 50 << 20
	DefaultHeartbeat          = 15 * time.Second
)

// api serves the JSON routes and the live stream. Every handler turns its
// input into one call on the Service and renders the result.
type api struct {
	svc *app.Service
	log *slog.Logger
	o   Options
}

func (o *Options) apiDefaults() {
	if o.Authenticator == nil {
		// The operator token (none when empty) and personal API keys.
		o.Authenticator = NewBearerAuthenticator(o.Service, o.OperatorToken)
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	if o.MutationsPerMinute <= 0 {
		o.MutationsPerMinute = DefaultMutationsPerMinute
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxDownloadBytes <= 0 {
		o.MaxDownloadBytes = DefaultMaxDownloadBytes
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
}

// mount registers the authenticated routes on r.
func (a *api) mount(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(authenticate(a.o.Authenticator, a.log))
		r.Get("/fleet.json", a.fleet)
		r.Get("/monitor.json", a.fleet)
		r.Get("/watch.json", a.watch)
		// No middleware.Timeout here: the stream stays open by design.
		r.Get("/watch.sse", a.watchSSE)
		r.Get("/files.json", a.files)
		r.Get("/files/download", a.download)
		r.Get("/bundle", a.bundle)
		r.Group(func(r chi.Router) {
			// Keyed by the authenticated caller, so one caller cannot use
			// up another's budget and no client IP guesswork is involved.
			r.Use(httprate.LimitBy(a.o.MutationsPerMinute, time.Minute, actorKey,
				httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
					writeError(w, app.Errorf(app.ERATELIMIT, "too many requests: at most %d changes a minute; retry after the time in Retry-After", a.o.MutationsPerMinute))
				}),
				httprate.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
					a.fail(w, r, err)
				})))
			r.Post("/delegate.json", a.delegate)
			r.Post("/followup.json", a.followUp)
			r.Post("/resume.json", a.resume)
			r.Post("/ask.json", a.ask)
			r.Post("/cancel.json", a.cancel)
			r.Post("/teardown.json", a.teardown)
			r.Post("/pin.json", a.pin)
			r.Post("/workspaces", a.stageWorkspace)
			a.mountGitHubAccounts(r)
			a.mountMCPServers(r)
		})
	})
}

// apiOrigin records that a run came from this surface, and who asked.
func apiOrigin(r *http.Request) app.Origin {
	a, _ := app.ActorFrom(r.Context())
	return app.Origin{Kind: app.OriginAPI, Login: a.Name}
}

func actorKey(r *http.Request) (string, error) {
	a, ok := app.ActorFrom(r.Context())
	if !ok {
		return "", app.Errorf(app.EUNAUTHORIZED, "no caller identity")
	}
	return "actor:" + string(a.Account), nil
}

// fail answers with the error's status and caller-safe message. Internal
// errors are logged with their cause; the caller sees only "Internal error.".
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errUnsupportedMediaType) {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": err.Error()})
		return
	}
	code := app.ErrorCode(err)
	if StatusCode(code) >= 500 {
		a.log.Error("request failed", "path", r.URL.Path, "code", code, "err", err,
			"request_id", middleware.GetReqID(r.Context()))
	}
	writeError(w, err)
}

// sessionID validates the session id of a request before anything else
// looks at it.
func sessionID(s string) (app.SessionID, error) {
	if s == "" {
		return "", app.Errorf(app.EINVALID, "session is required")
	}
	return app.ParseSessionID(s)
}

func (a *api) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := decodeJSON(w, r, a.o.MaxBodyBytes, v); err != nil {
		a.fail(w, r, err)
		return false
	}
	return true
}

// sessionJSON is a SessionView with its effective state spelled out.
type sessionJSON struct {
	app.SessionView
	State string `json:"state"`
}

func viewJSON(v app.SessionView) sessionJSON { return sessionJSON{SessionView: v, State: v.State()} }

// runResponse answers the routes that queue a run: delegate, follow-up, resume.
type runResponse struct {
	Session  app.Session `json:"session"`
	Run      app.Run     `json:"run"`
	Position int         `json:"position"`
	// Continued is true when the run joined an existing conversation.
	Continued bool `json:"continued"`
	// Outcome is "answered" or "queued" (resume only).
	Outcome app.ResumeOutcome `json:"outcome,omitempty"`
	// State is the session's effective state: its current run's state.
	State string `json:"state"`
	// Question is the session's pending question, when it is waiting.
	Question string `json:"question,omitempty"`
	// Waited says the caller asked to wait; Reached says a boundary
	// (a question, or the end with nothing queued) came before the timeout.
	Waited  bool `json:"waited"`
	Reached bool `json:"reached"`
}

// finishRun renders a queued run, first waiting for a boundary if asked.
func (a *api) finishRun(w http.ResponseWriter, r *http.Request, d app.Delegation, outcome app.ResumeOutcome, wait bool) {
	out := runResponse{Session: d.Session, Run: d.Run, Position: d.Position, Continued: d.Continued,
		Outcome: outcome, State: string(d.Run.State)}
	if wait {
		res, err := a.svc.Wait(r.Context(), d.Session.ID, a.o.WaitTimeout)
		if err != nil {
			if r.Context().Err() != nil {
				return // the caller left; the run goes on
			}
			a.fail(w, r, err)
			return
		}
		out.Waited, out.Reached = true, res.Reached
		a.fromView(&out, res.View)
	} else if v, err := a.svc.Session(r.Context(), d.Session.ID); err == nil {
		a.fromView(&out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) fromView(out *runResponse, v app.SessionView) {
	out.Session = v.Session
	out.State = v.State()
	out.Question = v.Question
	for _, rv := range v.Runs {
		if rv.ID == out.Run.ID {
			out.Run, out.Position = rv.Run, rv.Position
		}
	}
}

type sourceRequest struct {
	Repo string `json:"repo"`
	Ref  string `json:"ref,omitempty"`
	Dir  string `json:"dir,omitempty"`
}

type delegateRequest struct {
	Task string `json:"task"`
	// Repos lists several repositories, each at /workspace/<dir>.
	Repos []sourceRequest `json:"repos"`
	// Repo and Ref are the one-repository shorthand.
	Repo         string   `json:"repo"`
	Ref          string   `json:"ref"`
	AllowDomains []string `json:"allowDomains"`
	Wait         bool     `json:"wait"`
}

func (a *api) delegate(w http.ResponseWriter, r *http.Request) {
	var req delegateRequest
	if !a.decode(w, r, &req) {
		return
	}
	var sources []app.Source
	switch {
	case req.Repo != "" && len(req.Repos) > 0:
		a.fail(w, r, app.Errorf(app.EINVALID, "give either repo or repos, not both"))
		return
	case req.Repo != "":
		sources = []app.Source{{Repo: req.Repo, Ref: req.Ref}}
	case req.Ref != "":
		a.fail(w, r, app.Errorf(app.EINVALID, "ref needs repo"))
		return
	}
	for _, s := range req.Repos {
		// LocalPath stays empty: a network request never names a path on the controller.
		sources = append(sources, app.Source{Repo: s.Repo, Ref: s.Ref, Dir: s.Dir})
	}
	d, err := a.svc.Delegate(r.Context(), app.DelegateRequest{
		Task: req.Task, Sources: sources, AllowDomains: req.AllowDomains, Origin: apiOrigin(r),
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.finishRun(w, r, d, "", req.Wait)
}

type messageRequest struct {
	sessionRequest
	Message string `json:"message"`
	Wait    bool   `json:"wait"`
}

func (a *api) followUp(w http.ResponseWriter, r *http.Request) {
	var req messageRequest
	id, ok := a.decodeSession(w, r, &req)
	if !ok {
		return
	}
	d, err := a.svc.FollowUp(r.Context(), id, req.Message, apiOrigin(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.finishRun(w, r, d, "", req.Wait)
}

type resumeRequest struct {
	sessionRequest
	Message string `json:"message"`
	// Secrets reach the environment of the one agent step that the answer
	// starts. They are never stored, echoed or logged.
	Secrets map[string]string `json:"secrets"`
	Wait    bool              `json:"wait"`
}

func (a *api) resume(w http.ResponseWriter, r *http.Request) {
	var req resumeRequest
	id, ok := a.decodeSession(w, r, &req)
	if !ok {
		return
	}
	outcome, d, err := a.svc.Resume(r.Context(), id, req.Message, req.Secrets, apiOrigin(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.finishRun(w, r, d, outcome, req.Wait)
}

type askRequest struct {
	sessionRequest
	Question  string `json:"question"`
	NewThread bool   `json:"newThread"`
}

type askResponse struct {
	Session  app.SessionID `json:"session"`
	Answer   string        `json:"answer"`
	TimedOut bool          `json:"timed_out"`
}

func (a *api) ask(w http.ResponseWriter, r *http.Request) {
	var req askRequest
	id, ok := a.decodeSession(w, r, &req)
	if !ok {
		return
	}
	ans, err := a.svc.Ask(r.Context(), id, req.Question, req.NewThread)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, askResponse{Session: id, Answer: ans.Answer, TimedOut: ans.TimedOut})
}

// sessionRequest is the "session" field every session-scoped body has;
// the other request types embed it.
type sessionRequest struct {
	Session string `json:"session"`
}

func (s *sessionRequest) sessionField() string { return s.Session }

// decodeSession decodes a body that names a session and validates the id;
// false means the error was written.
func (a *api) decodeSession(w http.ResponseWriter, r *http.Request, req interface{ sessionField() string }) (app.SessionID, bool) {
	if !a.decode(w, r, req) {
		return "", false
	}
	id, err := sessionID(req.sessionField())
	if err != nil {
		a.fail(w, r, err)
		return "", false
	}
	return id, true
}

// sessionOf decodes a body that holds only a session.
func (a *api) sessionOf(w http.ResponseWriter, r *http.Request) (app.SessionID, bool) {
	return a.decodeSession(w, r, &sessionRequest{})
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := a.sessionOf(w, r)
	if !ok {
		return
	}
	runs, err := a.svc.Cancel(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "cancelled": runs})
}

func (a *api) teardown(w http.ResponseWriter, r *http.Request) {
	id, ok := a.sessionOf(w, r)
	if !ok {
		return
	}
	sess, err := a.svc.Teardown(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": sess})
}

type pinRequest struct {
	sessionRequest
	// Pinned is a pointer so that a missing value is an error, not "unpin".
	Pinned *bool `json:"pinned"`
}

func (a *api) pin(w http.ResponseWriter, r *http.Request) {
	var req pinRequest
	id, ok := a.decodeSession(w, r, &req)
	if !ok {
		return
	}
	if req.Pinned == nil {
		a.fail(w, r, app.Errorf(app.EINVALID, "pinned is required (true or false)"))
		return
	}
	sess, err := a.svc.Pin(r.Context(), id, *req.Pinned)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": sess})
}

// intParam reads an optional integer query parameter within [min, max].
func intParam(r *http.Request, name string, def, min, max int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min || n > max {
		return 0, app.Errorf(app.EINVALID, "%s must be a whole number from %d to %d", name, min, max)
	}
	return n, nil
}

func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, app.Errorf(app.EINVALID, "%s must be true or false", name)
	}
	return b, nil
}

func (a *api) fleet(w http.ResponseWriter, r *http.Request) {
	all, err := boolParam(r, "all")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	limit, err := intParam(r, "limit", 200, 1, 1000)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	views, err := a.svc.Fleet(r.Context(), app.FleetFilter{IncludeClosed: all, Limit: int(limit)})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]sessionJSON, 0, len(views))
	for _, v := range views {
		out = append(out, viewJSON(v))
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

type watchResponse struct {
	sessionJSON
	Events []app.Event `json:"events"`
	// LastEventID is where /watch.sse (as Last-Event-ID or ?after=) or the
	// next /watch.json?after= picks up.
	LastEventID int64 `json:"last_event_id"`
}

// eventPage is the Store's page size when walking a session's events.
const eventPage = 1000

func (a *api) watch(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r.URL.Query().Get("session"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	n, err := intParam(r, "events", 100, 0, eventPage)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	after, err := intParam(r, "after", -1, 0, 1<<62)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v, err := a.svc.Session(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var evs []app.Event
	if after >= 0 {
		// Polling: the events after the caller's cursor, oldest first.
		if n > 0 {
			evs, err = a.svc.Events(r.Context(), id, after, int(n))
		}
	} else {
		evs, err = a.tail(r, id, int(n))
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := watchResponse{sessionJSON: viewJSON(v), Events: evs, LastEventID: max(after, 0)}
	if out.Events == nil {
		out.Events = []app.Event{}
	}
	if len(evs) > 0 {
		out.LastEventID = evs[len(evs)-1].ID
	}
	writeJSON(w, http.StatusOK, out)
}

// tail returns a session's last n events. The Service lists events only
// forwards, so this walks the session's pages and keeps the last n.
func (a *api) tail(r *http.Request, id app.SessionID, n int) ([]app.Event, error) {
	if n == 0 {
		return nil, nil
	}
	var keep []app.Event
	var after int64
	for {
		page, err := a.svc.Events(r.Context(), id, after, eventPage)
		if err != nil {
			return nil, err
		}
		keep = append(keep, page...)
		if len(keep) > n {
			keep = append(keep[:0:0], keep[len(keep)-n:]...)
		}
		if len(page) < eventPage {
			return keep, nil
		}
		after = page[len(page)-1].ID
	}
}

type filesResponse struct {
	Session app.SessionID  `json:"session"`
	Path    string         `json:"path"`
	Entries []app.FileInfo `json:"entries"`
}

// sessionFile reads the session and workspace path of the file routes.
func sessionFile(r *http.Request) (app.SessionID, string, error) {
	q := r.URL.Query()
	id, err := sessionID(q.Get("session"))
	if err != nil {
		return "", "", err
	}
	clean, err := app.WorkspacePath(q.Get("path"))
	return id, clean, err
}

func (a *api) files(w http.ResponseWriter, r *http.Request) {
	id, clean, err := sessionFile(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	entries, err := a.svc.Files(r.Context(), id, clean)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if entries == nil {
		entries = []app.FileInfo{}
	}
	writeJSON(w, http.StatusOK, filesResponse{Session: id, Path: clean, Entries: entries})
}

// downloadWriter sends the attachment headers with the first byte, so an
// error before any content can still be answered as JSON.
type downloadWriter struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (d *downloadWriter) start() {
	d.started = true
	h := d.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	disp := mime.FormatMediaType("attachment", map[string]string{"filename": d.name})
	if disp == "" {
		disp = "attachment"
	}
	h.Set("Content-Disposition", disp)
	h.Set("X-Content-Type-Options", "nosniff")
	// Should a browser render it anyway, it runs with no script and no origin.
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "no-store")
	d.w.WriteHeader(http.StatusOK)
}

func (d *downloadWriter) Write(p []byte) (int, error) {
	if !d.started {
		d.start()
	}
	return d.w.Write(p)
}

func (a *api) download(w http.ResponseWriter, r *http.Request) {
	id, clean, err := sessionFile(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	dw := &downloadWriter{w: w, name: path.Base(clean)}
	err = a.svc.ReadFile(r.Context(), id, clean, a.o.MaxDownloadBytes, dw)
	switch {
	case err == nil && !dw.started:
		dw.start() // an empty file
	case err != nil && !dw.started:
		a.fail(w, r, err)
	case err != nil:
		// Part of the file is out already: cut the connection so the client
		// sees a failed download rather than a short file it takes as whole.
		if r.Context().Err() == nil {
			a.log.Warn("download failed midway", "path", r.URL.Path, "err", err, "request_id", middleware.GetReqID(r.Context()))
		}
		panic(http.ErrAbortHandler)
	}
}
