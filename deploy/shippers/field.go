package shippers

// Field is one row of a mapping table: a contract-v1 field and the input
// fields it is computed from. From is empty for a constant ("kind").
type Field struct {
	// Name is the contract field, spelled flat with dots ("http.status").
	Name string
	// From names the input fields read: top-level access-log keys for the
	// gateway mapping, OTel paths ("attributes[mcp.session.id]",
	// "resource[service.name]", "body", "time") for the OTel mapping.
	From []string
	// Rule says in words how the value is derived; the README's mapping
	// tables quote it.
	Rule string
}

// Names returns the contract field names of a table, in table order.
func Names(fields []Field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.Name
	}
	return out
}

// Sources returns every distinct input field a table reads.
func Sources(fields []Field) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fields {
		for _, s := range f.From {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}
