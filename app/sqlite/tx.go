package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/asb-dev/asb/app"
)

// querier is what both *sqlx.DB and *sqlx.Tx offer.
type querier interface {
	sqlx.ExtContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

type txn struct {
	ctx context.Context
	q   querier
}

var _ app.Tx = (*txn)(nil)

const timeFormat = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func toJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("sqlite: marshal: " + err.Error())
	}
	return string(b)
}

func fromJSON(s string, v any) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

func (t *txn) exec(query string, args ...any) (sql.Result, error) {
	res, err := t.q.ExecContext(t.ctx, query, args...)
	return res, mapErr(err)
}

func (t *txn) get(dest any, query string, args ...any) error {
	return mapErr(t.q.GetContext(t.ctx, dest, query, args...))
}

func (t *txn) sel(dest any, query string, args ...any) error {
	return mapErr(t.q.SelectContext(t.ctx, dest, query, args...))
}

// selectRows runs query and turns each row into a T with conv; a row conv
// refuses fails the whole select. An empty result is an empty, non-nil
// slice.
func selectRows[R, T any](t *txn, conv func(R) (T, error), query string, args ...any) ([]T, error) {
	var rows []R
	if err := t.sel(&rows, query, args...); err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		v, err := conv(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// noErr adapts a row conversion that cannot fail for selectRows.
func noErr[R, T any](conv func(R) T) func(R) (T, error) {
	return func(r R) (T, error) { return conv(r), nil }
}

// ownedQuery selects table's rows of owner ("" for every owner's) ordered
// by key, then owner. table and key are constants of this package.
func ownedQuery(table, key string, owner app.AccountID) (string, []any) {
	if owner == "" {
		return `SELECT * FROM ` + table + ` ORDER BY ` + key + `, owner`, nil
	}
	return `SELECT * FROM ` + table + ` WHERE owner = ? ORDER BY ` + key, []any{string(owner)}
}

func notFound(err error, what string, id any) error {
	if app.ErrorCode(err) == app.ENOTFOUND {
		return app.Errorf(app.ENOTFOUND, "%s %v not found", what, id)
	}
	return err
}

// ---- sessions ----

type sessionRow struct {
	ID             string `db:"id"`
	Owner          string `db:"owner"`
	State          string `db:"state"`
	Title          string `db:"title"`
	Origin         string `db:"origin"`
	Sources        string `db:"sources"`
	ThreadKey      string `db:"thread_key"`
	BoxHost        string `db:"box_host"`
	BoxName        string `db:"box_name"`
	AgentSessionID string `db:"agent_session_id"`
	AskSessionID   string `db:"ask_session_id"`
	AllowDomains   string `db:"allow_domains"`
	Pinned         bool   `db:"pinned"`
	CreatedAt      string `db:"created_at"`
	UpdatedAt      string `db:"updated_at"`
	ClosedAt       string `db:"closed_at"`
}

const sessionCols = `id, owner, state, title, origin, sources, thread_key, box_host, box_name, agent_session_id, ask_session_id, allow_domains, pinned, created_at, updated_at, closed_at`

func (r sessionRow) session() (app.Session, error) {
	s := app.Session{
		ID: app.SessionID(r.ID), Owner: app.AccountID(r.Owner), State: app.SessionState(r.State),
		Title: r.Title, ThreadKey: r.ThreadKey, Box: app.BoxRef{Host: r.BoxHost, Name: r.BoxName},
		AgentSessionID: r.AgentSessionID, AskSessionID: r.AskSessionID, Pinned: r.Pinned,
		CreatedAt: parseTime(r.CreatedAt), UpdatedAt: parseTime(r.UpdatedAt), ClosedAt: parseTime(r.ClosedAt),
	}
	if err := errors.Join(fromJSON(r.Origin, &s.Origin), fromJSON(r.Sources, &s.Sources), fromJSON(r.AllowDomains, &s.AllowDomains)); err != nil {
		return app.Session{}, fmt.Errorf("decode session %s: %w", r.ID, err)
	}
	return s, nil
}

func sessionArgs(s *app.Session) []any {
	sources := s.Sources
	if sources == nil {
		sources = []app.Source{}
	}
	domains := s.AllowDomains
	if domains == nil {
		domains = []string{}
	}
	return []any{string(s.ID), string(s.Owner), string(s.State), s.Title, toJSON(s.Origin), toJSON(sources),
		s.ThreadKey, s.Box.Host, s.Box.Name, s.AgentSessionID, s.AskSessionID, toJSON(domains), s.Pinned,
		fmtTime(s.CreatedAt), fmtTime(s.UpdatedAt), fmtTime(s.ClosedAt)}
}

func (t *txn) GetSession(id app.SessionID) (app.Session, error) {
	var r sessionRow
	if err := t.get(&r, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, string(id)); err != nil {
		return app.Session{}, notFound(err, "session", id)
	}
	return r.session()
}

func (t *txn) ActiveSessionByThread(key string) (app.Session, bool, error) {
	if key == "" {
		return app.Session{}, false, nil
	}
	var r sessionRow
	err := t.get(&r, `SELECT `+sessionCols+` FROM sessions WHERE thread_key = ? AND state = 'active'`, key)
	if app.ErrorCode(err) == app.ENOTFOUND {
		return app.Session{}, false, nil
	}
	if err != nil {
		return app.Session{}, false, err
	}
	s, err := r.session()
	return s, err == nil, err
}

func (t *txn) InsertSession(s *app.Session) error {
	_, err := t.exec(`INSERT INTO sessions (`+sessionCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, sessionArgs(s)...)
	if app.ErrorCode(err) == app.ECONFLICT {
		return app.WrapError(app.ECONFLICT, err, "session %s or an active session for its thread exists", s.ID)
	}
	return err
}

func (t *txn) UpdateSession(s *app.Session) error {
	args := sessionArgs(s)
	res, err := t.exec(`UPDATE sessions SET owner=?, state=?, title=?, origin=?, sources=?, thread_key=?, box_host=?, box_name=?,
		agent_session_id=?, ask_session_id=?, allow_domains=?, pinned=?, created_at=?, updated_at=?, closed_at=? WHERE id = ?`, append(args[1:], args[0])...)
	return rowsOrNotFound(res, err, "session", s.ID)
}

func rowsOrNotFound(res sql.Result, err error, what string, id any) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "%s %v not found", what, id)
	}
	return nil
}

