package app

import (
	"context"
	"strings"
	"time"
)

// PlanPro is the paid plan: no trial clock.
const PlanPro = "pro"

// Bounds of account input.
const (
	MinUsername = 3
	MaxUsername = 32
	MinPassword = 10
	MaxPassword = 200
	maxEmail    = 254
)

// AccountStore is the part of Tx that keeps accounts, API keys and
// signed-in browsers. Lookups of a missing row are ENOTFOUND; a second
// account with a taken username (or GitHub login) is ECONFLICT.
type AccountStore interface {
	InsertAccount(a *Account) error
	GetAccount(id AccountID) (Account, error)
	AccountByUsername(username string) (Account, error)
	// AccountByGitHubLogin matches case-insensitively.
	AccountByGitHubLogin(login string) (Account, error)
	UpdateAccount(a *Account) error
	// ListAccounts returns every account, oldest first.
	ListAccounts() ([]Account, error)

	// InsertAPIKey stores a key by the SHA-256 digest of its secret.
	InsertAPIKey(k *APIKey, digest []byte) error
	APIKeyByDigest(digest []byte) (APIKey, error)
	// ListAPIKeys returns an account's keys and invites, newest first.
	ListAPIKeys(account AccountID) ([]APIKey, error)
	// UpdateAPIKey saves LastUsedAt and RevokedAt.
	UpdateAPIKey(k *APIKey) error

	InsertDevice(d *Device, digest []byte) error
	DeviceByDigest(digest []byte) (Device, error)
	// ListDevices returns an account's devices, newest first.
	ListDevices(account AccountID) ([]Device, error)
	// UpdateDevice saves SeenAt and RevokedAt.
	UpdateDevice(d *Device) error
}

// PasswordHasher turns passwords into salted, slow hashes and checks them.
// It is a port because the core imports only the standard library (web
// implements it with scrypt).
type PasswordHasher interface {
	Hash(password string) (string, error)
	// Verify reports whether password matches encoded; a malformed
	// encoding is an error.
	Verify(encoded, password string) (bool, error)
}

// AccountPolicy is how multi-user mode treats accounts (SPEC §6.2).
type AccountPolicy struct {
	// SignupOpen lets anyone create an account (SIGNUP=open).
	SignupOpen bool
	// TrialDays starts a trial of that length at sign-up; 0 means no clock.
	TrialDays int
	// UserMaxBoxes caps a user's active sessions (each holds a box); 0
	// means no cap. The operator and admins are not capped.
	UserMaxBoxes int
	// BillingURL is where a lapsed trial is sent to upgrade.
	BillingURL string
	// AdminGitHubLogins become admins; when empty, the first account does.
	AdminGitHubLogins []string
}

// NewAccountID returns a fresh account id.
func NewAccountID() AccountID { return AccountID(randomID("acc_")) }

// CheckUsername validates a username and returns it lowercased:
// 3-32 of a-z, 0-9, '-' and '_', starting with a letter or digit.
func CheckUsername(s string) (string, error) {
	u := strings.ToLower(strings.TrimSpace(s))
	if len(u) < MinUsername || len(u) > MaxUsername {
		return "", Errorf(EINVALID, "a username is %d to %d characters", MinUsername, MaxUsername)
	}
	for i, c := range u {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_')
		if !ok {
			return "", Errorf(EINVALID, "a username uses only a-z, 0-9, '-' and '_', and starts with a letter or digit")
		}
	}
	if u == string(OperatorAccount) || u == "admin" || u == "root" {
		return "", Errorf(EINVALID, "the username %q is reserved", u)
	}
	return u, nil
}

// CheckPassword bounds a new password without ever echoing it.
func CheckPassword(p string) error {
	if len(p) < MinPassword {
		return Errorf(EINVALID, "a password has at least %d characters", MinPassword)
	}
	if len(p) > MaxPassword {
		return Errorf(EINVALID, "a password has at most %d characters", MaxPassword)
	}
	return nil
}

func checkEmail(e string) (string, error) {
	e = strings.TrimSpace(e)
	if e == "" {
		return "", nil
	}
	at := strings.IndexByte(e, '@')
	if len(e) > maxEmail || at < 1 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n<>\"',;") {
		return "", Errorf(EINVALID, "that email address does not look right")
	}
	return e, nil
}

