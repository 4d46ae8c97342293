package app_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/seal"
)

type acctHarness struct {
	svc   *app.Service
	clock *apptest.FakeClock
	store *apptest.MemStore
	op    context.Context
}

func newAcctHarness(t *testing.T, p app.AccountPolicy) *acctHarness {
	t.Helper()
	h := &acctHarness{clock: apptest.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)), store: apptest.NewMemStore()}
	h.svc = app.NewService(app.Deps{Store: h.store, Sandbox: apptest.NewFakeSandbox(), Clock: h.clock,
		Passwords: &apptest.FakeHasher{}}, app.Config{Accounts: p})
	h.op = app.WithActor(context.Background(), app.OperatorActor)
	return h
}

func (h *acctHarness) as(a app.Actor) context.Context { return app.WithActor(context.Background(), a) }

func TestSignUpUsernamesAndBootstrapAdmin(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{})
	if _, _, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "ann", Password: "long enough pw"}); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("sign-up while invite-only: %v", err)
	}
	h = newAcctHarness(t, app.AccountPolicy{SignupOpen: true})
	for _, bad := range []string{"", "ab", strings.Repeat("a", 33), "-ann", "ann smith", "ann/x", "operator", "Admin", "änn"} {
		if _, _, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: bad, Password: "long enough pw"}); app.ErrorCode(err) != app.EINVALID {
			t.Errorf("username %q: %v, want invalid", bad, err)
		}
	}
	for _, bad := range []string{"short", strings.Repeat("p", app.MaxPassword+1)} {
		if _, _, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "ann", Password: bad}); app.ErrorCode(err) != app.EINVALID {
			t.Errorf("password of %d bytes: %v, want invalid", len(bad), err)
		}
	}
	ann, actor, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "Ann", Password: "long enough pw"})
	if err != nil || ann.Username != "ann" || !ann.Admin || actor.Account != ann.ID || !actor.Admin {
		t.Fatalf("first sign-up = %+v %+v %v (want admin)", ann, actor, err)
	}
	if strings.Contains(ann.PasswordHash, "long enough pw") {
		t.Fatal("password stored in clear")
	}
	bob, _, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "bob", Password: "long enough pw"})
	if err != nil || bob.Admin {
		t.Fatalf("second sign-up = %+v %v (want not admin)", bob, err)
	}
	if _, _, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "BOB", Password: "long enough pw"}); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("taken username: %v", err)
	}
	// With admins configured, nobody is promoted by being first.
	h = newAcctHarness(t, app.AccountPolicy{SignupOpen: true, AdminGitHubLogins: []string{"octo"}})
	first, _, _ := h.svc.SignUp(context.Background(), app.NewAccount{Username: "first", Password: "long enough pw"})
	if first.Admin {
		t.Fatal("first account became admin although ADMIN_GITHUB_LOGINS is set")
	}
	octo, err := h.svc.CreateAccount(h.op, app.NewAccount{Username: "octo", GitHubLogin: "Octo"})
	if err != nil || !octo.Admin {
		t.Fatalf("account with an admin GitHub login = %+v %v", octo, err)
	}
	if _, err := h.svc.CreateAccount(h.as(app.Actor{Account: first.ID, Name: "first"}), app.NewAccount{Username: "zed"}); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("a user creating accounts: %v", err)
	}
}

