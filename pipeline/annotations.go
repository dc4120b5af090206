package pipeline

import (
	"encoding/json"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// annotations holds the latest tool annotations per server and tool,
// learned from recorded tools/list results. Hints the server left out take
// the spec defaults: readOnly=false, destructive=true, idempotent=false,
// openWorld=true. Not safe for concurrent use.
type annotations struct {
	byTool map[string]schema.ToolAnnotation
}

// newAnnotations returns an empty set.
func newAnnotations() *annotations {
	return &annotations{byTool: map[string]schema.ToolAnnotation{}}
}

// Get returns the annotations of a tool, if a tools/list result showed it.
func (a *annotations) Get(server, tool string) (schema.ToolAnnotation, bool) {
	t, ok := a.byTool[server+"\x00"+tool]
	return t, ok
}

// Safe reports whether re-sending a call of the tool cannot repeat a side
// effect: it is known to be read-only or idempotent. Unknown tools are not
// safe.
func (a *annotations) Safe(server, tool string) bool {
	t, ok := a.Get(server, tool)
	return ok && (t.ReadOnly || t.Idempotent)
}

// Set records annotations (used to warm the set from a store).
func (a *annotations) Set(t schema.ToolAnnotation) { a.byTool[t.Server+"\x00"+t.Tool] = t }

type toolsList struct {
	Result struct {
		Tools []struct {
			Name        string `json:"name"`
			Annotations *struct {
				ReadOnly    *bool `json:"readOnlyHint"`
				Destructive *bool `json:"destructiveHint"`
				Idempotent  *bool `json:"idempotentHint"`
				OpenWorld   *bool `json:"openWorldHint"`
			} `json:"annotations"`
		} `json:"tools"`
	} `json:"result"`
}

// Learn reads a successful tools/list exchange and returns the annotations
// that changed.
func (a *annotations) Learn(rec *schema.Exchange, body *schema.Body) []schema.ToolAnnotation {
	if rec.Method != "tools/list" || rec.Outcome != classify.Success || body == nil {
		return nil
	}
	payload := classify.Payload(body.ResponseHeaders.Get("content-type"), bytesOf(body.ResponseBody))
	var tl toolsList
	if payload == nil || json.Unmarshal(payload, &tl) != nil {
		return nil
	}
	var changed []schema.ToolAnnotation
	for _, t := range tl.Result.Tools {
		if t.Name == "" {
			continue
		}
		ann := schema.ToolAnnotation{Server: rec.Server, Tool: t.Name, Destructive: true, OpenWorld: true, SeenAt: rec.TS}
		if h := t.Annotations; h != nil {
			ann.ReadOnly = deref(h.ReadOnly, false)
			ann.Destructive = deref(h.Destructive, true)
			ann.Idempotent = deref(h.Idempotent, false)
			ann.OpenWorld = deref(h.OpenWorld, true)
		}
		old, ok := a.Get(rec.Server, t.Name)
		a.Set(ann)
		old.SeenAt = ann.SeenAt
		if !ok || old != ann {
			changed = append(changed, ann)
		}
	}
	return changed
}

func deref(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
