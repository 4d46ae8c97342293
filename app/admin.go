package app

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// AccountsInfo is what the dashboard needs to know about the policy.
func (s *Service) AccountsInfo() AccountPolicy { return s.cfg.Accounts }

// Accounts lists every account; operator and admins only.
func (s *Service) Accounts(ctx context.Context) ([]Account, error) {
	if _, err := s.requireAdmin(ctx); err != nil {
		return nil, err
	}
	var out []Account
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.ListAccounts()
		return err
	})
	return out, err
}

// FindAccount returns an account by username; operator and admins only.
func (s *Service) FindAccount(ctx context.Context, username string) (Account, error) {
	if _, err := s.requireAdmin(ctx); err != nil {
		return Account{}, err
	}
	u := strings.ToLower(strings.TrimSpace(username))
	if len(u) > MaxUsername {
		return Account{}, Errorf(EINVALID, "a username is at most %d characters", MaxUsername)
	}
	var out Account
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		out, err = tx.AccountByUsername(u)
		if ErrorCode(err) == ENOTFOUND {
			return Errorf(ENOTFOUND, "no user %q", u)
		}
		return err
	})
	return out, err
}

// AccountChange is an admin's change to an account; nil fields stay.
type AccountChange struct {
	// Plan is PlanPro or "" (free, with whatever trial is left).
	Plan *string
	// ExtendTrialDays pushes the trial's end this many days past the
	// later of now and its current end.
	ExtendTrialDays int
	Disabled        *bool
	Admin           *bool
}

// ChangeAccount applies an admin's change; operator and admins only.
func (s *Service) ChangeAccount(ctx context.Context, id AccountID, c AccountChange) (Account, error) {
	a, err := s.requireAdmin(ctx)
	if err != nil {
		return Account{}, err
	}
	if c.Plan != nil && *c.Plan != "" && *c.Plan != PlanPro {
		return Account{}, Errorf(EINVALID, "a plan is %q or empty (free)", PlanPro)
	}
	if c.ExtendTrialDays < 0 || c.ExtendTrialDays > 3650 {
		return Account{}, Errorf(EINVALID, "extend a trial by 1 to 3650 days")
	}
	now := s.clock.Now()
	var out Account
	err = s.store.Tx(ctx, func(tx Tx) error {
		acct, err := tx.GetAccount(id)
		if err != nil {
			return err
		}
		if acct.ID == OperatorAccount {
			return Errorf(EINVALID, "the operator account cannot be changed")
		}
		var what []string
		if c.Plan != nil {
			acct.Plan = *c.Plan
			what = append(what, "plan="+planName(*c.Plan))
		}
		if d := c.ExtendTrialDays; d > 0 {
			from := acct.TrialEndsAt
			if from.Before(now) {
				from = now
			}
			acct.TrialEndsAt = from.Add(time.Duration(d) * 24 * time.Hour)
			what = append(what, fmt.Sprintf("trial+%dd", d))
		}
		if c.Disabled != nil {
			if *c.Disabled && acct.ID == a.Account {
				return Errorf(EINVALID, "you cannot disable your own account")
			}
			acct.Disabled = *c.Disabled
			what = append(what, fmt.Sprintf("disabled=%t", *c.Disabled))
		}
		if c.Admin != nil {
			acct.Admin = *c.Admin
			what = append(what, fmt.Sprintf("admin=%t", *c.Admin))
		}
		if len(what) == 0 {
			return Errorf(EINVALID, "nothing to change")
		}
		if err := tx.UpdateAccount(&acct); err != nil {
			return err
		}
		out = acct
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "user.change", Target: acct.Username, Detail: strings.Join(what, " ")})
	})
	return out, err
}

func planName(p string) string {
	if p == "" {
		return "free"
	}
	return p
}

// ActorForGitHubLogin maps a GitHub login (a commenter) to the account
// that claims it, or to the operator when none does. It needs no caller:
// the GitHub surface has already checked the login's repository access.
func (s *Service) ActorForGitHubLogin(ctx context.Context, login string) Actor {
	op := OperatorActor
	if login == "" || !ValidLogin(login) {
		return op
	}
	op.Name = login
	var acct Account
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		acct, err = tx.AccountByGitHubLogin(login)
		return err
	})
	if err != nil || acct.Disabled || acct.ID == OperatorAccount {
		if err != nil && ErrorCode(err) != ENOTFOUND {
			s.log.Warn("map GitHub login to an account", "login", login, "err", err)
		}
		return op
	}
	return actorOf(acct)
}
