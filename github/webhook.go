package github

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/asb-dev/asb/app"
)

// DefaultBodyLimit bounds a webhook body (SPEC §4.1). GitHub caps payloads
// at 25 MB, but the events asb subscribes to are a few tens of KiB; a
// bigger body is refused before its signature is even computed.
const DefaultBodyLimit = 1 << 20

// DefaultEvents are the webhook events asb stores for processing: the
// manifest's default_events plus the installation events every App
// receives. Anything else is acknowledged and dropped.
var DefaultEvents = []string{
	"issue_comment", "issues", "pull_request", "pull_request_review_comment",
	"installation", "installation_repositories",
}

// Delivery is one accepted webhook delivery, as stored.
type Delivery struct {
	// ID is the X-GitHub-Delivery GUID: the idempotency key.
	ID string
	// Event is the X-GitHub-Event name, Action the payload's "action".
	Event, Action string
	// Payload is the JSON payload exactly as GitHub signed it (for a
	// form-encoded delivery, the payload parameter).
	Payload    []byte
	ReceivedAt time.Time
}

// DeliveryStore is the durable record of deliveries; app/sqlite.Store
// implements it. The stored delivery, not the in-memory hand-off to the
// EventSink, is the source of truth: a delivery recorded but never
// marked processed is picked up again after a restart.
//
// The replay side (app/sqlite's PendingDeliveries) returns that
// package's own row type, which this package may not import; the replay
// loop therefore adapts it where the concrete store is known (cmd/asb).
type DeliveryStore interface {
	// RecordDelivery stores a delivery once and reports whether it was
	// new. A delivery id seen before stores nothing and returns false.
	RecordDelivery(ctx context.Context, id, event, action string, payload []byte, at time.Time) (bool, error)
	// MarkDeliveryProcessed records that a delivery was handled (errText
	// empty) or failed for good.
	MarkDeliveryProcessed(ctx context.Context, id string, at time.Time, errText string) error
}

// EventSink receives each delivery the first time it is stored. Accept
// must not block: it hands the delivery to asynchronous processing (a
// queue, a wake-up channel) and returns. It gets no way to fail the
// request because the delivery is already durable; a sink that drops it
// (full queue, shutting down) loses nothing, since the replay of pending
// deliveries finds it. ctx carries the request's values but is never
// cancelled by the request ending.
type EventSink interface {
	Accept(ctx context.Context, d Delivery)
}

// SinkFunc adapts a function to EventSink.
type SinkFunc func(ctx context.Context, d Delivery)

// Accept calls f.
func (f SinkFunc) Accept(ctx context.Context, d Delivery) { f(ctx, d) }

// WebhookConfig configures NewWebhook.
type WebhookConfig struct {
	// Secret is the webhook secret shared with GitHub. Required: with an
	// empty secret, anyone could forge deliveries.
	Secret     []byte
	Deliveries DeliveryStore
	Sink       EventSink
	// Logger defaults to discarding.
	Logger *slog.Logger
	// BodyLimit defaults to DefaultBodyLimit.
	BodyLimit int64
	// Events lists the X-GitHub-Event names to store; DefaultEvents when
	// nil.
	Events []string
	// Now defaults to time.Now.
	Now func() time.Time
}

// Webhook is the http.Handler for POST /webhooks/github.
//
// Answers, in the order the checks run:
//
//	405 not a POST
//	413 body over BodyLimit                            nothing stored
//	401 X-Hub-Signature-256 missing or wrong           nothing stored
//	    (a SHA-1 X-Hub-Signature alone is refused)
//	400 X-GitHub-Event or X-GitHub-Delivery missing or malformed
//	415 a content type other than JSON or GitHub's form encoding
//	400 payload is not a JSON object, or not valid for its event
//	200 "pong" for ping                                not stored
//	202 "ignored" for events asb does not process      not stored (see below)
//	500 the store failed                               GitHub shows it failed; redeliver
//	200 "duplicate" for a delivery id seen before      sink not called again
//	202 "accepted" after storing and handing to the sink
//
// Events outside Events (including ones go-github does not know) are
// acknowledged but not stored: they would never be processed, and storing
// them would only grow the pending list a replay has to skip. Their
// JSON must still be valid, so garbage never gets a 2xx.
type Webhook struct {
	secret []byte
	store  DeliveryStore
	sink   EventSink
	log    *slog.Logger
	limit  int64
	events map[string]bool
	now    func() time.Time
}

