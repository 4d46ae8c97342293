// Package apptest provides in-memory fakes of the app ports, for tests of
// the core and of the surfaces. The fakes are faithful enough to run the
// same store contract suite (app/storetest) as the SQLite store.
package apptest

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/asb-dev/asb/app"
)

// MemStore is an in-memory app.Store. Transactions are serialised by one
// lock and rolled back by restoring a copy of the state.
type MemStore struct {
	mu sync.Mutex
	st memState
}

type memState struct {
	sessions  map[app.SessionID]app.Session
	runs      map[app.RunID]app.Run
	questions []app.Question
	events    []app.Event
	secrets   map[string][]byte
	audit     []app.AuditEntry
	boxes     map[app.BoxRef]app.Box
	accounts  map[string]memSealed[app.GitHubAccount]
	mcps      map[string]memSealed[app.MCPServer]
	users     map[app.AccountID]app.Account
	keys      map[string]memDigested[app.APIKey]
	devices   map[string]memDigested[app.Device]
	nextEvent int64
	nextQ     int64
	nextAudit int64
}

func (s memState) clone() memState {
	c := s
	c.sessions = maps.Clone(s.sessions)
	c.runs = maps.Clone(s.runs)
	c.questions = slices.Clone(s.questions)
	c.events = slices.Clone(s.events)
	c.secrets = maps.Clone(s.secrets)
	c.audit = slices.Clone(s.audit)
	c.boxes = maps.Clone(s.boxes)
	c.accounts = maps.Clone(s.accounts)
	c.mcps = maps.Clone(s.mcps)
	c.users = maps.Clone(s.users)
	c.keys = maps.Clone(s.keys)
	c.devices = maps.Clone(s.devices)
	return c
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{st: memState{
		sessions: map[app.SessionID]app.Session{},
		runs:     map[app.RunID]app.Run{},
		secrets:  map[string][]byte{},
		boxes:    map[app.BoxRef]app.Box{},
		accounts: map[string]memSealed[app.GitHubAccount]{},
		mcps:     map[string]memSealed[app.MCPServer]{},
		users: map[app.AccountID]app.Account{app.OperatorAccount: {
			ID: app.OperatorAccount, Username: "operator", Admin: true}},
		keys:    map[string]memDigested[app.APIKey]{},
		devices: map[string]memDigested[app.Device]{},
	}}
}

var _ app.Store = (*MemStore)(nil)