func (t *txn) ListSessions(f app.SessionFilter) ([]app.Session, error) {
	var where []string
	var args []any
	if f.Owner != "" {
		where = append(where, "owner = ?")
		args = append(args, string(f.Owner))
	}
	if f.State != "" {
		where = append(where, "state = ?")
		args = append(args, string(f.State))
	}
	q := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 200
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	return selectRows(t, sessionRow.session, q, args...)
}

// ---- runs ----

type runRow struct {
	ID          string `db:"id"`
	SessionID   string `db:"session_id"`
	Seq         int64  `db:"seq"`
	Kind        string `db:"kind"`
	Prompt      string `db:"prompt"`
	State       string `db:"state"`
	Origin      string `db:"origin"`
	Question    string `db:"question"`
	Turn        int    `db:"turn"`
	AgentOffset int64  `db:"agent_offset"`
	Publishing  bool   `db:"publishing"`
	Summary     string `db:"summary"`
	Error       string `db:"error"`
	ExitCode    int    `db:"exit_code"`
	Usage       string `db:"usage"`
	Result      string `db:"result"`
	CreatedAt   string `db:"created_at"`
	UpdatedAt   string `db:"updated_at"`
	StartedAt   string `db:"started_at"`
	FinishedAt  string `db:"finished_at"`
}

const runCols = `id, session_id, seq, kind, prompt, state, origin, question, turn, agent_offset, publishing, summary, error, exit_code, usage, result, created_at, updated_at, started_at, finished_at`

