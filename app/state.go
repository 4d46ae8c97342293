package app

// RunState is a run's place in its lifecycle:
//
//	queued → starting → running → (waiting ⇄ running) → done | failed | cancelled
type RunState string

const (
	StateQueued    RunState = "queued"
	StateStarting  RunState = "starting"
	StateRunning   RunState = "running"
	StateWaiting   RunState = "waiting"
	StateDone      RunState = "done"
	StateFailed    RunState = "failed"
	StateCancelled RunState = "cancelled"
)

// AllStates lists every state in lifecycle order.
var AllStates = []RunState{StateQueued, StateStarting, StateRunning, StateWaiting, StateDone, StateFailed, StateCancelled}

// transitions is the whole state machine. A transition not listed here is
// refused. Cancellation is possible from every live state; failure from
// every state where work is under way (a queued run that cannot start is
// cancelled with a reason rather than failed, because nothing ran).
var transitions = map[RunState][]RunState{
	StateQueued:   {StateStarting, StateCancelled},
	StateStarting: {StateRunning, StateFailed, StateCancelled},
	StateRunning:  {StateWaiting, StateDone, StateFailed, StateCancelled},
	StateWaiting:  {StateRunning, StateFailed, StateCancelled},
}

// Valid reports whether s is a known state.
func (s RunState) Valid() bool {
	switch s {
	case StateQueued, StateStarting, StateRunning, StateWaiting, StateDone, StateFailed, StateCancelled:
		return true
	}
	return false
}

// Terminal reports whether no transition leaves s.
func (s RunState) Terminal() bool {
	return s == StateDone || s == StateFailed || s == StateCancelled
}

// Active reports whether a run in state s occupies its session: only one
// run per session may be active, the rest wait in the queue.
func (s RunState) Active() bool {
	return s == StateStarting || s == StateRunning || s == StateWaiting
}

// Boundary reports whether a caller blocked on a run should be woken: the
// run needs an answer or has ended.
func (s RunState) Boundary() bool {
	return s == StateWaiting || s.Terminal()
}

// CanTransition reports whether from → to is allowed.
func CanTransition(from, to RunState) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// CheckTransition returns a conflict *Error when from → to is not allowed.
func CheckTransition(from, to RunState) error {
	if !from.Valid() || !to.Valid() {
		return Errorf(EINVALID, "unknown run state %q → %q", from, to)
	}
	if !CanTransition(from, to) {
		return Errorf(ECONFLICT, "a %s run cannot become %s", from, to)
	}
	return nil
}
