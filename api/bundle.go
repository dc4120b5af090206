package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mcplens/mcplens/incident"
)

// bundle serves a postmortem bundle (tar.gz) of a time range: what the
// bundle CLI writes, see package incident. It holds redacted bodies, so it
// needs scope bodies. limit bounds the exchanges in it (default and
// maximum --max-limit); the bundle's README says when the range held more.
func (a *API) bundle(c *gin.Context) {
	p := queryOf(c)
	f := a.filter(p)
	maxExchanges := p.limit(a.cfg.MaxLimit, a.cfg.MaxLimit)
	if !p.ok(c) {
		return
	}
	var buf bytes.Buffer
	_, err := ask(a, c, func(ctx context.Context) (struct{}, error) {
		buf.Reset()
		return struct{}{}, incident.Write(ctx, a.store, incident.Params{From: f.From, To: f.To, Server: f.Server, MaxExchanges: maxExchanges, Now: a.now}, &buf)
	})
	if err != nil {
		a.storeError(c, err, "from", "to", "limit")
		return
	}
	name := fmt.Sprintf("mcplens-incident-%s.tar.gz", f.From.UTC().Format("20060102T150405Z"))
	c.Header("Content-Disposition", `attachment; filename="`+name+`"`)
	c.Data(http.StatusOK, "application/gzip", buf.Bytes())
}
