package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"
)

// Cookie names.
const (
	sessionCookie = "dubbo_console_session"
	userCookie    = "dubbo_console_user"
	csrfCookie    = "dubbo_console_csrf"
	csrfField     = "csrf"
)

// HeaderUser names the person behind an API change, for the rules'
// history ("alice (console.token)"); the login form asks for it too.
const HeaderUser = "X-Dubbo-User"

// access is what a request may do.
type access int

const (
	accessNone  access = iota
	accessRead         // the read token: look, change nothing
	accessWrite        // the token, or no token configured
)

// contentSecurityPolicy allows the console's own scripts, styles and
// images only: no outside source, no inline script, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (c *Console) secureHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		h := ec.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: with no-referrer Chromium sends "Origin: null"
		// on the console's own form posts, which the origin check must refuse.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		return next(ec)
	}
}

// changing reports whether a method may change something.
func changing(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// simpleForm reports whether a content type is one a page of another
// origin can send without asking (an HTML form or a no-cors fetch).
func simpleForm(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType != ""
	}
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return true
	}
	return false
}

// guard refuses changing requests from another origin, forms without
// their CSRF token, and, when a token is configured, changes without it.
// On a console listening beyond loopback, reading needs a token too
// (console.token or console.read-token), but for the login page and the
// stylesheet and script. A change goes on with its actor (who made it)
// in the request's context, for the rules' history.
func (c *Console) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		r := ec.Request()
		level := c.accessOf(r)
		if !changing(r.Method) {
			if c.open && level == accessNone && !public(r.URL.Path) {
				return c.needToken(ec, "reading this console needs a token: Authorization: Bearer <console.token or console.read-token>")
			}
			return next(ec)
		}
		if err := sameOrigin(r); err != nil {
			return echo.NewHTTPError(http.StatusForbidden, err.Error())
		}
		if simpleForm(r.Header.Get(echo.HeaderContentType)) && !c.validCSRF(ec) {
			return echo.NewHTTPError(http.StatusForbidden,
				"form without a valid CSRF token refused; reload the page and submit again (API clients: send JSON or YAML)")
		}
		switch {
		case r.URL.Path == "/login" || r.URL.Path == "/logout":
			return next(ec)
		case level == accessWrite:
			ec.SetRequest(r.WithContext(withActor(r.Context(), c.actorOf(r))))
			return next(ec)
		case level == accessRead:
			return echo.NewHTTPError(http.StatusForbidden, "the read-only token (console.read-token) makes no changes: log in with console.token")
		}
		return c.needToken(ec, "this change needs the console token: Authorization: Bearer <console.token>")
	}
}

// needToken refuses a request without the token it needs: the API with
// 401, a page by sending the browser to the login form.
func (c *Console) needToken(ec echo.Context, msg string) error {
	r := ec.Request()
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/metrics" || !c.hasPages() {
		ec.Response().Header().Set("WWW-Authenticate", `Bearer realm="dubbo console"`)
		return echo.NewHTTPError(http.StatusUnauthorized, msg)
	}
	next := backTo(r)
	if !changing(r.Method) {
		next = r.URL.RequestURI()
	}
	return ec.Redirect(http.StatusSeeOther, "/login?next="+neturl.QueryEscape(next))
}

// public reports whether anyone may read path: the login page, and the
// stylesheet and script it needs.
func public(path string) bool { return path == "/login" || strings.HasPrefix(path, "/static/") }

// backTo is the page to return to after logging in.
func backTo(r *http.Request) string {
	if ref := r.Header.Get("Referer"); ref != "" {
		if u, err := neturl.Parse(ref); err == nil && u.Host == r.Host {
			return u.RequestURI()
		}
	}
	return "/"
}

// sameOrigin refuses a request whose Origin (or Sec-Fetch-Site) says
// another site sent it.
func sameOrigin(r *http.Request) error {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return errors.New("cross-site request refused")
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := neturl.Parse(o)
	if err != nil || o == "null" || !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("request from origin %q refused: changes must come from the console's own pages", o)
	}
	return nil
}

// accessOf is what the request may do: change with the token (as
// "Authorization: Bearer" or the login cookie), read with the read token;
// without a token configured, anything.
func (c *Console) accessOf(r *http.Request) access {
	if c.opts.Token == "" {
		return accessWrite
	}
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		got := []byte(strings.TrimPrefix(h, "Bearer "))
		switch {
		case subtle.ConstantTimeCompare(got, []byte(c.opts.Token)) == 1:
			return accessWrite
		case c.opts.ReadToken != "" && subtle.ConstantTimeCompare(got, []byte(c.opts.ReadToken)) == 1:
			return accessRead
		}
		return accessNone
	}
	ck, err := r.Cookie(sessionCookie)
	switch {
	case err != nil:
		return accessNone
	case hmac.Equal([]byte(ck.Value), []byte(sessionValue(c.opts.Token, "dubbo-console-session"))):
		return accessWrite
	case c.opts.ReadToken != "" && hmac.Equal([]byte(ck.Value), []byte(sessionValue(c.opts.ReadToken, "dubbo-console-read-session"))):
		return accessRead
	}
	return accessNone
}

