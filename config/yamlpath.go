package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// fieldLines maps the line of each value in a YAML document to the field
// path it sets (e.g. 7 → "mqtt.qos"), following Config's yaml tags, so that
// a decoder error that names a line can name the field instead. It also
// reports values that the decoder would accept but change: a number with a
// fraction for an integer field (yaml.v3 truncates 640.7 to 640).
func fieldLines(doc *yaml.Node) (map[int]string, Problems) {
	lines := map[int]string{}
	var p Problems
	var walk func(n *yaml.Node, t reflect.Type, path string)
	walk = func(n *yaml.Node, t reflect.Type, path string) {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if path != "" {
			lines[n.Line] = path
		}
		switch {
		case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key, val := n.Content[i], n.Content[i+1]
				f, ok := fieldByTag(t, key.Value)
				if !ok {
					continue // the strict decoder names unknown keys
				}
				sub := key.Value
				if path != "" {
					sub = path + "." + key.Value
				}
				lines[key.Line] = sub
				walk(val, f.Type, sub)
			}
		case n.Kind == yaml.ScalarNode && isInt(t) && n.Tag == "!!float":
			if v, err := strconv.ParseFloat(n.Value, 64); err == nil && v != math.Trunc(v) {
				p = append(p, fmt.Sprintf("%s: %s is not a whole number", path, n.Value))
			}
		}
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		walk(doc.Content[0], reflect.TypeOf(Config{}), "")
	}
	return lines, p
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Int64:
		return t.String() != "time.Duration" // durations are strings such as 2s
	}
	return false
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key {
			return f, true
		}
		if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			if g, ok := fieldByTag(f.Type, key); ok {
				return g, true
			}
		}
	}
	return reflect.StructField{}, false
}

var lineRef = regexp.MustCompile(`^line (\d+): `)

// withFields rewrites the decoder's "line N: …" errors as "field: … (line N)".
func withFields(err error, lines map[int]string) Problems {
	var out Problems
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n")
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if m := lineRef.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			if f, ok := lines[n]; ok {
				l = fmt.Sprintf("%s: %s (line %d)", f, strings.TrimPrefix(l, m[0]), n)
			}
		}
		out = append(out, l)
	}
	return out
}

// badFloats names every float field of v that is NaN or infinite (YAML's
// .nan and .inf parse, and no comparison in Validate would catch a NaN).
func badFloats(v reflect.Value, path string) Problems {
	var p Problems
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			p = append(p, badFloats(v.Field(i), sub)...)
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			p = append(p, fmt.Sprintf("%s: %v is not a number", path, f))
		}
	}
	return p
}