// actorOf is the identity an account acts as. The operator's own account
// acts as the operator (its keys and devices are the operator's).
func actorOf(a Account) Actor {
	if a.ID == OperatorAccount {
		return OperatorActor
	}
	return Actor{Account: a.ID, Name: a.Username, Admin: a.Admin}
}

// NewAccount is a request to create an account.
type NewAccount struct {
	Username string
	Email    string
	// Password may be empty for an invited account (set with the invite).
	Password    string
	GitHubLogin string
	Admin       bool
}

func (s *Service) hasher() (PasswordHasher, error) {
	if s.passwords == nil {
		return nil, Errorf(EUNAVAILABLE, "accounts with passwords are not enabled on this server")
	}
	return s.passwords, nil
}

// requireAdmin returns the caller if it is the operator or an admin.
func (s *Service) requireAdmin(ctx context.Context) (Actor, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Actor{}, err
	}
	if !a.Operator && !a.Admin {
		return Actor{}, Errorf(EFORBIDDEN, "only admins can manage users")
	}
	return a, nil
}

// CreateAccount adds a user; operator and admins only (invite-only mode).
func (s *Service) CreateAccount(ctx context.Context, req NewAccount) (Account, error) {
	a, err := s.requireAdmin(ctx)
	if err != nil {
		return Account{}, err
	}
	return s.insertAccount(ctx, req, a.Name, "user.add")
}

// SignUp creates an account from the public form when sign-up is open,
// and returns the actor it signs in as.
func (s *Service) SignUp(ctx context.Context, req NewAccount) (Account, Actor, error) {
	if !s.cfg.Accounts.SignupOpen {
		return Account{}, Actor{}, Errorf(EFORBIDDEN, "sign-up is invite-only on this server: ask an admin for an account")
	}
	if req.Password == "" {
		return Account{}, Actor{}, Errorf(EINVALID, "choose a password")
	}
	req.Admin = false
	acct, err := s.insertAccount(ctx, req, "", "user.signup")
	return acct, actorOf(acct), err
}

func (s *Service) insertAccount(ctx context.Context, req NewAccount, by, action string) (Account, error) {
	username, err := CheckUsername(req.Username)
	if err != nil {
		return Account{}, err
	}
	email, err := checkEmail(req.Email)
	if err != nil {
		return Account{}, err
	}
	if req.GitHubLogin != "" && !ValidLogin(req.GitHubLogin) {
		return Account{}, Errorf(EINVALID, "%q is not a GitHub login", clip(req.GitHubLogin, 40))
	}
	now := s.clock.Now()
	acct := Account{ID: NewAccountID(), Username: username, Email: email, GitHubLogin: req.GitHubLogin, CreatedAt: now}
	if req.Password != "" {
		if err := CheckPassword(req.Password); err != nil {
			return Account{}, err
		}
		h, err := s.hasher()
		if err != nil {
			return Account{}, err
		}
		if acct.PasswordHash, err = h.Hash(req.Password); err != nil {
			return Account{}, err
		}
	}
	if d := s.cfg.Accounts.TrialDays; d > 0 {
		acct.TrialEndsAt = now.Add(time.Duration(d) * 24 * time.Hour)
	}
	if by == "" {
		by = username
	}
	err = s.store.Tx(ctx, func(tx Tx) error {
		acct.Admin = req.Admin || s.adminLogin(req.GitHubLogin)
		if len(s.cfg.Accounts.AdminGitHubLogins) == 0 && !acct.Admin {
			// Bootstrap: with no admins configured, the first account is one.
			all, err := tx.ListAccounts()
			if err != nil {
				return err
			}
			first := true
			for _, o := range all {
				if o.ID != OperatorAccount {
					first = false
				}
			}
			acct.Admin = first
		}
		if err := tx.InsertAccount(&acct); err != nil {
			if ErrorCode(err) == ECONFLICT {
				return Errorf(ECONFLICT, "the username %q is taken", username)
			}
			return err
		}
		detail := ""
		if acct.Admin {
			detail = "admin"
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: by, Action: action, Target: username, Detail: detail})
	})
	if err != nil {
		return Account{}, err
	}
	s.log.Info("account created", "account", acct.ID, "username", username, "by", by, "admin", acct.Admin)
	return acct, nil
}

