package app

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// MCPServer is an HTTP MCP server an owner wants their agents to use:
// every turn launched in one of the owner's boxes is given it. It never
// carries the header values (they often hold an API key): those are
// sealed in the store and opened only for a launch.
type MCPServer struct {
	// ID is "mcp_" followed by lowercase base32.
	ID    string    `json:"id"`
	Owner AccountID `json:"owner"`
	// Name is how the agent knows the server (its tools are mcp__<name>__*).
	Name string `json:"name"`
	URL  string `json:"url"`
	// HeaderNames are the names of the sealed headers, for display.
	HeaderNames []string  `json:"header_names,omitempty"`
	AddedAt     time.Time `json:"added_at"`
}

// MCPServerInput is what an owner submits to add (or replace, by name)
// an MCP server.
type MCPServerInput struct {
	Name    string            `json:"name"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// BoxMCPServer is an MCP server with its opened headers, for one launch.
type BoxMCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
}

// Bounds on what an owner may store.
const (
	MaxMCPServers        = 20
	MaxMCPHeaders        = 20
	MaxMCPHeaderValue    = 8 << 10
	maxMCPServerURL      = 2048
	maxMCPServerNameLen  = 64
	maxMCPHeaderNameLen  = 100
	mcpServerLabelPrefix = "mcp-server:"
)

// NewMCPServerID returns a fresh MCP server id.
func NewMCPServerID() string { return randomID("mcp_") }

func mcpServerLabel(id string) string { return mcpServerLabelPrefix + id }

// CheckMCPServer validates an MCP server from outside. Errors never echo
// a header value.
func CheckMCPServer(in MCPServerInput) error {
	if in.Name == "" || len(in.Name) > maxMCPServerNameLen {
		return Errorf(EINVALID, "name must be 1 to %d characters", maxMCPServerNameLen)
	}
	for _, c := range in.Name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return Errorf(EINVALID, "name may hold only letters, digits, '-' and '_'")
		}
	}
	if in.URL == "" || len(in.URL) > maxMCPServerURL {
		return Errorf(EINVALID, "url must be 1 to %d characters", maxMCPServerURL)
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return Errorf(EINVALID, "url must be an http:// or https:// address")
	}
	if u.User != nil {
		return Errorf(EINVALID, "url must not carry credentials; put them in a header such as Authorization")
	}
	if u.Fragment != "" || strings.ContainsAny(in.URL, " \x00\r\n\t") {
		return Errorf(EINVALID, "url must not contain a fragment or blanks")
	}
	if len(in.Headers) > MaxMCPHeaders {
		return Errorf(EINVALID, "at most %d headers", MaxMCPHeaders)
	}
	for k, v := range in.Headers {
		if k == "" || len(k) > maxMCPHeaderNameLen || !headerToken(k) {
			return Errorf(EINVALID, "header names must be 1 to %d letters, digits or one of !#$%%&'*+-.^_`|~", maxMCPHeaderNameLen)
		}
		if len(v) > MaxMCPHeaderValue {
			return Errorf(EINVALID, "header %s: value longer than %d bytes", k, MaxMCPHeaderValue)
		}
		for _, c := range v {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return Errorf(EINVALID, "header %s: value holds a control character", k)
			}
		}
	}
	return nil
}