func TestSignInThrottledPerAccountAndAddress(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{SignupOpen: true})
	if _, _, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "ann", Password: "right password"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if a, err := h.svc.SignIn(ctx, "ANN", "right password", "10.0.0.1"); err != nil || a.Name != "ann" {
		t.Fatalf("sign in = %+v %v", a, err)
	}
	for i := 0; i < 5; i++ {
		if _, err := h.svc.SignIn(ctx, "ann", "wrong", fmt.Sprintf("10.0.1.%d", i)); app.ErrorCode(err) != app.EUNAUTHORIZED {
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	_, err := h.svc.SignIn(ctx, "ann", "right password", "10.0.0.1")
	if app.ErrorCode(err) != app.ERATELIMIT || !strings.Contains(app.ErrorMessage(err), "too many failed sign-ins") {
		t.Fatalf("after 5 failures the right password: %v, want rate limited", err)
	}
	if _, err := h.svc.SignIn(ctx, "nobody", "x", "10.0.0.9"); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("unknown user: %v (same answer as a wrong password)", err)
	}
	// A password typed into the username field is not recorded.
	_, _ = h.svc.SignIn(ctx, "MySecretPw1", "x", "10.0.0.8")
	audit, _ := h.svc.Audit(h.op, 100)
	for _, e := range audit {
		if strings.Contains(strings.ToLower(e.Actor+e.Target+e.Detail), "mysecretpw1") {
			t.Fatalf("audit entry records an unknown username: %+v", e)
		}
	}
	h.clock.Advance(16 * time.Minute)
	if _, err := h.svc.SignIn(ctx, "ann", "right password", "10.0.0.1"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	// One address guessing across many accounts is throttled too.
	for i := 0; i < 20; i++ {
		_, _ = h.svc.SignIn(ctx, fmt.Sprintf("user%d", i), "guess", "10.9.9.9")
	}
	if _, err := h.svc.SignIn(ctx, "ann", "right password", "10.9.9.9"); app.ErrorCode(err) != app.ERATELIMIT {
		t.Fatalf("address after 20 failures: %v", err)
	}
	if _, err := h.svc.SignIn(ctx, "ann", "right password", "10.0.0.2"); err != nil {
		t.Fatalf("another address: %v", err)
	}
}

func TestAPIKeysRevokeAndInvites(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{})
	ann, err := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	annCtx := h.as(app.Actor{Account: ann.ID, Name: "ann"})
	k, secret, err := h.svc.CreateAPIKey(annCtx, "laptop")
	if err != nil || !strings.HasPrefix(secret, app.KeyPrefix) || len(secret) != len(app.KeyPrefix)+52 || !strings.HasPrefix(secret, k.Prefix) {
		t.Fatalf("CreateAPIKey = %+v %q %v", k, secret, err)
	}
	a, err := h.svc.AuthenticateKey(context.Background(), secret)
	if err != nil || a.Account != ann.ID || a.Operator {
		t.Fatalf("AuthenticateKey = %+v %v", a, err)
	}
	list, _ := h.svc.APIKeys(annCtx)
	if len(list) != 1 || list[0].LastUsedAt.IsZero() {
		t.Fatalf("keys after use = %+v (last used not recorded)", list)
	}
	for _, bad := range []string{"", "asb_k_", secret[:len(secret)-1], secret + "a", strings.ToUpper(secret), "asb_i_" + secret[6:]} {
		if _, err := h.svc.AuthenticateKey(context.Background(), bad); app.ErrorCode(err) != app.EUNAUTHORIZED {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	// Another user cannot revoke it; its owner can, and it fails at once.
	bob, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "bob"})
	if err := h.svc.RevokeAPIKey(h.as(app.Actor{Account: bob.ID, Name: "bob"}), k.ID); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("bob revoking ann's key: %v", err)
	}
	if err := h.svc.RevokeAPIKey(annCtx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.AuthenticateKey(context.Background(), secret); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("revoked key: %v", err)
	}
	// An operator-account key acts as the operator (single-operator mode).
	_, opKey, _ := h.svc.CreateAPIKey(h.op, "ci")
	if a, err := h.svc.AuthenticateKey(context.Background(), opKey); err != nil || !a.Operator {
		t.Fatalf("operator key = %+v %v", a, err)
	}

	// An invite works once, only at the door, and not as a bearer key.
	inv, err := h.svc.InviteToken(h.op, bob.ID)
	if err != nil || !strings.HasPrefix(inv, app.InvitePrefix) {
		t.Fatalf("InviteToken = %q %v", inv, err)
	}
	if _, err := h.svc.AuthenticateKey(context.Background(), inv); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("invite as an API key: %v", err)
	}
	second, _ := h.svc.InviteToken(h.op, bob.ID) // replaces the first
	if _, err := h.svc.RedeemInvite(context.Background(), inv); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("replaced invite: %v", err)
	}
	if a, err := h.svc.RedeemInvite(context.Background(), second); err != nil || a.Account != bob.ID {
		t.Fatalf("redeem = %+v %v", a, err)
	}
	if _, err := h.svc.RedeemInvite(context.Background(), second); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("second redeem: %v", err)
	}
	// The invited user sets a first password without a current one.
	bobCtx := h.as(app.Actor{Account: bob.ID, Name: "bob"})
	if err := h.svc.SetPassword(bobCtx, "", "bob's new password"); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.SetPassword(bobCtx, "wrong", "another password"); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("change with a wrong current password: %v", err)
	}
	if _, err := h.svc.SignIn(context.Background(), "bob", "bob's new password", ""); err != nil {
		t.Fatal(err)
	}
	third, _ := h.svc.InviteToken(h.op, bob.ID)
	h.clock.Advance(app.InviteTTL + time.Minute)
	if _, err := h.svc.RedeemInvite(context.Background(), third); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("expired invite: %v", err)
	}
	audit, _ := h.svc.Audit(h.op, 100)
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action)
	}
	for _, want := range []string{"user.add", "apikey.create", "apikey.revoke", "user.token", "signin.invite", "password.set", "signin"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("audit log has no %s: %v", want, actions)
		}
	}
}