// sessionValue is a login cookie: derived from the token it was given
// for, so it does not reveal it and survives restarts, and changes when
// the token does.
func sessionValue(token, purpose string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(purpose))
	return hex.EncodeToString(m.Sum(nil))
}

// actor is who makes a change: what the rules' history records.
type actor struct {
	Who    string // "alice (console.token)", "console.token", "no token (loopback)"
	Client string // the client's address
}

type actorKey struct{}

func withActor(ctx context.Context, a actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// actorIn is the actor of a change; the zero actor outside a request.
func actorIn(ctx context.Context) actor {
	a, _ := ctx.Value(actorKey{}).(actor)
	return a
}

// actorOf names who makes a change with r: the credential, with the name
// the person gave (the login form's, or the X-Dubbo-User header).
func (c *Console) actorOf(r *http.Request) actor {
	a := actor{Who: "no token (loopback)", Client: r.RemoteAddr}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		a.Client = host
	}
	if c.opts.Token == "" {
		return a
	}
	a.Who = "console.token"
	name := r.Header.Get(HeaderUser)
	if ck, err := r.Cookie(userCookie); err == nil && name == "" {
		name = c.userOf(ck.Value)
	}
	if name = cleanUser(name); name != "" {
		a.Who = name + " (console.token)"
	}
	return a
}

// cleanUser keeps a user name short and printable.
func cleanUser(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.TrimSpace(s))
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// userCookieValue signs the name given at login with the token, so that
// only a login sets it.
func (c *Console) userCookieValue(name string) string {
	return neturl.QueryEscape(name) + "." + sessionValue(c.opts.Token, "dubbo-console-user:"+name)
}

// userOf reads the user cookie; "" when it is not one the console set.
func (c *Console) userOf(v string) string {
	enc, sig, ok := strings.Cut(v, ".")
	name, err := neturl.QueryUnescape(enc)
	if !ok || err != nil || !hmac.Equal([]byte(sig), []byte(sessionValue(c.opts.Token, "dubbo-console-user:"+name))) {
		return ""
	}
	return name
}

// csrfToken returns the form token of this browser, setting its cookie
// on first use (double submit: the token is the cookie signed by a key
// only this process knows).
func (c *Console) csrfToken(ec echo.Context) string {
	id := ""
	if ck, err := ec.Request().Cookie(csrfCookie); err == nil && len(ck.Value) == 32 {
		id = ck.Value
	} else {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
		ec.SetCookie(&http.Cookie{Name: csrfCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		// Visible to this request's handlers too.
		ec.Request().AddCookie(&http.Cookie{Name: csrfCookie, Value: id})
	}
	return c.sign(id)
}

func (c *Console) sign(id string) string {
	m := hmac.New(sha256.New, c.csrfKey)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

func (c *Console) validCSRF(ec echo.Context) bool {
	ck, err := ec.Request().Cookie(csrfCookie)
	if err != nil {
		return false
	}
	got := ec.FormValue(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(c.sign(ck.Value)))
}

func (c *Console) pageLogin(ec echo.Context) error {
	return c.render(ec, http.StatusOK, loginPage{Next: safeNext(ec.QueryParam("next")), Open: c.open, ReadToken: c.opts.ReadToken != ""})
}

func (c *Console) formLogin(ec echo.Context) error {
	next := safeNext(ec.FormValue("next"))
	if c.opts.Token == "" {
		return ec.Redirect(http.StatusSeeOther, next)
	}
	token := []byte(ec.FormValue("token"))
	secure := ec.Request().TLS != nil
	cookie := func(name, value string) {
		ec.SetCookie(&http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure, MaxAge: 12 * 3600})
	}
	switch {
	case subtle.ConstantTimeCompare(token, []byte(c.opts.Token)) == 1:
		cookie(sessionCookie, sessionValue(c.opts.Token, "dubbo-console-session"))
		if name := cleanUser(ec.FormValue("user")); name != "" {
			cookie(userCookie, c.userCookieValue(name))
		}
	case c.opts.ReadToken != "" && subtle.ConstantTimeCompare(token, []byte(c.opts.ReadToken)) == 1:
		cookie(sessionCookie, sessionValue(c.opts.ReadToken, "dubbo-console-read-session"))
	default:
		time.Sleep(200 * time.Millisecond) // slows guessing down a little
		return c.render(ec, http.StatusUnauthorized, loginPage{Next: next, Error: "Wrong token.", Open: c.open, ReadToken: c.opts.ReadToken != ""})
	}
	return ec.Redirect(http.StatusSeeOther, next)
}

func (c *Console) formLogout(ec echo.Context) error {
	for _, name := range []string{sessionCookie, userCookie} {
		ec.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return ec.Redirect(http.StatusSeeOther, "/")
}

// safeNext keeps redirects on the console: a path, never another host.
func safeNext(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.Contains(s, "\\") {
		return "/"
	}
	return s
}
