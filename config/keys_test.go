package config

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// yamlKeys returns the dotted path of every key of t (a struct with yaml
// tags): a struct's keys are followed into, anything else (maps of named
// zones or targets, lists, scalars) is a leaf.
func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		path := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.NumField() > 0 && ft.Field(0).Tag.Get("yaml") != "" {
			out = append(out, yamlKeys(ft, path+".")...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// commentedKey is a key the example shows commented out ("# path: …").
var commentedKey = regexp.MustCompile(`^(\s*)# ([a-z_]+:( |$))`)

// The example configuration is the one place a key's default and meaning
// are shown beside each other: it names every key of Config (some
// commented out, with their default or an example value), every key it
// names exists, and what it sets is the default. The README's table names
// only keys that exist.
func TestEveryKeyIsInTheExample(t *testing.T) {
	raw, err := os.ReadFile("posed.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		lines[i] = commentedKey.ReplaceAllString(l, "$1$2")
	}
	all := strings.Join(lines, "\n")
	// Every key named, commented out or not, is a key posed reads, with
	// a value of its type (Parse would also validate the whole, which the
	// commented alternatives together are not: password and password_file).
	dec := yaml.NewDecoder(strings.NewReader(all))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("the example, its commented keys uncommented, names what posed does not read: %v", err)
	}
	named := map[string]bool{}
	key := regexp.MustCompile(`^(\s*)([a-z_]+):`)
	// Paths by indentation: a key's parent is the last key less indented.
	var stack []struct {
		indent int
		name   string
	}
	for _, l := range lines {
		m := key.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		ind := len(m[1])
		for len(stack) > 0 && stack[len(stack)-1].indent >= ind {
			stack = stack[:len(stack)-1]
		}
		var parts []string
		for _, s := range stack {
			parts = append(parts, s.name)
		}
		named[strings.Join(append(parts, m[2]), ".")] = true
		stack = append(stack, struct {
			indent int
			name   string
		}{ind, m[2]})
	}
	var missing []string
	for _, k := range yamlKeys(reflect.TypeOf(Config{}), "") {
		if !named[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("keys posed reads that posed.example.yaml does not show: %s", strings.Join(missing, ", "))
	}
}

// What the example sets is the default: "what is left out takes the
// default shown here".
func TestExampleShowsTheDefaults(t *testing.T) {
	c, err := Load("posed.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	var diff []string
	var cmp func(path string, a, b reflect.Value)
	cmp = func(path string, a, b reflect.Value) {
		if a.Kind() == reflect.Struct {
			for i := 0; i < a.NumField(); i++ {
				name, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("yaml"), ",")
				if name == "" || name == "-" {
					continue
				}
				cmp(strings.TrimPrefix(path+"."+name, "."), a.Field(i), b.Field(i))
			}
			return
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			diff = append(diff, path)
		}
	}
	cmp("", reflect.ValueOf(c), reflect.ValueOf(d))
	if len(diff) > 0 {
		t.Errorf("posed.example.yaml sets these otherwise than the defaults: %s", strings.Join(diff, ", "))
	}
}

// The README's configuration table (its Configuration section) names keys posed reads (a cell's
// later names are siblings of its first: `source.width`, `height`).
func TestReadmeNamesRealKeys(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, k := range yamlKeys(reflect.TypeOf(Config{}), "") {
		for p := k; ; {
			keys[p] = true
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	row := regexp.MustCompile("^\\| (`[^|]+) \\| [^|]+ \\| [^|]+ \\|$")
	name := regexp.MustCompile("`([a-z_.]+)`")
	text := string(raw)
	start := strings.Index(text, "\n## Configuration\n")
	if start < 0 {
		t.Fatal("README has no Configuration section")
	}
	text = text[start+1:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	n := 0
	for _, l := range strings.Split(text, "\n") {
		m := row.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		parent := ""
		for i, k := range name.FindAllStringSubmatch(m[1], -1) {
			path := k[1]
			if i == 0 {
				if j := strings.LastIndex(path, "."); j >= 0 {
					parent = path[:j+1]
				}
			} else if !strings.Contains(path, ".") {
				path = parent + path
			}
			n++
			if !keys[path] {
				t.Errorf("README: %q is not a configuration key (row %s)", path, l[:min(len(l), 60)])
			}
		}
	}
	if n < 30 {
		t.Errorf("found %d keys in the README's table, want the table (≥ 30)", n)
	}
}