func TestDevicesRevokeAndExpire(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{})
	ann, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann"})
	annCtx := h.as(app.Actor{Account: ann.ID, Name: "ann"})
	c1, d1, err := h.svc.StartDevice(annCtx, "Firefox", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c2, _, _ := h.svc.StartDevice(annCtx, "Chrome", "10.0.0.2")
	if a, d, err := h.svc.DeviceActor(context.Background(), c1); err != nil || a.Account != ann.ID || d.ID != d1.ID {
		t.Fatalf("DeviceActor = %+v %+v %v", a, d, err)
	}
	list, _ := h.svc.Devices(annCtx)
	if len(list) != 2 {
		t.Fatalf("devices = %+v", list)
	}
	bob, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "bob"})
	if err := h.svc.RevokeDevice(h.as(app.Actor{Account: bob.ID, Name: "bob"}), d1.ID); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("bob revoking ann's device: %v", err)
	}
	if err := h.svc.RevokeDevice(annCtx, d1.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.svc.DeviceActor(context.Background(), c1); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("revoked device: %v", err)
	}
	if _, _, err := h.svc.DeviceActor(context.Background(), c2); err != nil {
		t.Fatalf("the other device: %v", err)
	}
	// Disabling the account signs every device out.
	yes := true
	if _, err := h.svc.ChangeAccount(h.op, ann.ID, app.AccountChange{Disabled: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.svc.DeviceActor(context.Background(), c2); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("disabled account's device: %v", err)
	}
	no := false
	_, _ = h.svc.ChangeAccount(h.op, ann.ID, app.AccountChange{Disabled: &no})
	h.clock.Advance(app.DeviceIdleTTL + time.Minute)
	if _, _, err := h.svc.DeviceActor(context.Background(), c2); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("idle device: %v", err)
	}
}

func TestQuotaIsExactUnderConcurrency(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{UserMaxBoxes: 2})
	ann, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann"})
	bob, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "bob"})
	annCtx := h.as(app.Actor{Account: ann.ID, Name: "ann"})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.svc.Delegate(annCtx, app.DelegateRequest{Task: fmt.Sprintf("task %d", i)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case app.ErrorCode(err) != app.ERATELIMIT || !strings.Contains(app.ErrorMessage(err), "USER_MAX_BOXES=2"):
			t.Errorf("refusal: %v", err)
		}
	}
	if ok != 2 {
		t.Fatalf("%d of 20 parallel delegates started, want exactly 2", ok)
	}
	// Another user has their own quota; the operator has none.
	if _, err := h.svc.Delegate(h.as(app.Actor{Account: bob.ID, Name: "bob"}), app.DelegateRequest{Task: "b"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := h.svc.Delegate(h.op, app.DelegateRequest{Task: "op"}); err != nil {
			t.Fatal(err)
		}
	}
	// Tearing one down frees a slot.
	fleet, _ := h.svc.Fleet(annCtx, app.FleetFilter{})
	if _, err := h.svc.Teardown(annCtx, fleet[0].Session.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Delegate(annCtx, app.DelegateRequest{Task: "again"}); err != nil {
		t.Fatalf("after a teardown: %v", err)
	}
}

func TestLapsedTrialReadsButCannotStartOrResume(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{SignupOpen: true, TrialDays: 7, BillingURL: "https://pay.example.com/up"})
	_, _, _ = h.svc.SignUp(context.Background(), app.NewAccount{Username: "boss", Password: "long enough pw"}) // first: admin
	ann, actor, err := h.svc.SignUp(context.Background(), app.NewAccount{Username: "ann", Password: "long enough pw"})
	if err != nil || !ann.TrialEndsAt.Equal(h.clock.Now().Add(7*24*time.Hour)) {
		t.Fatalf("sign-up trial = %v %v", ann.TrialEndsAt, err)
	}
	annCtx := h.as(actor)
	d, err := h.svc.Delegate(annCtx, app.DelegateRequest{Task: "during the trial"})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(8 * 24 * time.Hour)
	_, err = h.svc.Delegate(annCtx, app.DelegateRequest{Task: "after"})
	if app.ErrorCode(err) != app.EFORBIDDEN || !strings.Contains(app.ErrorMessage(err), "https://pay.example.com/up") {
		t.Fatalf("start after the trial: %v", err)
	}
	if _, _, err := h.svc.Resume(annCtx, d.Session.ID, "more", nil, app.Origin{}); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("resume after the trial: %v", err)
	}
	if _, err := h.svc.Session(annCtx, d.Session.ID); err != nil {
		t.Fatalf("reading after the trial: %v", err)
	}
	pro := app.PlanPro
	if _, err := h.svc.ChangeAccount(h.as(app.Actor{Account: ann.ID, Name: "ann"}), ann.ID, app.AccountChange{Plan: &pro}); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("a user making themself pro: %v", err)
	}
	if _, err := h.svc.ChangeAccount(h.op, ann.ID, app.AccountChange{Plan: &pro}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Delegate(annCtx, app.DelegateRequest{Task: "pro now"}); err != nil {
		t.Fatalf("after make pro: %v", err)
	}
	free := ""
	_, _ = h.svc.ChangeAccount(h.op, ann.ID, app.AccountChange{Plan: &free})
	if _, err := h.svc.FollowUp(annCtx, d.Session.ID, "x", app.Origin{}); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("back on free with a lapsed trial: %v", err)
	}
	if _, err := h.svc.ChangeAccount(h.op, ann.ID, app.AccountChange{ExtendTrialDays: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.FollowUp(annCtx, d.Session.ID, "x", app.Origin{}); err != nil {
		t.Fatalf("after +7d: %v", err)
	}
}

func TestGitHubLoginMapsToAccountElseOperator(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{})
	ann, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann", GitHubLogin: "Ann-GH"})
	if a := h.svc.ActorForGitHubLogin(context.Background(), "ann-gh"); a.Account != ann.ID || a.Operator {
		t.Fatalf("mapped = %+v", a)
	}
	if a := h.svc.ActorForGitHubLogin(context.Background(), "stranger"); !a.Operator || a.Name != "stranger" {
		t.Fatalf("unmapped = %+v", a)
	}
}