// NewWebhook builds the receiver. It refuses an empty secret: go-github's
// own ValidatePayload skips verification when both the secret and the
// signature are empty, and a receiver without a secret accepts forgeries.
func NewWebhook(cfg WebhookConfig) (*Webhook, error) {
	if len(cfg.Secret) == 0 {
		return nil, app.Errorf(app.EINVALID, "the GitHub webhook secret is empty; set GITHUB_WEBHOOK_SECRET (or run the manifest flow at /setup)")
	}
	if cfg.Deliveries == nil || cfg.Sink == nil {
		return nil, app.Errorf(app.EINVALID, "webhook: a delivery store and a sink are required")
	}
	w := &Webhook{
		secret: bytes.Clone(cfg.Secret),
		store:  cfg.Deliveries,
		sink:   cfg.Sink,
		log:    cfg.Logger,
		limit:  cfg.BodyLimit,
		now:    cfg.Now,
		events: map[string]bool{},
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.limit <= 0 {
		w.limit = DefaultBodyLimit
	}
	if w.now == nil {
		w.now = time.Now
	}
	events := cfg.Events
	if events == nil {
		events = DefaultEvents
	}
	for _, e := range events {
		w.events[e] = true
	}
	return w, nil
}

func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	if r.ContentLength > h.limit {
		reply(w, http.StatusRequestEntityTooLarge, "body too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		reply(w, http.StatusBadRequest, "could not read body")
		return
	}
	// The signature is checked before anything in the request is
	// believed, so an unauthenticated caller learns nothing but 401.
	if !h.validSignature(r.Header.Get(gh.SHA256SignatureHeader), body) {
		h.log.Warn("webhook: bad signature", "delivery", clipLog(r.Header.Get(gh.DeliveryIDHeader)),
			"sha1_only", r.Header.Get(gh.SHA256SignatureHeader) == "" && r.Header.Get(gh.SHA1SignatureHeader) != "")
		reply(w, http.StatusUnauthorized, "bad signature: X-Hub-Signature-256 must be the HMAC-SHA256 of the body")
		return
	}
	event, id := r.Header.Get(gh.EventTypeHeader), r.Header.Get(gh.DeliveryIDHeader)
	if !validEventName(event) {
		reply(w, http.StatusBadRequest, "missing or malformed X-GitHub-Event")
		return
	}
	if !validDeliveryID(id) {
		reply(w, http.StatusBadRequest, "missing or malformed X-GitHub-Delivery")
		return
	}
	payload, status, msg := extractPayload(r.Header.Get("Content-Type"), body)
	if status != 0 {
		reply(w, status, msg)
		return
	}
	if event == "ping" {
		reply(w, http.StatusOK, "pong")
		return
	}
	if !h.events[event] {
		h.log.Debug("webhook: event ignored", "event", event, "delivery", id)
		reply(w, http.StatusAccepted, "ignored")
		return
	}
	// Typed validation: the payload must decode as its event, so a
	// delivery that can never be classified is refused now rather than
	// stored and failed later.
	if _, err := gh.ParseWebHook(event, payload); err != nil && knownEvent(event) {
		reply(w, http.StatusBadRequest, "payload does not match its event")
		return
	}
	var head struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(payload, &head) // a non-string action reads as ""
	action := clip(head.Action, 64)

	// Once the whole signed body is here, recording it is not abandoned
	// because GitHub hung up: the delivery is processed (and a manual
	// redelivery is then a duplicate) rather than half-lost.
	ctx := context.WithoutCancel(r.Context())
	now := h.now()
	fresh, err := h.store.RecordDelivery(ctx, id, event, action, payload, now)
	if err != nil {
		h.log.Error("webhook: store delivery", "delivery", id, "event", event, "err", err)
		reply(w, http.StatusInternalServerError, "could not store the delivery")
		return
	}
	if !fresh {
		h.log.Info("webhook: duplicate delivery", "delivery", id, "event", event, "action", action)
		reply(w, http.StatusOK, "duplicate")
		return
	}
	h.sink.Accept(ctx, Delivery{
		ID: id, Event: event, Action: action, Payload: payload, ReceivedAt: now,
	})
	h.log.Info("webhook: accepted", "delivery", id, "event", event, "action", action)
	reply(w, http.StatusAccepted, "accepted")
}

// validSignature checks "sha256=<hex>" against the HMAC-SHA256 of body in
// constant time. SHA-1 signatures are not accepted at all.
func (h *Webhook) validSignature(header string, body []byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, h.secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign returns the X-Hub-Signature-256 value GitHub sends for body; tests
// and the load tool use it to forge valid deliveries.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// extractPayload returns the JSON payload of a signed body, or an HTTP
// status and message for a body that is not one.
func extractPayload(contentType string, body []byte) ([]byte, int, string) {
	mt := "application/json"
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, http.StatusUnsupportedMediaType, "unsupported Content-Type"
		}
	}
	payload := body
	switch mt {
	case "application/json":
	case "application/x-www-form-urlencoded":
		// A repository webhook may be configured to post the JSON in a
		// "payload" form field; the signature covers the raw body.
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, http.StatusBadRequest, "malformed form body"
		}
		payload = []byte(form.Get("payload"))
	default:
		return nil, http.StatusUnsupportedMediaType, "unsupported Content-Type"
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, http.StatusBadRequest, "payload is not a JSON object"
	}
	return payload, 0, ""
}