func (r runRow) run() (app.Run, error) {
	out := app.Run{
		ID: app.RunID(r.ID), SessionID: app.SessionID(r.SessionID), Seq: r.Seq, Kind: app.RunKind(r.Kind),
		Prompt: r.Prompt, State: app.RunState(r.State), Question: r.Question, Turn: r.Turn,
		AgentOffset: r.AgentOffset, Publishing: r.Publishing, Summary: r.Summary, Error: r.Error, ExitCode: r.ExitCode,
		CreatedAt: parseTime(r.CreatedAt), UpdatedAt: parseTime(r.UpdatedAt),
		StartedAt: parseTime(r.StartedAt), FinishedAt: parseTime(r.FinishedAt),
	}
	if err := errors.Join(fromJSON(r.Origin, &out.Origin), fromJSON(r.Usage, &out.Usage), fromJSON(r.Result, &out.Result)); err != nil {
		return app.Run{}, fmt.Errorf("decode run %s: %w", r.ID, err)
	}
	return out, nil
}

func runArgs(r *app.Run) []any {
	return []any{string(r.ID), string(r.SessionID), r.Seq, string(r.Kind), r.Prompt, string(r.State), toJSON(r.Origin),
		r.Question, r.Turn, r.AgentOffset, r.Publishing, r.Summary, r.Error, r.ExitCode, toJSON(r.Usage), toJSON(r.Result),
		fmtTime(r.CreatedAt), fmtTime(r.UpdatedAt), fmtTime(r.StartedAt), fmtTime(r.FinishedAt)}
}

func (t *txn) runs(q string, args ...any) ([]app.Run, error) {
	return selectRows(t, runRow.run, q, args...)
}

func (t *txn) GetRun(id app.RunID) (app.Run, error) {
	var r runRow
	if err := t.get(&r, `SELECT `+runCols+` FROM runs WHERE id = ?`, string(id)); err != nil {
		return app.Run{}, notFound(err, "run", id)
	}
	return r.run()
}

func (t *txn) ListRuns(session app.SessionID) ([]app.Run, error) {
	return t.runs(`SELECT `+runCols+` FROM runs WHERE session_id = ? ORDER BY seq`, string(session))
}

func (t *txn) ListRunsByState(states ...app.RunState) ([]app.Run, error) {
	if len(states) == 0 {
		return nil, nil
	}
	args := make([]any, len(states))
	for i, s := range states {
		args[i] = string(s)
	}
	q := `SELECT ` + runCols + ` FROM runs WHERE state IN (?` + strings.Repeat(",?", len(states)-1) + `) ORDER BY created_at, session_id, seq`
	return t.runs(q, args...)
}

func (t *txn) NextSeq(session app.SessionID) (int64, error) {
	var n int64
	err := t.get(&n, `SELECT COALESCE(MAX(seq), 0) + 1 FROM runs WHERE session_id = ?`, string(session))
	return n, err
}

func (t *txn) InsertRun(r *app.Run) error {
	_, err := t.exec(`INSERT INTO runs (`+runCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, runArgs(r)...)
	return err
}

func (t *txn) UpdateRun(r *app.Run) error {
	args := runArgs(r)
	res, err := t.exec(`UPDATE runs SET session_id=?, seq=?, kind=?, prompt=?, state=?, origin=?, question=?, turn=?, agent_offset=?,
		publishing=?, summary=?, error=?, exit_code=?, usage=?, result=?, created_at=?, updated_at=?, started_at=?, finished_at=?
		WHERE id = ?`, append(args[1:], args[0])...)
	return rowsOrNotFound(res, err, "run", r.ID)
}

func (t *txn) CountRunsByState() (map[app.RunState]int, error) {
	var rows []struct {
		State string `db:"state"`
		N     int    `db:"n"`
	}
	if err := t.sel(&rows, `SELECT state, count(*) AS n FROM runs GROUP BY state`); err != nil {
		return nil, err
	}
	out := map[app.RunState]int{}
	for _, r := range rows {
		out[app.RunState(r.State)] = r.N
	}
	return out, nil
}

// ---- questions ----

type questionRow struct {
	ID         int64  `db:"id"`
	RunID      string `db:"run_id"`
	Text       string `db:"text"`
	AskedAt    string `db:"asked_at"`
	Answer     string `db:"answer"`
	AnsweredBy string `db:"answered_by"`
	AnsweredAt string `db:"answered_at"`
	Delivery   string `db:"answer_delivery"`
	Comment    int64  `db:"answer_comment"`
}

