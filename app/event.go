package app

import (
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// EventType names what happened. The strings are part of the public
// interface (SSE event names, stored rows), so they never change.
type EventType string

const (
	EventSessionCreated EventType = "session.created"
	EventSessionUpdated EventType = "session.updated"
	EventSessionClosed  EventType = "session.closed"
	EventRunQueued      EventType = "run.queued"
	EventRunState       EventType = "run.state"
	EventRunQuestion    EventType = "run.question"
	EventRunAnswered    EventType = "run.answered"
	// EventRunNotice tells whoever watches a run something that is not a
	// state change: a step failing and being retried, or the controller
	// picking the run up again after a restart.
	EventRunNotice EventType = "run.notice"
	// EventAsk records one co-pilot question and its answer.
	EventAsk EventType = "ask"
	// EventAgent carries one record of the agent's own event stream
	// (a Claude Code stream-json line) as Data, unchanged.
	EventAgent EventType = "agent"
)

// Event is one persisted, ordered fact about a session. ID is assigned by
// the Store and grows monotonically across the whole controller, so a
// subscriber can resume from the last id it saw.
type Event struct {
	ID        int64           `json:"id"`
	SessionID SessionID       `json:"session_id"`
	RunID     RunID           `json:"run_id,omitempty"`
	Type      EventType       `json:"type"`
	Data      json.RawMessage `json:"data,omitempty"`
	At        time.Time       `json:"at"`
}

// StateChange is the Data of EventRunState.
type StateChange struct {
	From   RunState `json:"from"`
	To     RunState `json:"to"`
	Reason string   `json:"reason,omitempty"`
}

// QueuedData is the Data of EventRunQueued.
type QueuedData struct {
	Seq      int64   `json:"seq"`
	Kind     RunKind `json:"kind"`
	Position int     `json:"position"`
	Prompt   string  `json:"prompt"`
}

// NoticeData is the Data of EventRunNotice.
type NoticeData struct {
	// State is the run's state when the notice was given.
	State RunState `json:"state"`
	Text  string   `json:"text"`
}

// QuestionData is the Data of EventRunQuestion and EventRunAnswered.
type QuestionData struct {
	Text       string `json:"text,omitempty"`
	Answer     string `json:"answer,omitempty"`
	AnsweredBy string `json:"answered_by,omitempty"`
}

// AskData is the Data of EventAsk.
type AskData struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
	AskedBy  string `json:"asked_by,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
}

// SessionData is the Data of session events.
type SessionData struct {
	Title  string       `json:"title,omitempty"`
	State  SessionState `json:"state,omitempty"`
	Pinned *bool        `json:"pinned,omitempty"`
	Box    *BoxRef      `json:"box,omitempty"`
	Reason string       `json:"reason,omitempty"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own plain structs are marshalled here.
		panic("app: marshal event data: " + err.Error())
	}
	return b
}

// Decode unmarshals the event's Data into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// ErrLagged ends a subscription whose reader fell too far behind. The
// reader resubscribes from the last event id it saw and loses nothing,
// because every event is in the Store before it is published.
var ErrLagged = errors.New("subscriber lagged behind and was dropped")

// Bus fans published events out to subscribers. Publish never blocks: a
// subscriber whose buffer is full is dropped with ErrLagged instead of
// slowing the core down.
type Bus struct {
	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	buffer int
}

// NewBus returns a bus whose subscribers buffer up to buffer events.
func NewBus(buffer int) *Bus {
	if buffer <= 0 {
		buffer = 256
	}
	return &Bus{subs: make(map[*Subscription]struct{}), buffer: buffer}
}

// Subscription receives published events that match its filter.
type Subscription struct {
	bus    *Bus
	ch     chan Event
	filter func(Event) bool
	once   sync.Once
	mu     sync.Mutex
	err    error
}

// C returns the channel of events. It is closed when the subscription ends;
// Err then says why.
func (s *Subscription) C() <-chan Event { return s.ch }

// Err returns ErrLagged if the subscription was dropped, nil otherwise.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription. It is safe to call more than once.
func (s *Subscription) Close() { s.end(nil) }

func (s *Subscription) end(err error) {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.ch)
	})
}

// Subscribe registers a subscriber for events for which filter returns
// true (all events when filter is nil).
func (b *Bus) Subscribe(filter func(Event) bool) *Subscription {
	s := &Subscription{bus: b, ch: make(chan Event, b.buffer), filter: filter}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Publish delivers events to every matching subscriber without blocking.
func (b *Bus) Publish(events ...Event) {
	if len(events) == 0 {
		return
	}
	b.mu.Lock()
	var lagged []*Subscription
	for s := range b.subs {
		for _, e := range events {
			if s.filter != nil && !s.filter(e) {
				continue
			}
			select {
			case s.ch <- e:
			default:
				lagged = append(lagged, s)
			}
			if len(lagged) > 0 && lagged[len(lagged)-1] == s {
				break
			}
		}
	}
	b.mu.Unlock()
	// end takes the bus lock itself, so drop laggards after releasing it.
	for _, s := range lagged {
		s.end(ErrLagged)
	}
}

// Subscribers returns how many subscriptions are open (for metrics and tests).
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}