// knownEvent reports whether go-github can decode event, so that a
// ParseWebHook error means a malformed payload rather than a new event.
func knownEvent(event string) bool { return gh.EventForType(event) != nil }

// validEventName accepts GitHub's event names: lower-case words joined by
// underscores.
func validEventName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

// validDeliveryID accepts GitHub's delivery GUIDs and anything similar
// (letters, digits, '-', '_', '.', at most 128), because the id becomes a
// primary key and appears in logs.
func validDeliveryID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func reply(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

func clipLog(s string) string { return clip(s, 128) }

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string { return truncateUTF8(s, n) }

// ---------------------------------------------------------------------
// Classification: a stored delivery → a typed trigger.

// DefaultLabel is the issue label that hands an issue to the agent
// (AGENT_LABEL).
const DefaultLabel = "agent"

// TriggerConfig tunes Classify.
type TriggerConfig struct {
	// Trigger is the comment command prefix; DefaultTrigger when empty.
	Trigger string
	// Label is the issue label that starts a run; DefaultLabel when empty.
	Label string
	// AppSlug is the GitHub App's slug; comments by "<slug>[bot]" or made
	// through the App are never triggers (no loops even if GitHub were to
	// report the App as a user).
	AppSlug string
}

func (c TriggerConfig) withDefaults() TriggerConfig {
	if c.Trigger = strings.TrimSpace(c.Trigger); c.Trigger == "" {
		c.Trigger = DefaultTrigger
	}
	if c.Label = strings.TrimSpace(c.Label); c.Label == "" {
		c.Label = DefaultLabel
	}
	c.AppSlug = strings.TrimSpace(c.AppSlug)
	return c
}

// TriggerKind says what kind of GitHub activity started a run.
type TriggerKind string

const (
	// TriggerComment is a new issue comment on an issue or pull request
	// whose first line is a command.
	TriggerComment TriggerKind = "comment"
	// TriggerLabel is the configured label added to an issue.
	TriggerLabel TriggerKind = "label"
)

// Trigger is a delivery classified as something asb acts on, with
// everything needed to answer where it came from.
type Trigger struct {
	Kind TriggerKind
	// Event and Action are the delivery's.
	Event, Action string
	// Command is the parsed comment; for a label, an Ask whose Text is the
	// issue's title and body (sanitized like a comment).
	Command Command
	// Repo is "owner/name".
	Repo string
	// Number is the issue or pull request number; PullRequest says which.
	Number      int
	PullRequest bool
	// Title and State ("open", "closed") describe the issue or PR.
	Title, State string
	// CommentID is the triggering issue comment (TriggerComment only):
	// the target of the 👀 reaction and the key that keeps the webhook and
	// the poller from running one comment twice.
	CommentID int64
	// URL links to the comment, or to the issue for a label.
	URL string
	// Label is the label that was added (TriggerLabel only).
	Label string
	// Sender and SenderType ("User", "Bot", "Organization") say who acted.
	Sender, SenderType string
	// AuthorAssociation is the comment author's relation to the repo
	// (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, …), a cheap first filter
	// only: who may trigger is decided by the repo permission API. Empty
	// for labels (the issue author's association says nothing about the
	// person who labelled it).
	AuthorAssociation string
	InstallationID    int64
	// AsLogin is set for a comment found in a stored login's events feed
	// (no App installation): asb acts on it with that login's token.
	AsLogin string
	// Reason says why a delivery is not a trigger (when Classify reports
	// false), for logs and metrics.
	Reason string
}

// Origin turns the trigger into the core's Origin for the delivery that
// carried it.
func (t Trigger) Origin(deliveryID string) app.Origin {
	o := app.Origin{
		Kind:        app.OriginGitHubComment,
		Repo:        t.Repo,
		Number:      t.Number,
		PullRequest: t.PullRequest,
		CommentID:   t.CommentID,
		DeliveryID:  deliveryID,
		Login:       t.Sender,
		URL:         t.URL,
	}
	if t.Kind == TriggerLabel {
		o.Kind = app.OriginGitHubLabel
	}
	return o
}

// Classify turns a delivery into a Trigger. It reports false (with
// Trigger.Reason set) for deliveries that are not triggers: other events
// and actions, edited or deleted comments, comments without a command,
// other labels, and anything done by a bot or by the App itself. The
// error is for payloads that cannot be decoded or lack what a trigger
// needs (repository, number); such a delivery should be marked failed.
//
// Classify is pure: no network, no clock, no state.
func Classify(event string, payload []byte, cfg TriggerConfig) (Trigger, bool, error) {
	cfg = cfg.withDefaults()
	t := Trigger{Event: event}
	switch event {
	case "issue_comment", "issues":
	default:
		t.Reason = "event " + clip(event, 64) + " does not trigger runs"
		return t, false, nil
	}
	parsed, err := gh.ParseWebHook(event, payload)
	if err != nil {
		return t, false, fmt.Errorf("github: decode %s payload: %w", event, err)
	}
	switch e := parsed.(type) {
	case *gh.IssueCommentEvent:
		// go-github v62 does not decode performed_via_github_app.
		var via struct {
			Comment struct {
				App struct {
					Slug string `json:"slug"`
				} `json:"performed_via_github_app"`
			} `json:"comment"`
		}
		_ = json.Unmarshal(payload, &via) // it decoded above; a wrong type reads as ""
		t, ok, err := classifyComment(t, e, via.Comment.App.Slug, cfg)
		if t.InstallationID == 0 {
			t.AsLogin = feedLogin(payload)
		}
		return t, ok, err
	case *gh.IssuesEvent:
		return classifyLabel(t, e, cfg)
	}
	// A JSON null decodes to nothing at all.
	t.Reason = "empty " + event + " payload"
	return t, false, nil
}

func classifyComment(t Trigger, e *gh.IssueCommentEvent, viaApp string, cfg TriggerConfig) (Trigger, bool, error) {
	t.Kind = TriggerComment
	t.Action = e.GetAction()
	t.Sender, t.SenderType = e.GetSender().GetLogin(), e.GetSender().GetType()
	t.InstallationID = e.GetInstallation().GetID()
	c := e.GetComment()
	t.CommentID = c.GetID()
	t.URL = c.GetHTMLURL()
	t.AuthorAssociation = c.GetAuthorAssociation()
	if t.Action != "created" {
		// Edits never trigger: an edit would re-run an old ask, and a
		// ticked checkbox in asb's own comment must not start anything.
		t.Reason = "comment " + clip(t.Action, 32) + ", only new comments trigger"
		return t, false, nil
	}
	if reason := fromBot(cfg, e.GetSender(), c.GetUser(), viaApp); reason != "" {
		t.Reason = reason
		return t, false, nil
	}
	body := c.GetBody()
	if _, ok := ParseTrackingMarker(body); ok {
		// asb's own tracking comment, posted with a person's token.
		t.Reason = "asb's own tracking comment"
		return t, false, nil
	}
	t.Command = ParseCommand(body, cfg.Trigger)
	if t.Command.Kind == CommandNone {
		t.Reason = "no command"
		if t.Command.Reason != "" {
			t.Reason = t.Command.Reason
		}
		return t, false, nil
	}
	if err := fillIssue(&t, e.GetRepo(), e.GetIssue()); err != nil {
		return t, false, err
	}
	return t, true, nil
}

func classifyLabel(t Trigger, e *gh.IssuesEvent, cfg TriggerConfig) (Trigger, bool, error) {
	t.Kind = TriggerLabel
	t.Action = e.GetAction()
	t.Sender, t.SenderType = e.GetSender().GetLogin(), e.GetSender().GetType()
	t.InstallationID = e.GetInstallation().GetID()
	t.Label = e.GetLabel().GetName()
	if t.Action != "labeled" {
		t.Reason = "issue " + clip(t.Action, 32) + ", only labeling triggers"
		return t, false, nil
	}
	// GitHub label names are unique case-insensitively.
	if !strings.EqualFold(t.Label, cfg.Label) {
		t.Reason = "label " + clip(t.Label, 64) + " is not " + cfg.Label
		return t, false, nil
	}
	if reason := fromBot(cfg, e.GetSender(), nil, ""); reason != "" {
		t.Reason = reason
		return t, false, nil
	}
	issue := e.GetIssue()
	if err := fillIssue(&t, e.GetRepo(), issue); err != nil {
		return t, false, err
	}
	t.URL = issue.GetHTMLURL()
	title, body := Sanitize(issue.GetTitle()), Sanitize(issue.GetBody())
	// The task is bounded like a comment (and app's MaxTaskBytes).
	text := truncateUTF8(strings.TrimSpace(joinAsk(title, trimBlankLines(body), "\n\n")), MaxCommentBytes)
	t.Command = Command{Kind: CommandAsk, Text: text}
	if t.Command.Text == "" {
		t.Command.Text = fmt.Sprintf("Issue #%d", t.Number)
	}
	return t, true, nil
}

// fillIssue copies the repository and issue coordinates, which every
// trigger needs to reply.
func fillIssue(t *Trigger, repo *gh.Repository, issue *gh.Issue) error {
	t.Repo = repo.GetFullName()
	if _, _, err := app.ParseRepo(t.Repo); err != nil {
		return fmt.Errorf("github: %s payload has no valid repository: %w", t.Event, err)
	}
	t.Number = issue.GetNumber()
	if t.Number <= 0 {
		return fmt.Errorf("github: %s payload has no issue number", t.Event)
	}
	// Issue.IsPullRequest has a value receiver: guard the nil pointer.
	t.PullRequest = issue != nil && issue.IsPullRequest()
	t.Title = issue.GetTitle()
	t.State = issue.GetState()
	if t.URL == "" {
		t.URL = issue.GetHTMLURL()
	}
	return nil
}

// fromBot says why an actor must not trigger asb, or "" if it may: bots
// (GitHub's own type, or a "[bot]" login) and the App itself, so asb
// never answers itself or another bot in a loop.
func fromBot(cfg TriggerConfig, sender, author *gh.User, viaApp string) string {
	self := ""
	if cfg.AppSlug != "" {
		self = strings.ToLower(cfg.AppSlug) + "[bot]"
		if strings.EqualFold(viaApp, cfg.AppSlug) {
			return "made through the App itself"
		}
	}
	for _, u := range []*gh.User{sender, author} {
		if u == nil {
			continue
		}
		login := strings.ToLower(u.GetLogin())
		switch {
		case self != "" && login == self:
			return "sent by the App itself"
		case u.GetType() == "Bot", strings.HasSuffix(login, "[bot]"):
			return "sent by a bot"
		}
	}
	return ""
}
