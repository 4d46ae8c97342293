package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// The client commands (monitor, watch, ask) talk to a running controller
// over its JSON routes, as any script would. They read:
//
//	ASB_URL         the controller's base URL (default: ASB_PUBLIC_URL, else
//	                one derived from ASB_ADDR)
//	MCP_HTTP_TOKEN  the operator token (default: <ASB_DATA_DIR>/operator.token)

// apiClient calls a controller's JSON routes with the operator token.
type apiClient struct {
	base  *url.URL
	token string
	// tokenHint tells the user how to put the token in a command of their
	// own, without printing the token: "$MCP_HTTP_TOKEN" or "$(cat <file>)".
	tokenHint string
	hc        *http.Client
}

// clientSetupError is a problem with the local configuration, not with the
// controller; the commands exit 2 on it.
type clientSetupError struct{ err error }

func (e clientSetupError) Error() string { return e.err.Error() }
func (e clientSetupError) Unwrap() error { return e.err }

// environValue returns the last KEY=value entry for key, as a shell would.
func environValue(environ []string, key string) (string, bool) {
	val, found := "", false
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			val, found = v, true
		}
	}
	return val, found
}

func newAPIClient(env *environment) (*apiClient, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, clientSetupError{err}
	}
	raw := cfg.PublicURL
	if v, _ := environValue(env.environ, "ASB_URL"); strings.TrimSpace(v) != "" {
		raw = strings.TrimSpace(v)
	}
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" ||
		base.User != nil || base.RawQuery != "" || base.Fragment != "" {
		// A password in the URL is not echoed.
		shown := raw
		if err == nil && base.User != nil {
			shown = base.Redacted()
		}
		return nil, clientSetupError{fmt.Errorf("ASB_URL=%q is not a base URL like http://127.0.0.1:8787 (http or https, no user, query or fragment)", shown)}
	}
	tok, path, _, err := operatorToken(cfg, false)
	if err != nil {
		return nil, clientSetupError{err}
	}
	if tok == "" {
		return nil, clientSetupError{fmt.Errorf("no operator token: set MCP_HTTP_TOKEN, or run 'asb serve' once with ASB_DATA_DIR=%s so it writes %s", cfg.DataDir, path)}
	}
	hint := "$MCP_HTTP_TOKEN"
	if path != "" {
		hint = "$(cat " + path + ")"
	}
	return &apiClient{base: base, token: tok, tokenHint: hint, hc: &http.Client{}}, nil
}

// insecureRemote reports whether the token would cross a network in clear
// text: plain http to a host that is not this machine.
func (c *apiClient) insecureRemote() bool {
	if c.base.Scheme != "http" {
		return false
	}
	h := c.base.Hostname()
	if h == "localhost" {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

func (c *apiClient) url(path string, q url.Values) string {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawQuery = q.Encode()
	return u.String()
}

// apiError is an answer of the controller other than 2xx.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

// readAPIError turns an error response into an apiError, using the JSON
// {"error": …} the routes send and falling back to the status text.
func readAPIError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error string `json:"error"`
	}
	msg := http.StatusText(resp.StatusCode)
	if json.Unmarshal(b, &body) == nil && body.Error != "" {
		msg = body.Error
	} else if s := strings.TrimSpace(string(b)); s != "" {
		msg = clipLine(s, 200)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		msg += "; check MCP_HTTP_TOKEN (or the operator.token file) against the controller's"
	}
	return &apiError{Status: resp.StatusCode, Message: msg}
}

func (c *apiClient) newRequest(ctx context.Context, method, path string, q url.Values, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path, q), rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// reachError explains a transport failure; it names the URL, never the token.
func (c *apiClient) reachError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("cannot reach asb at %s: %v (is 'asb serve' running? ASB_URL sets the address)", c.base.Redacted(), err)
}

// call sends one JSON request and decodes the JSON answer into out.
func (c *apiClient) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	req, err := c.newRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.reachError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readAPIError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("the controller's answer to %s is not the JSON expected: %w", path, err)
	}
	return nil
}

// sseFrame is one Server-Sent Event.
type sseFrame struct {
	ID    string
	Event string
	Data  string
}

// readSSE reads frames from r and hands each to fn until r ends, fn
// fails, or no line (not even a heartbeat) arrives for idle. The
// heartbeat guard finds connections that died without closing.
func readSSE(ctx context.Context, r io.Reader, idle time.Duration, fn func(sseFrame) error) (retry time.Duration, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errIdle := errors.New("no data or heartbeat from the controller for " + idle.String())
	timer := time.AfterFunc(idle, func() { cancel(errIdle) })
	defer timer.Stop()
	lines := make(chan string)
	scanErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		scanErr <- sc.Err()
	}()
	var f sseFrame
	var data []string
	for {
		select {
		case <-ctx.Done():
			return retry, context.Cause(ctx)
		case err := <-scanErr:
			if err == nil {
				err = io.EOF
			}
			return retry, err
		case line := <-lines:
			timer.Reset(idle)
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch {
			case line == "":
				if len(data) > 0 {
					f.Data = strings.Join(data, "\n")
					if err := fn(f); err != nil {
						return retry, err
					}
				}
				f, data = sseFrame{}, nil
			case field == "":
				// A comment: heartbeats and notices.
			case field == "id":
				f.ID = value
			case field == "event":
				f.Event = value
			case field == "data":
				data = append(data, value)
			case field == "retry":
				if ms, err := strconv.Atoi(value); err == nil && ms >= 0 {
					retry = time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
}

// parseArgs parses flags wherever they are among args (the flag package
// stops at the first positional argument) and returns the positionals.
// After "--" everything is positional, so a question may start with "-".
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// clientFlagSet is newFlagSet with a usage line that shows positionals.
func clientFlagSet(env *environment, name, synopsis, about string) *flag.FlagSet {
	fs := newFlagSet(env, name, about)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: asb %s %s\n\n%s\n", name, synopsis, about)
		fmt.Fprintln(fs.Output(), "\nThe controller is found at ASB_URL (default: ASB_PUBLIC_URL, or from ASB_ADDR) and called with\nMCP_HTTP_TOKEN (default: the token file in ASB_DATA_DIR).")
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// connectClient builds the client and reports setup problems; ok is false
// when the command should exit with code.
func connectClient(env *environment, name string) (c *apiClient, code int, ok bool) {
	c, err := newAPIClient(env)
	if err != nil {
		var setup clientSetupError
		if errors.As(err, &setup) && strings.Contains(err.Error(), "\n") {
			printConfigError(env.stderr, err)
		} else {
			fmt.Fprintf(env.stderr, "asb %s: %v\n", name, err)
		}
		return nil, 2, false
	}
	if c.insecureRemote() {
		fmt.Fprintf(env.stderr, "asb %s: warning: %s is plain http to another machine; the token crosses the network unencrypted\n", name, c.base.Redacted())
	}
	return c, 0, true
}

// checkSessionArg validates a session id before it goes anywhere.
func checkSessionArg(env *environment, name, s string) (app.SessionID, bool) {
	id, err := app.ParseSessionID(s)
	if err != nil {
		fmt.Fprintf(env.stderr, "asb %s: %s (got %q)\n", name, app.ErrorMessage(err), clipLine(s, 60))
		return "", false
	}
	return id, true
}

// clipLine keeps the first line of s, at most n bytes (on a rune boundary).
func clipLine(s string, n int) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = strings.TrimSpace(s[:i]), true
	}
	if len(s) > n {
		for n > 0 && s[n]&0xC0 == 0x80 {
			n--
		}
		s, cut = s[:n], true
	}
	if cut {
		s += "…"
	}
	return s
}