func TestInspectionHidesOthersSessions(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{})
	ann, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann"})
	bob, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "bob"})
	d, err := h.svc.Delegate(h.as(app.Actor{Account: ann.ID, Name: "ann"}), app.DelegateRequest{Task: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	bobCtx := h.as(app.Actor{Account: bob.ID, Name: "bob"})
	checks := map[string]func() error{
		"Files":    func() error { _, err := h.svc.Files(bobCtx, d.Session.ID, ""); return err },
		"ReadFile": func() error { return h.svc.ReadFile(bobCtx, d.Session.ID, "x", 10, &strings.Builder{}) },
		"Ask":      func() error { _, err := h.svc.Ask(bobCtx, d.Session.ID, "what?", false); return err },
		"Wait":     func() error { _, err := h.svc.Wait(bobCtx, d.Session.ID, time.Millisecond); return err },
	}
	for name, fn := range checks {
		if err := fn(); app.ErrorCode(err) != app.ENOTFOUND {
			t.Errorf("%s as another user: %v, want not found", name, err)
		}
	}
	if _, err := h.svc.Audit(bobCtx, 10); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Errorf("audit as a user: %v", err)
	}
	if _, err := h.svc.Accounts(bobCtx); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Errorf("accounts as a user: %v", err)
	}
}

