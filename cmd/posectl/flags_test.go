package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// posectl eval's -estimate measures each of the estimates named on the
// same models (every other case once per estimate), and refuses a name it
// does not know, an empty list, and the median with -mirror, naming the
// flag.
func TestEstimateFlag(t *testing.T) {
	parse := func(args ...string) (*refineListFlags, error) {
		var r refineListFlags
		fs := flag.NewFlagSet("eval", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		r.register(fs)
		return &r, fs.Parse(args)
	}
	r, err := parse("-iterations", "1,3", "-estimate", "mean,median")
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.settings()
	if err != nil {
		t.Fatal(err)
	}
	medians := 0
	for _, c := range s {
		if c.Median {
			medians++
		}
	}
	if len(s) != 4 || medians != 2 {
		t.Errorf("-iterations 1,3 -estimate mean,median: %d cases, %d of them median; want 4 and 2", len(s), medians)
	}
	for _, args := range [][]string{
		{"-estimate", "mode"},
		{"-estimate", ""},
		{"-estimate", "median", "-mirror"},
	} {
		r, err := parse(args...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.settings(); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-estimate") {
			t.Errorf("%v: error %v, want a usage error naming -estimate", args, err)
		}
	}
}

// -profile-pool reads linear (the default) and product into the expert's
// use and refuses anything else, naming the flag.
func TestProfilePoolFlag(t *testing.T) {
	for pool, product := range map[string]bool{"linear": false, "product": true} {
		xp, err := (&expertFlags{gate: 40, pool: pool}).expert()
		if err != nil || xp.Product != product {
			t.Errorf("-profile-pool %s: product %v, %v; want %v", pool, xp.Product, err, product)
		}
	}
	if _, err := (&expertFlags{gate: 40, pool: "geometric"}).expert(); err == nil || !strings.Contains(err.Error(), "-profile-pool") {
		t.Errorf("-profile-pool geometric: error %v, want one naming -profile-pool", err)
	}
}
