package transformer

import (
	"slices"

	"github.com/bomstream/bomstream/schemas"
)

// defaultClaims adds the runtime an operator runs when its object names
// none: inferred, on the evidence of the field that makes it that
// operator's.
func (r *rules) defaultClaims(cd *compDetect, fields []schemas.Field) {
	for i := range r.defaults {
		dr := &r.defaults[i]
		if at := dr.fieldOf(fields); at != nil {
			cd.hit(dr.rule, confInferred, proof{conf: confInferred, value: "default runtime of field " + at.Name + "=" + at.Value, locator: at.Locator})
		}
	}
}

// fieldOf is the first field that makes dr apply, or nil: one named
// dr.Field (with a value matching dr.Values, when set), and none named in
// dr.Unless.
func (dr *defaultRuntime) fieldOf(fields []schemas.Field) *schemas.Field {
	var at *schemas.Field
	for i := range fields {
		f := &fields[i]
		if slices.Contains(dr.Unless, f.Name) {
			return nil
		}
		if f.Name != dr.Field || at != nil {
			continue
		}
		if len(dr.values) == 0 {
			at = f
		}
		for _, re := range dr.values {
			if re.MatchString(f.Value) {
				at = f
				break
			}
		}
	}
	return at
}