func (s *Service) adminLogin(login string) bool {
	if login == "" {
		return false
	}
	for _, l := range s.cfg.Accounts.AdminGitHubLogins {
		if strings.EqualFold(l, login) {
			return true
		}
	}
	return false
}

// Me returns the caller's account.
func (s *Service) Me(ctx context.Context) (Account, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Account{}, err
	}
	var acct Account
	err = s.store.View(ctx, func(tx Tx) error {
		acct, err = tx.GetAccount(a.Account)
		return err
	})
	return acct, err
}

// SignIn checks a username and password and returns the actor they sign
// in as. Failures are throttled per account and per client address; the
// answer never says whether the username exists.
func (s *Service) SignIn(ctx context.Context, username, password, client string) (Actor, error) {
	h, err := s.hasher()
	if err != nil {
		return Actor{}, err
	}
	user := strings.ToLower(strings.TrimSpace(username))
	if len(user) > MaxUsername || len(password) > MaxPassword {
		return Actor{}, Errorf(EUNAUTHORIZED, "wrong username or password")
	}
	now := s.clock.Now()
	if err := s.throttle.check(user, client, now); err != nil {
		return Actor{}, err
	}
	var acct Account
	err = s.store.View(ctx, func(tx Tx) error {
		acct, err = tx.AccountByUsername(user)
		return err
	})
	if err != nil && ErrorCode(err) != ENOTFOUND {
		return Actor{}, err
	}
	encoded := acct.PasswordHash
	if encoded == "" {
		// Spend the same time as a real check, so timing does not tell
		// which usernames exist.
		encoded = s.dummyHash(h)
	}
	ok, verr := h.Verify(encoded, password)
	if verr != nil {
		s.log.Error("password check failed", "account", acct.ID, "err", verr)
	}
	if !ok || verr != nil || acct.PasswordHash == "" || acct.Disabled {
		s.throttle.fail(user, client, now)
		// Only a real username is recorded: a password typed into the
		// username field must not land in the audit log.
		who := "unknown user"
		if acct.ID != "" {
			who = acct.Username
		}
		s.audit(ctx, AuditEntry{At: now, Actor: who, Action: "signin.fail", Detail: clip(client, 64)})
		return Actor{}, Errorf(EUNAUTHORIZED, "wrong username or password")
	}
	s.throttle.succeed(user)
	s.audit(ctx, AuditEntry{At: now, Actor: acct.Username, Action: "signin", Detail: clip(client, 64)})
	return actorOf(acct), nil
}

// dummyHash is a valid hash of a random password, made once.
func (s *Service) dummyHash(h PasswordHasher) string {
	s.dummyOnce.Do(func() {
		s.dummy, _ = h.Hash(randomID("dummy_"))
	})
	return s.dummy
}

// SetPassword changes the caller's password. current must match unless
// the account has none yet (an invited user setting their first).
func (s *Service) SetPassword(ctx context.Context, current, next string) error {
	a, err := s.actor(ctx)
	if err != nil {
		return err
	}
	h, err := s.hasher()
	if err != nil {
		return err
	}
	if err := CheckPassword(next); err != nil {
		return err
	}
	acct, err := s.Me(ctx)
	if err != nil {
		return err
	}
	if acct.ID == OperatorAccount {
		return Errorf(EINVALID, "the operator signs in with the operator token and has no password")
	}
	if acct.PasswordHash != "" {
		ok, err := h.Verify(acct.PasswordHash, current)
		if err != nil || !ok {
			return Errorf(EFORBIDDEN, "the current password is wrong")
		}
	}
	encoded, err := h.Hash(next)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	return s.store.Tx(ctx, func(tx Tx) error {
		cur, err := tx.GetAccount(a.Account)
		if err != nil {
			return err
		}
		cur.PasswordHash = encoded
		if err := tx.UpdateAccount(&cur); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: "password.set", Target: cur.Username})
	})
}

// audit appends one entry in its own transaction; a failure is logged.
func (s *Service) audit(ctx context.Context, e AuditEntry) {
	if err := s.store.Tx(ctx, func(tx Tx) error { return tx.AppendAudit(e) }); err != nil {
		s.log.Warn("audit entry lost", "action", e.Action, "err", err)
	}
}
