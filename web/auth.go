package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// The cookies of the view. Both are HttpOnly and SameSite=Strict; the
// token cookie holds the bearer token the visitor typed, so that every
// replica of the API accepts it and no server-side session is kept.
const (
	tokenCookie = "mcplens_token" //nolint:gosec // G101: the name of the cookie, not a credential
	csrfCookie  = "mcplens_csrf"
	maxFormSize = 4 << 10
)

func tokenOf(r *http.Request) string {
	c, err := r.Cookie(tokenCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

func (v *View) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	}
}

// csrfToken returns the visitor's CSRF token, setting the cookie when
// they have none yet.
func (v *View) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		return c.Value
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	t := hex.EncodeToString(b[:])
	http.SetCookie(w, v.cookie(r, csrfCookie, t, 0))
	// Later reads in this request see it too.
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: t})
	return t
}

var errCrossSite = errors.New("the form was not sent from this site; reload the page and try again")

// checkForm admits a state-changing POST only from a page of this
// origin that carries the visitor's CSRF token.
func (v *View) checkForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormSize)
	if err := r.ParseForm(); err != nil {
		return errors.New("the form does not decode")
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return errCrossSite
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		origin = r.Header.Get("Referer")
	}
	if !sameOrigin(r, origin) {
		return errCrossSite
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get("csrf"))) != 1 || len(c.Value) != 64 {
		return errCrossSite
	}
	return nil
}

// sameOrigin reports whether origin (an Origin or Referer value) names
// the host the request was sent to, on the scheme it came by.
func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// localPath returns next if it is a path of this site, else "/".
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.HasPrefix(next, "/\\") || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

type loginPage struct {
	Next, Message, CSRF string
}

func (v *View) loginForm(w http.ResponseWriter, r *http.Request) {
	v.render(w, r, http.StatusOK, "login", "Sign in", loginPage{Next: localPath(r.URL.Query().Get("next")), CSRF: v.csrfToken(w, r)})
}

// prompt answers a request the API refused for want of a valid token
// with the token form, status 401.
func (v *View) prompt(w http.ResponseWriter, r *http.Request, message string) {
	next := r.URL.RequestURI()
	if r.Method != http.MethodGet {
		next = localPath(r.PostFormValue("next"))
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcplens"`)
	v.render(w, r, http.StatusUnauthorized, "login", "Sign in", loginPage{Next: next, Message: message, CSRF: v.csrfToken(w, r)})
}

// login checks the token by asking the API one small question with it,
// then keeps it in the cookie.
func (v *View) login(w http.ResponseWriter, r *http.Request) {
	if err := v.checkForm(w, r); err != nil {
		v.fail(w, r, &apiError{Status: http.StatusForbidden, Problem: problem{Title: "Forbidden", Detail: err.Error()}})
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if token == "" {
		v.prompt(w, r, "Enter a token.")
		return
	}
	rec := v.call(r, "/api/v1/exchanges", url.Values{"from": {"-1m"}, "limit": {"1"}}, token)
	switch {
	case rec.status == http.StatusUnauthorized:
		v.prompt(w, r, "That token is not known.")
		return
	case rec.status == http.StatusForbidden:
		v.prompt(w, r, "That token lacks the scope read, which every page needs.")
		return
	case rec.status != http.StatusOK:
		v.fail(w, r, errorOf(rec))
		return
	}
	http.SetCookie(w, v.cookie(r, tokenCookie, token, int(v.cfg.SessionMaxAge.Seconds())))
	http.Redirect(w, r, localPath(r.PostForm.Get("next")), http.StatusSeeOther)
}

func (v *View) logout(w http.ResponseWriter, r *http.Request) {
	if err := v.checkForm(w, r); err != nil {
		v.fail(w, r, &apiError{Status: http.StatusForbidden, Problem: problem{Title: "Forbidden", Detail: err.Error()}})
		return
	}
	http.SetCookie(w, v.cookie(r, tokenCookie, "", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