func TestAThreadHeldByAnotherUserIsNeitherJoinedNorReplaced(t *testing.T) {
	h := newAcctHarness(t, app.AccountPolicy{})
	ann, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann", GitHubLogin: "ann-gh"})
	bob, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "bob", GitHubLogin: "bob-gh"})
	origin := app.Origin{Kind: app.OriginGitHubComment, Repo: "acme/api", Number: 7}
	d, err := h.svc.Delegate(h.as(app.Actor{Account: ann.ID, Name: "ann"}), app.DelegateRequest{Task: "ann's", Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	bobCtx := h.as(app.Actor{Account: bob.ID, Name: "bob"})
	for _, fresh := range []bool{false, true} {
		if _, err := h.svc.Delegate(bobCtx, app.DelegateRequest{Task: "bob's", Origin: origin, NewSession: fresh}); app.ErrorCode(err) != app.ECONFLICT {
			t.Fatalf("bob on ann's thread (new=%v): %v", fresh, err)
		}
	}
	v, _ := h.svc.Session(h.op, d.Session.ID)
	if v.Session.State != app.SessionActive || len(v.Runs) != 1 {
		t.Fatalf("ann's session changed: %s, %d runs", v.Session.State, len(v.Runs))
	}
	// The operator (and admins) may continue it.
	if d2, err := h.svc.Delegate(h.op, app.DelegateRequest{Task: "op", Origin: origin}); err != nil || !d2.Continued {
		t.Fatalf("operator on the thread: %+v %v", d2, err)
	}
}

func TestSignInWithGitHubLinksCreatesOrRefuses(t *testing.T) {
	prober := apptest.NewFakeProber()
	prober.Add("gho_ann", app.GitHubIdentity{Login: "Ann-GH"})
	prober.Add("gho_octo", app.GitHubIdentity{Login: "octo"})
	prober.Add("gho_zed", app.GitHubIdentity{Login: "zed"})
	mk := func(p app.AccountPolicy) *acctHarness {
		h := &acctHarness{clock: apptest.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)), store: apptest.NewMemStore()}
		h.svc = app.NewService(app.Deps{Store: h.store, Sandbox: apptest.NewFakeSandbox(), Clock: h.clock,
			Passwords: &apptest.FakeHasher{}, GitHub: prober}, app.Config{Accounts: p})
		h.op = app.WithActor(context.Background(), app.OperatorActor)
		return h
	}
	ctx := context.Background()
	// Invite-only: an admin-created user with that login is linked; an admin login gets an account; others are refused.
	h := mk(app.AccountPolicy{AdminGitHubLogins: []string{"octo"}})
	ann, _ := h.svc.CreateAccount(h.op, app.NewAccount{Username: "ann", GitHubLogin: "ann-gh"})
	if a, err := h.svc.SignInWithGitHub(ctx, "gho_ann", "10.0.0.1"); err != nil || a.Account != ann.ID {
		t.Fatalf("linked sign-in = %+v %v", a, err)
	}
	if a, err := h.svc.SignInWithGitHub(ctx, "gho_octo", ""); err != nil || !a.Admin || a.Name != "octo" {
		t.Fatalf("admin login = %+v %v", a, err)
	}
	if _, err := h.svc.SignInWithGitHub(ctx, "gho_zed", ""); app.ErrorCode(err) != app.EFORBIDDEN {
		t.Fatalf("unknown login while invite-only: %v", err)
	}
	if _, err := h.svc.SignInWithGitHub(ctx, "gho_bad", ""); app.ErrorCode(err) != app.EUNAUTHORIZED {
		t.Fatalf("a token GitHub refuses: %v", err)
	}
	// Open sign-up: a new login gets an account; a taken username gets a suffix.
	h = mk(app.AccountPolicy{SignupOpen: true})
	_, _, _ = h.svc.SignUp(ctx, app.NewAccount{Username: "zed", Password: "long enough pw"})
	a, err := h.svc.SignInWithGitHub(ctx, "gho_zed", "")
	if err != nil || a.Name == "zed" || !strings.HasPrefix(a.Name, "zed-") {
		t.Fatalf("open sign-up with a taken name = %+v %v", a, err)
	}
	again, err := h.svc.SignInWithGitHub(ctx, "gho_zed", "")
	if err != nil || again.Account != a.Account {
		t.Fatalf("second GitHub sign-in = %+v %v (want the same account)", again, err)
	}
}

// A GitHub sign-in keeps its token as the account's GitHub identity:
// probed, sealed, listed for that account only.
func TestGitHubSignInKeepsTheTokenAsTheIdentity(t *testing.T) {
	prober := apptest.NewFakeProber()
	prober.Add("gho_ann_signin_token", app.GitHubIdentity{Login: "ann-gh", Orgs: []string{"acme"}})
	keys, err := seal.New(bytes.Repeat([]byte{9}, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	store := apptest.NewMemStore()
	svc := app.NewService(app.Deps{Store: store, Sandbox: apptest.NewFakeSandbox(), Passwords: &apptest.FakeHasher{},
		GitHub: prober, Secrets: keys}, app.Config{Accounts: app.AccountPolicy{SignupOpen: true}})
	a, err := svc.SignInWithGitHub(context.Background(), "gho_ann_signin_token", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	accts, err := svc.GitHubAccounts(app.WithActor(context.Background(), a))
	if err != nil || len(accts) != 1 || accts[0].Login != "ann-gh" || accts[0].Owner != a.Account {
		t.Fatalf("after sign-in: %+v %v", accts, err)
	}
	tok, ok, err := svc.GitHubToken(app.WithActor(context.Background(), a), "ann-gh")
	if err != nil || !ok || tok != "gho_ann_signin_token" {
		t.Fatalf("the stored token does not open: ok %v err %v", ok, err)
	}
	_, bob, err := svc.SignUp(context.Background(), app.NewAccount{Username: "bob", Password: "long enough pw"})
	if err != nil {
		t.Fatal(err)
	}
	if mine, _ := svc.GitHubAccounts(app.WithActor(context.Background(), bob)); len(mine) != 0 {
		t.Fatalf("another user sees the identity: %+v", mine)
	}
}