// headerToken reports whether s is an RFC 9110 field name.
func headerToken(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

// AddMCPServer seals and stores an MCP server for the caller. A server of
// the same name (compared case-insensitively) is replaced.
func (s *Service) AddMCPServer(ctx context.Context, in MCPServerInput) (MCPServer, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return MCPServer{}, err
	}
	if err := CheckMCPServer(in); err != nil {
		return MCPServer{}, err
	}
	if s.sealer == nil {
		return MCPServer{}, Errorf(EUNAVAILABLE, "storing MCP servers is not configured on this controller")
	}
	headers := in.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	plain, err := json.Marshal(headers)
	if err != nil {
		return MCPServer{}, WrapError(EINTERNAL, err, "cannot encode the headers")
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	now := s.clock.Now()
	m := MCPServer{Owner: a.Account, Name: in.Name, URL: in.URL, HeaderNames: names, AddedAt: now}
	err = s.store.Tx(ctx, func(tx Tx) error {
		mine, err := tx.ListMCPServers(a.Account)
		if err != nil {
			return err
		}
		m.ID = NewMCPServerID()
		replaced := false
		for _, o := range mine {
			if strings.EqualFold(o.Name, in.Name) {
				m.ID, replaced = o.ID, true
			}
		}
		if !replaced && len(mine) >= MaxMCPServers {
			return Errorf(EFORBIDDEN, "at most %d MCP servers per owner; remove one first", MaxMCPServers)
		}
		sealed, err := s.sealer.Seal(plain, mcpServerLabel(m.ID))
		if err != nil {
			return WrapError(EINTERNAL, err, "cannot seal the headers")
		}
		if err := tx.PutMCPServer(m, sealed); err != nil {
			return err
		}
		action := "mcp.server.add"
		if replaced {
			action = "mcp.server.replace"
		}
		return tx.AppendAudit(AuditEntry{At: now, Actor: a.Name, Action: action, Target: m.ID,
			Detail: "name=" + m.Name + " headers=" + strings.Join(names, ",")})
	})
	if err != nil {
		return MCPServer{}, err
	}
	return m, nil
}

// MCPServers lists the caller's MCP servers (every owner's for the
// operator and admins), by name.
func (s *Service) MCPServers(ctx context.Context) ([]MCPServer, error) {
	return listOwned(ctx, s, Tx.ListMCPServers)
}

// RemoveMCPServer forgets an MCP server and its headers. Servers the
// caller may not see are ENOTFOUND.
func (s *Service) RemoveMCPServer(ctx context.Context, id string) error {
	return s.removeOwned(ctx, ownedKind{prefix: "mcp_", noun: "MCP server", action: "mcp.server.remove",
		badID: "MCP server id must look like mcp_ followed by lowercase letters or digits"}, id,
		func(tx Tx, id string) (AccountID, string, error) {
			m, _, err := tx.GetMCPServer(id)
			return m.Owner, "name=" + m.Name, err
		}, Tx.DeleteMCPServer)
}

// boxMCPServers opens the MCP servers owner stored, for a launch in one of
// owner's boxes. Without a sealer nothing can have been stored.
func (s *Service) boxMCPServers(ctx context.Context, owner AccountID) ([]BoxMCPServer, error) {
	if s.sealer == nil || owner == "" {
		return nil, nil
	}
	var out []BoxMCPServer
	err := s.store.View(ctx, func(tx Tx) error {
		list, err := tx.ListMCPServers(owner)
		if err != nil {
			return err
		}
		for _, m := range list {
			_, sealed, err := tx.GetMCPServer(m.ID)
			if err != nil {
				return err
			}
			// A server whose headers cannot be opened (the secrets key
			// changed) is left out: the run goes on without its tools.
			plain, err := s.sealer.Open(sealed, mcpServerLabel(m.ID))
			var h map[string]string
			if err == nil {
				err = json.Unmarshal(plain, &h)
			}
			if err != nil {
				s.log.Error("cannot open an MCP server's headers; the run goes on without it", "server", m.ID, "name", m.Name, "err", err)
				continue
			}
			out = append(out, BoxMCPServer{Name: m.Name, URL: m.URL, Headers: h})
		}
		return nil
	})
	return out, err
}

// mcpEgress is the session's extra egress domains plus the hosts of its
// owner's https MCP servers on port 443 (the only port an egress rule
// opens), so that a box with closed egress can reach them. Rules are set
// when a box boots: a server added later reaches the next box.
func (s *Service) mcpEgress(ctx context.Context, sess Session) ([]string, error) {
	var list []MCPServer
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		list, err = tx.ListMCPServers(sess.Owner)
		return err
	})
	if err != nil || len(list) == 0 {
		return sess.AllowDomains, err
	}
	out := append([]string(nil), sess.AllowDomains...)
	for _, m := range list {
		u, err := url.Parse(m.URL)
		if err != nil || u.Scheme != "https" || (u.Port() != "" && u.Port() != "443") {
			continue
		}
		host := strings.ToLower(u.Hostname())
		if CheckDomain(host) == nil && !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out, nil
}
