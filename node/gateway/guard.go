package gateway

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// guard refuses, before any route runs, what a web page or a stranger could
// send: a Host that is not the gateway's address (DNS rebinding), an
// Origin that is not the gateway itself (a cross-site request), and a
// request from off loopback without the token.
func (s *Server) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !s.hosts.allows(req.Host, "") {
			return refuse(c, http.StatusForbidden, kindForbidden, fmt.Sprintf(
				"Host %q is not this gateway's address (%s); call it by its address, or add the name to consumer.gateway.hosts", printable(req.Host), s.hosts))
		}
		if origin := req.Header.Get("Origin"); origin != "" && !s.hosts.allowsOrigin(origin) {
			return refuse(c, http.StatusForbidden, kindForbidden, fmt.Sprintf(
				"cross-origin request from %q refused; the gateway is not for web pages", printable(origin)))
		}
		if !loopbackPeer(req.RemoteAddr) {
			if s.opts.Token == "" {
				return refuse(c, http.StatusForbidden, kindForbidden,
					"calls from other hosts need consumer.gateway.token to be set")
			}
			if !bearer(req.Header.Get("Authorization"), s.opts.Token) {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="dubbo gateway"`)
				return refuse(c, http.StatusUnauthorized, kindUnauthorized,
					"calls from other hosts must send Authorization: Bearer <consumer.gateway.token>")
			}
		}
		return next(c)
	}
}

// bearer reports whether header is "Bearer <token>", in constant time.
func bearer(header, token string) bool {
	scheme, got, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// checkJSON accepts application/json (with parameters such as charset);
// anything else is what a cross-site form or fetch can send without a
// preflight.
func checkJSON(contentType string) error {
	if contentType == "" {
		return errors.New("send the arguments with Content-Type: application/json")
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("the Content-Type %q is not application/json; send the arguments as JSON with Content-Type: application/json", printable(contentType))
	}
	return nil
}

// hostPolicy is what a request's Host (and Origin) may name: the listen
// port, with an IP literal of the listen address (any IP literal when it
// listens on every interface), localhost when it listens on loopback or
// every interface, or one of the configured names.
type hostPolicy struct {
	listen   string
	port     string
	ip       net.IP // nil: a name, see name
	name     string // the listen host when it is not an IP literal
	extra    map[string]bool
	loopback bool // the listen address is loopback (or localhost)
	anyIP    bool // the listen address is 0.0.0.0 or ::
}

func newHostPolicy(listen string, extra []string) *hostPolicy {
	p := &hostPolicy{listen: listen, extra: map[string]bool{}}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return p // allows nothing
	}
	p.port = port
	if ip := net.ParseIP(host); ip != nil {
		p.ip, p.loopback, p.anyIP = ip, ip.IsLoopback(), ip.IsUnspecified()
	} else {
		p.name = strings.ToLower(host)
		p.loopback = p.name == "localhost"
		p.anyIP = host == ""
	}
	for _, h := range extra {
		p.extra[strings.ToLower(strings.TrimSpace(h))] = true
	}
	return p
}

func (p *hostPolicy) String() string {
	if len(p.extra) == 0 {
		return p.listen
	}
	names := make([]string, 0, len(p.extra))
	for h := range p.extra {
		names = append(names, h)
	}
	return p.listen + " or " + strings.Join(names, ", ")
}

// allows reports whether hostport names the gateway; a missing port is
// defaultPort (the scheme's), else 80.
func (p *hostPolicy) allows(hostport, defaultPort string) bool {
	if p.port == "" || hostport == "" {
		return false
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.Trim(hostport, "[]"), defaultPort
		if port == "" {
			port = "80"
		}
	}
	host = strings.ToLower(host)
	if p.extra[host] || p.extra[net.JoinHostPort(host, port)] {
		return true
	}
	if port != p.port {
		return false
	}
	if host == "localhost" {
		return p.loopback || p.anyIP
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host == p.name && p.name != ""
	}
	switch {
	case p.anyIP:
		return true
	case p.loopback:
		return ip.IsLoopback()
	default:
		return p.ip != nil && ip.Equal(p.ip)
	}
}

// allowsOrigin reports whether an Origin header is the gateway's own.
func (p *hostPolicy) allowsOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil {
		return false // includes "null", sent by sandboxed and file pages
	}
	switch u.Scheme {
	case "http":
		return p.allows(u.Host, "80")
	case "https":
		return p.allows(u.Host, "443")
	}
	return false
}

// loopbackListen reports whether listen only accepts connections from this
// host.
func loopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackPeer reports whether a request's RemoteAddr is on this host.
func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// printable shortens what a client sent before it goes into a message.
func printable(s string) string {
	const max = 100
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