func (r questionRow) question() app.Question {
	return app.Question{ID: r.ID, RunID: app.RunID(r.RunID), Text: r.Text, AskedAt: parseTime(r.AskedAt),
		Answer: r.Answer, AnsweredBy: r.AnsweredBy, AnsweredAt: parseTime(r.AnsweredAt),
		AnswerDelivery: r.Delivery, AnswerComment: r.Comment}
}

func (t *txn) InsertQuestion(q *app.Question) error {
	res, err := t.exec(`INSERT INTO questions (run_id, text, asked_at, answer, answered_by, answered_at, answer_delivery, answer_comment)
		VALUES (?,?,?,?,?,?,?,?)`,
		string(q.RunID), q.Text, fmtTime(q.AskedAt), q.Answer, q.AnsweredBy, fmtTime(q.AnsweredAt), q.AnswerDelivery, q.AnswerComment)
	if err != nil {
		return notFound(err, "run", q.RunID)
	}
	q.ID, err = res.LastInsertId()
	return err
}

func (t *txn) UpdateQuestion(q *app.Question) error {
	res, err := t.exec(`UPDATE questions SET text=?, answer=?, answered_by=?, answered_at=?, answer_delivery=?, answer_comment=? WHERE id = ?`,
		q.Text, q.Answer, q.AnsweredBy, fmtTime(q.AnsweredAt), q.AnswerDelivery, q.AnswerComment, q.ID)
	return rowsOrNotFound(res, err, "question", q.ID)
}

func (t *txn) PendingQuestion(run app.RunID) (app.Question, bool, error) {
	var r questionRow
	err := t.get(&r, `SELECT * FROM questions WHERE run_id = ? AND answered_at = '' ORDER BY id DESC LIMIT 1`, string(run))
	if app.ErrorCode(err) == app.ENOTFOUND {
		return app.Question{}, false, nil
	}
	if err != nil {
		return app.Question{}, false, err
	}
	return r.question(), true, nil
}

func (t *txn) ListQuestions(run app.RunID) ([]app.Question, error) {
	return selectRows(t, noErr(questionRow.question), `SELECT * FROM questions WHERE run_id = ? ORDER BY id`, string(run))
}

// ---- events ----

type eventRow struct {
	ID        int64  `db:"id"`
	SessionID string `db:"session_id"`
	RunID     string `db:"run_id"`
	Type      string `db:"type"`
	Data      string `db:"data"`
	At        string `db:"at"`
}