func (m *MemStore) Tx(ctx context.Context, fn func(app.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	saved := m.st.clone()
	if err := fn(&memTx{st: &m.st}); err != nil {
		m.st = saved
		return err
	}
	return nil
}

func (m *MemStore) View(ctx context.Context, fn func(app.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	saved := m.st.clone()
	err := fn(&memTx{st: &m.st, readOnly: true})
	m.st = saved // a view never changes anything
	return err
}

func (m *MemStore) Close() error { return nil }

type memTx struct {
	st       *memState
	readOnly bool
}

func notFound(what string, id any) error {
	return app.Errorf(app.ENOTFOUND, "%s %v not found", what, id)
}

func (t *memTx) GetSession(id app.SessionID) (app.Session, error) {
	s, ok := t.st.sessions[id]
	if !ok {
		return app.Session{}, notFound("session", id)
	}
	return s, nil
}

func (t *memTx) ActiveSessionByThread(key string) (app.Session, bool, error) {
	for _, s := range t.st.sessions {
		if key != "" && s.ThreadKey == key && s.State == app.SessionActive {
			return s, true, nil
		}
	}
	return app.Session{}, false, nil
}

func (t *memTx) InsertSession(s *app.Session) error {
	if _, ok := t.st.sessions[s.ID]; ok {
		return app.Errorf(app.ECONFLICT, "session %s exists", s.ID)
	}
	if s.ThreadKey != "" && s.State == app.SessionActive {
		if _, ok, _ := t.ActiveSessionByThread(s.ThreadKey); ok {
			return app.Errorf(app.ECONFLICT, "thread %s already has an active session", s.ThreadKey)
		}
	}
	t.st.sessions[s.ID] = *s
	return nil
}

func (t *memTx) UpdateSession(s *app.Session) error {
	if _, ok := t.st.sessions[s.ID]; !ok {
		return notFound("session", s.ID)
	}
	t.st.sessions[s.ID] = *s
	return nil
}

func (t *memTx) ListSessions(f app.SessionFilter) ([]app.Session, error) {
	var out []app.Session
	for _, s := range t.st.sessions {
		if (f.Owner == "" || s.Owner == f.Owner) && (f.State == "" || s.State == f.State) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	limit := f.Limit
	if limit <= 0 {
		limit = 200
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (t *memTx) GetRun(id app.RunID) (app.Run, error) {
	r, ok := t.st.runs[id]
	if !ok {
		return app.Run{}, notFound("run", id)
	}
	return r, nil
}

func (t *memTx) ListRuns(session app.SessionID) ([]app.Run, error) {
	var out []app.Run
	for _, r := range t.st.runs {
		if r.SessionID == session {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

func (t *memTx) ListRunsByState(states ...app.RunState) ([]app.Run, error) {
	var out []app.Run
	for _, r := range t.st.runs {
		if slices.Contains(states, r.State) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		if out[i].SessionID != out[j].SessionID {
			return out[i].SessionID < out[j].SessionID
		}
		return out[i].Seq < out[j].Seq
	})
	return out, nil
}

func (t *memTx) NextSeq(session app.SessionID) (int64, error) {
	var n int64
	for _, r := range t.st.runs {
		if r.SessionID == session && r.Seq > n {
			n = r.Seq
		}
	}
	return n + 1, nil
}

func (t *memTx) InsertRun(r *app.Run) error {
	if _, ok := t.st.sessions[r.SessionID]; !ok {
		return notFound("session", r.SessionID)
	}
	if _, ok := t.st.runs[r.ID]; ok {
		return app.Errorf(app.ECONFLICT, "run %s exists", r.ID)
	}
	for _, o := range t.st.runs {
		if o.SessionID == r.SessionID && o.Seq == r.Seq {
			return app.Errorf(app.ECONFLICT, "session %s already has run %d", r.SessionID, r.Seq)
		}
	}
	t.st.runs[r.ID] = *r
	return nil
}

func (t *memTx) UpdateRun(r *app.Run) error {
	if _, ok := t.st.runs[r.ID]; !ok {
		return notFound("run", r.ID)
	}
	t.st.runs[r.ID] = *r
	return nil
}

func (t *memTx) CountRunsByState() (map[app.RunState]int, error) {
	out := map[app.RunState]int{}
	for _, r := range t.st.runs {
		out[r.State]++
	}
	return out, nil
}

func (t *memTx) InsertQuestion(q *app.Question) error {
	if _, ok := t.st.runs[q.RunID]; !ok {
		return notFound("run", q.RunID)
	}
	t.st.nextQ++
	q.ID = t.st.nextQ
	t.st.questions = append(t.st.questions, *q)
	return nil
}

func (t *memTx) UpdateQuestion(q *app.Question) error {
	for i := range t.st.questions {
		if t.st.questions[i].ID == q.ID {
			t.st.questions[i] = *q
			return nil
		}
	}
	return notFound("question", q.ID)
}

func (t *memTx) PendingQuestion(run app.RunID) (app.Question, bool, error) {
	for i := len(t.st.questions) - 1; i >= 0; i-- {
		q := t.st.questions[i]
		if q.RunID == run && q.AnsweredAt.IsZero() {
			return q, true, nil
		}
	}
	return app.Question{}, false, nil
}

func (t *memTx) ListQuestions(run app.RunID) ([]app.Question, error) {
	var out []app.Question
	for _, q := range t.st.questions {
		if q.RunID == run {
			out = append(out, q)
		}
	}
	return out, nil
}

func (t *memTx) AppendEvents(events []app.Event) ([]app.Event, error) {
	out := make([]app.Event, len(events))
	for i, e := range events {
		if _, ok := t.st.sessions[e.SessionID]; !ok {
			return nil, notFound("session", e.SessionID)
		}
		t.st.nextEvent++
		e.ID = t.st.nextEvent
		t.st.events = append(t.st.events, e)
		out[i] = e
	}
	return out, nil
}

func (t *memTx) ListEvents(f app.EventFilter) ([]app.Event, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	var out []app.Event
	for _, e := range t.st.events {
		if e.ID <= f.AfterID || (f.SessionID != "" && e.SessionID != f.SessionID) || (f.RunID != "" && e.RunID != f.RunID) {
			continue
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

func (t *memTx) PutSecret(name string, sealed []byte) error {
	t.st.secrets[name] = slices.Clone(sealed)
	return nil
}

func (t *memTx) GetSecret(name string) ([]byte, bool, error) {
	v, ok := t.st.secrets[name]
	return slices.Clone(v), ok, nil
}

func (t *memTx) DeleteSecret(name string) error {
	delete(t.st.secrets, name)
	return nil
}

func (t *memTx) AppendAudit(a app.AuditEntry) error {
	t.st.nextAudit++
	a.ID = t.st.nextAudit
	t.st.audit = append(t.st.audit, a)
	return nil
}

func (t *memTx) ListAudit(limit int) ([]app.AuditEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []app.AuditEntry
	for i := len(t.st.audit) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, t.st.audit[i])
	}
	return out, nil
}

func (t *memTx) UpsertBox(b app.Box) error {
	t.st.boxes[b.BoxRef] = b
	return nil
}

func (t *memTx) DeleteBox(ref app.BoxRef) error {
	delete(t.st.boxes, ref)
	return nil
}

func (t *memTx) ListBoxes(host string) ([]app.Box, error) {
	var out []app.Box
	for _, b := range t.st.boxes {
		if host == "" || b.Host == host {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
