package app

import (
	"fmt"
	"time"
)

// gate decides, inside the transaction that starts or resumes work,
// whether the caller's plan and quota allow it. newSession is true when
// the work needs a new session (and so a new box). Running inside that
// transaction (SQLite's write lock) makes the quota exact under
// concurrent requests. The operator and admins are never gated.
func (s *Service) gate(tx Tx, a Actor, newSession bool, now time.Time) error {
	if a.Operator || a.Admin || a.Account == OperatorAccount {
		return nil
	}
	acct, err := tx.GetAccount(a.Account)
	if ErrorCode(err) == ENOTFOUND {
		// An actor without an account row (tests, tools) has no plan to check.
		return nil
	}
	if err != nil {
		return err
	}
	if acct.Disabled {
		return Errorf(EFORBIDDEN, "this account is disabled")
	}
	if acct.Plan != PlanPro && !acct.TrialEndsAt.IsZero() && !now.Before(acct.TrialEndsAt) {
		msg := fmt.Sprintf("your free trial ended on %s: you can still read everything, but starting or resuming runs needs the pro plan",
			acct.TrialEndsAt.UTC().Format("2006-01-02"))
		if u := s.cfg.Accounts.BillingURL; u != "" {
			msg += "; upgrade at " + u
		} else {
			msg += "; ask an admin to upgrade you"
		}
		return Errorf(EFORBIDDEN, "%s", msg)
	}
	if max := s.cfg.Accounts.UserMaxBoxes; newSession && max > 0 {
		active, err := tx.ListSessions(SessionFilter{Owner: a.Account, State: SessionActive, Limit: max + 1})
		if err != nil {
			return err
		}
		if len(active) >= max {
			return Errorf(ERATELIMIT, "you have %d active sessions, the most USER_MAX_BOXES=%d allows: tear one down first", len(active), max)
		}
	}
	return nil
}

// Trial describes an account's plan for display.
func (a Account) Trial(now time.Time) string {
	switch {
	case a.Plan == PlanPro:
		return "pro"
	case a.TrialEndsAt.IsZero():
		return "free"
	case now.Before(a.TrialEndsAt):
		return "trial until " + a.TrialEndsAt.UTC().Format("2006-01-02")
	default:
		return "trial ended " + a.TrialEndsAt.UTC().Format("2006-01-02")
	}
}

// Lapsed reports whether the account's trial is over without a plan.
func (a Account) Lapsed(now time.Time) bool {
	return a.Plan != PlanPro && !a.TrialEndsAt.IsZero() && !now.Before(a.TrialEndsAt)
}
