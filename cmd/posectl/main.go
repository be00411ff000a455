// Command posectl is posed's offline tool: it inspects model files (and,
// as the pipeline grows, trains, evaluates and predicts with them).
//
//	posectl inspect [-json] MODEL.gllim
//	posectl version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type command struct {
	name, usage, summary string
	run                  func(args []string, stdout io.Writer) error
}

func commands() []command {
	return []command{
		{"inspect", "inspect [-json] MODEL.gllim", "print a model file's header in words", runInspect},
		{"version", "version", "print the version", func([]string, io.Writer) error {
			fmt.Println("posectl", version)
			return nil
		}},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: posectl COMMAND [flags] [args]")
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-32s %s\n", c.usage, c.summary)
	}
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	name := os.Args[1]
	for _, c := range commands() {
		if c.name == name {
			err := c.run(os.Args[2:], os.Stdout)
			switch {
			case errors.Is(err, flag.ErrHelp):
				os.Exit(0)
			case errors.Is(err, errUsage):
				fmt.Fprintf(os.Stderr, "posectl %s: %v\nusage: posectl %s\n", name, err, c.usage)
				os.Exit(2)
			case err != nil:
				fmt.Fprintf(os.Stderr, "posectl %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	if name == "-h" || name == "-help" || name == "help" {
		usage(os.Stdout)
		return
	}
	fmt.Fprintf(os.Stderr, "posectl: unknown command %q\n", name)
	usage(os.Stderr)
	os.Exit(2)
}

var errUsage = errors.New("bad usage")
