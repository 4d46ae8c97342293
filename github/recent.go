package github

// recentIDs remembers the last max ids added, forgetting the oldest first.
// The poller and the processor use it to avoid handing on or handling the
// same delivery twice within one process; the store remains the source of
// truth across restarts. It is not safe for concurrent use: callers hold
// their own lock.
type recentIDs struct {
	max   int
	seen  map[string]bool
	order []string
}

func newRecentIDs(max int) *recentIDs { return &recentIDs{max: max, seen: map[string]bool{}} }

func (r *recentIDs) has(id string) bool { return r.seen[id] }

func (r *recentIDs) add(id string) {
	if r.seen[id] {
		return
	}
	r.seen[id] = true
	r.order = append(r.order, id)
	if len(r.order) > r.max {
		delete(r.seen, r.order[0])
		r.order = r.order[1:]
	}
}
