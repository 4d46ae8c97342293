package app

import (
	"strconv"
	"sync"
	"time"
)

// Sign-in throttling: after this many failures within the window, further
// attempts for that account (or from that address) are refused until the
// oldest failure leaves the window — even with the right password, so a
// guesser learns nothing from the answer.
const (
	signInWindow         = 15 * time.Minute
	maxAccountFailures   = 5
	maxClientFailures    = 20
	maxThrottledKeys     = 10000
	throttleKeyMaxLength = 80
)

// signInThrottle counts recent failed sign-ins per account and per client
// address, in memory: a restart forgets them, which costs an attacker a
// restart they cannot cause.
type signInThrottle struct {
	mu    sync.Mutex
	fails map[string][]time.Time
}

func newSignInThrottle() *signInThrottle {
	return &signInThrottle{fails: map[string][]time.Time{}}
}

func throttleKeys(user, client string) (acct, addr string) {
	return "u:" + clip(user, throttleKeyMaxLength), "c:" + clip(client, throttleKeyMaxLength)
}

// recent drops failures older than the window and returns the rest.
func (t *signInThrottle) recent(key string, now time.Time) []time.Time {
	list := t.fails[key]
	i := 0
	for i < len(list) && now.Sub(list[i]) > signInWindow {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(t.fails, key)
	} else {
		t.fails[key] = list
	}
	return list
}

func (t *signInThrottle) check(user, client string, now time.Time) error {
	ka, kc := throttleKeys(user, client)
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.recent(ka, now); len(l) >= maxAccountFailures {
		return Errorf(ERATELIMIT, "too many failed sign-ins for this account; try again in %s", waitText(l[0].Add(signInWindow).Sub(now)))
	}
	if client != "" {
		if l := t.recent(kc, now); len(l) >= maxClientFailures {
			return Errorf(ERATELIMIT, "too many failed sign-ins from this address; try again in %s", waitText(l[0].Add(signInWindow).Sub(now)))
		}
	}
	return nil
}

func (t *signInThrottle) fail(user, client string, now time.Time) {
	ka, kc := throttleKeys(user, client)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.fails) >= maxThrottledKeys {
		for k := range t.fails {
			t.recent(k, now)
		}
		for k := range t.fails { // still full: forget arbitrary entries
			if len(t.fails) < maxThrottledKeys {
				break
			}
			delete(t.fails, k)
		}
	}
	t.fails[ka] = append(t.recent(ka, now), now)
	if client != "" {
		t.fails[kc] = append(t.recent(kc, now), now)
	}
}

// succeed forgets an account's failures (the address's stay).
func (t *signInThrottle) succeed(user string) {
	ka, _ := throttleKeys(user, "")
	t.mu.Lock()
	delete(t.fails, ka)
	t.mu.Unlock()
}

func waitText(d time.Duration) string {
	m := int(d.Round(time.Minute) / time.Minute)
	if m <= 1 {
		return "a minute"
	}
	return strconv.Itoa(m) + " minutes"
}
