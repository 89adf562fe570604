package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Cookie names.
const (
	sessionCookie = "dubbo_console_session"
	csrfCookie    = "dubbo_console_csrf"
	csrfField     = "csrf"
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
func (c *Console) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		r := ec.Request()
		if !changing(r.Method) {
			return next(ec)
		}
		if err := sameOrigin(r); err != nil {
			return echo.NewHTTPError(http.StatusForbidden, err.Error())
		}
		if simpleForm(r.Header.Get(echo.HeaderContentType)) && !c.validCSRF(ec) {
			return echo.NewHTTPError(http.StatusForbidden,
				"form without a valid CSRF token refused; reload the page and submit again (API clients: send JSON or YAML)")
		}
		if r.URL.Path == "/login" || c.opts.Token == "" || c.authorized(r) {
			return next(ec)
		}
		if strings.HasPrefix(r.URL.Path, "/api/") {
			ec.Response().Header().Set("WWW-Authenticate", `Bearer realm="dubbo console"`)
			return echo.NewHTTPError(http.StatusUnauthorized, "this change needs the console token: Authorization: Bearer <console.token>")
		}
		return ec.Redirect(http.StatusSeeOther, "/login?next="+neturl.QueryEscape(backTo(r)))
	}
}

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

// authorized checks the bearer token or the login cookie.
func (c *Console) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return subtle.ConstantTimeCompare([]byte(strings.TrimPrefix(h, "Bearer ")), []byte(c.opts.Token)) == 1
	}
	ck, err := r.Cookie(sessionCookie)
	return err == nil && hmac.Equal([]byte(ck.Value), []byte(c.sessionValue()))
}

// sessionValue is the login cookie: derived from the token, so it does not
// reveal it and survives restarts, and changes when the token does.
func (c *Console) sessionValue() string {
	m := hmac.New(sha256.New, []byte(c.opts.Token))
	m.Write([]byte("dubbo-console-session"))
	return hex.EncodeToString(m.Sum(nil))
}

// loggedIn reports whether changes are allowed to this browser.
func (c *Console) loggedIn(r *http.Request) bool { return c.opts.Token == "" || c.authorized(r) }

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
	return c.render(ec, http.StatusOK, loginPage{Next: safeNext(ec.QueryParam("next"))})
}

func (c *Console) formLogin(ec echo.Context) error {
	next := safeNext(ec.FormValue("next"))
	if c.opts.Token == "" {
		return ec.Redirect(http.StatusSeeOther, next)
	}
	if subtle.ConstantTimeCompare([]byte(ec.FormValue("token")), []byte(c.opts.Token)) != 1 {
		time.Sleep(200 * time.Millisecond) // slows guessing down a little
		return c.render(ec, http.StatusUnauthorized, loginPage{Next: next, Error: "Wrong token."})
	}
	ec.SetCookie(&http.Cookie{Name: sessionCookie, Value: c.sessionValue(), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: ec.Request().TLS != nil, MaxAge: 12 * 3600})
	return ec.Redirect(http.StatusSeeOther, next)
}

func (c *Console) formLogout(ec echo.Context) error {
	ec.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return ec.Redirect(http.StatusSeeOther, "/")
}

// safeNext keeps redirects on the console: a path, never another host.
func safeNext(s string) string {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.Contains(s, "\\") {
		return "/"
	}
	return s
}