func (t *txn) AppendEvents(events []app.Event) ([]app.Event, error) {
	out := make([]app.Event, len(events))
	for i, e := range events {
		res, err := t.exec(`INSERT INTO events (session_id, run_id, type, data, at) VALUES (?,?,?,?,?)`,
			string(e.SessionID), string(e.RunID), string(e.Type), string(e.Data), fmtTime(e.At))
		if err != nil {
			return nil, notFound(err, "session", e.SessionID)
		}
		if e.ID, err = res.LastInsertId(); err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func (t *txn) ListEvents(f app.EventFilter) ([]app.Event, error) {
	q := `SELECT id, session_id, run_id, type, data, at FROM events WHERE id > ?`
	args := []any{f.AfterID}
	if f.SessionID != "" {
		q += ` AND session_id = ?`
		args = append(args, string(f.SessionID))
	}
	if f.RunID != "" {
		q += ` AND run_id = ?`
		args = append(args, string(f.RunID))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit)
	var rows []eventRow
	if err := t.sel(&rows, q, args...); err != nil {
		return nil, err
	}
	out := make([]app.Event, len(rows))
	for i, r := range rows {
		out[i] = app.Event{ID: r.ID, SessionID: app.SessionID(r.SessionID), RunID: app.RunID(r.RunID),
			Type: app.EventType(r.Type), At: parseTime(r.At)}
		if r.Data != "" {
			out[i].Data = json.RawMessage(r.Data)
		}
	}
	return out, nil
}

// ---- secrets ----

func (t *txn) PutSecret(name string, sealed []byte) error {
	_, err := t.exec(`INSERT INTO secrets (name, sealed, updated_at) VALUES (?,?,?)
		ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		name, sealed, fmtTime(time.Now()))
	return err
}

func (t *txn) GetSecret(name string) ([]byte, bool, error) {
	var b []byte
	err := t.get(&b, `SELECT sealed FROM secrets WHERE name = ?`, name)
	if app.ErrorCode(err) == app.ENOTFOUND {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (t *txn) DeleteSecret(name string) error {
	_, err := t.exec(`DELETE FROM secrets WHERE name = ?`, name)
	return err
}

// ---- audit ----

func (t *txn) AppendAudit(a app.AuditEntry) error {
	_, err := t.exec(`INSERT INTO audit_log (at, actor, action, target, detail) VALUES (?,?,?,?,?)`,
		fmtTime(a.At), a.Actor, a.Action, a.Target, a.Detail)
	return err
}

func (t *txn) ListAudit(limit int) ([]app.AuditEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	var rows []struct {
		ID     int64  `db:"id"`
		At     string `db:"at"`
		Actor  string `db:"actor"`
		Action string `db:"action"`
		Target string `db:"target"`
		Detail string `db:"detail"`
	}
	if err := t.sel(&rows, `SELECT * FROM audit_log ORDER BY id DESC LIMIT ?`, limit); err != nil {
		return nil, err
	}
	out := make([]app.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = app.AuditEntry{ID: r.ID, At: parseTime(r.At), Actor: r.Actor, Action: r.Action, Target: r.Target, Detail: r.Detail}
	}
	return out, nil
}

// ---- boxes ----

type boxRow struct {
	Host      string  `db:"host"`
	Name      string  `db:"name"`
	Role      string  `db:"role"`
	SessionID string  `db:"session_id"`
	Status    string  `db:"status"`
	Pinned    bool    `db:"pinned"`
	CPUPct    float64 `db:"cpu_pct"`
	MemMiB    int     `db:"mem_mib"`
	Image     string  `db:"image"`
	Egress    string  `db:"egress"`
	CreatedAt string  `db:"created_at"`
}

func (t *txn) UpsertBox(b app.Box) error {
	_, err := t.exec(`INSERT INTO boxes (host, name, role, session_id, status, pinned, cpu_pct, mem_mib, image, egress, created_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (host, name) DO UPDATE SET role=excluded.role, session_id=excluded.session_id, status=excluded.status,
		pinned=excluded.pinned, cpu_pct=excluded.cpu_pct, mem_mib=excluded.mem_mib, image=excluded.image, egress=excluded.egress`,
		b.Host, b.Name, string(b.Role), string(b.SessionID), b.Status, b.Pinned, b.CPUPct, b.MemMiB, b.Image, b.Egress, fmtTime(b.CreatedAt))
	return err
}

func (t *txn) DeleteBox(ref app.BoxRef) error {
	_, err := t.exec(`DELETE FROM boxes WHERE host = ? AND name = ?`, ref.Host, ref.Name)
	return err
}

func (t *txn) ListBoxes(host string) ([]app.Box, error) {
	var rows []boxRow
	var err error
	if host == "" {
		err = t.sel(&rows, `SELECT * FROM boxes ORDER BY host, name`)
	} else {
		err = t.sel(&rows, `SELECT * FROM boxes WHERE host = ? ORDER BY name`, host)
	}
	if err != nil {
		return nil, err
	}
	out := make([]app.Box, len(rows))
	for i, r := range rows {
		out[i] = app.Box{BoxRef: app.BoxRef{Host: r.Host, Name: r.Name}, Role: app.BoxRole(r.Role),
			SessionID: app.SessionID(r.SessionID), Status: r.Status, Pinned: r.Pinned, CPUPct: r.CPUPct,
			MemMiB: r.MemMiB, Image: r.Image, Egress: r.Egress, CreatedAt: parseTime(r.CreatedAt)}
	}
	return out, nil
}
