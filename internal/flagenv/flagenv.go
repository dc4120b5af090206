// Package flagenv lets every flag of a command also be set from the
// environment, as MCPLENS_<FLAG> with the name upper-cased and '-' and '.'
// turned into '_' (--pair-window is MCPLENS_PAIR_WINDOW, --tap.server is
// MCPLENS_TAP_SERVER). A flag given on the command line wins.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// Prefix starts every environment variable name.
const Prefix = "MCPLENS_"

// Name returns the environment variable of a flag.
func Name(flagName string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return Prefix + strings.ToUpper(r.Replace(flagName))
}

// Parse applies the environment to fs's flags as defaults, then parses
// args. A bad value is an error naming the flag (or the variable) and the
// form it wants ("want a duration with a unit, such as 500ms, 30s or 5m"),
// and no usage text is printed for it: only --help prints the usage.
func Parse(fs *flag.FlagSet, args []string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := Name(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %s", env, v, want(f, err)))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fs.PrintDefaults()
		}
		return err
	case err != nil:
		return explain(fs, err)
	}
	return nil
}

var (
	badValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([^:]+): (.*)$`)
	unknown  = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
)

// explain rewrites the flag package's parse errors to name the flag as it
// is written (--name) and the form it wants.
func explain(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := badValue.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[2]); f != nil {
			return fmt.Errorf("--%s %q: %s", f.Name, m[1], want(f, errors.New(m[3])))
		}
	}
	if m := unknown.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag --%s (--help lists every flag)", m[1])
	}
	if strings.HasPrefix(msg, "flag needs an argument: -") {
		return fmt.Errorf("--%s needs a value (--help says which)", strings.TrimLeft(strings.TrimPrefix(msg, "flag needs an argument: "), "-"))
	}
	return err
}

// want says what form a flag's value takes, from the type of its value;
// for other kinds of flag it is the flag's own error.
func want(f *flag.Flag, err error) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration with a unit, such as 500ms, 30s, 5m or 1h"
	case int, int64:
		return "want a whole number, such as 100"
	case uint, uint64:
		return "want a whole number of 0 or more, such as 100"
	case float64:
		return "want a number, such as 0.5"
	case bool:
		return "want true or false"
	}
	return err.Error()
}

// Usage is a line for --help saying how the environment is read.
const Usage = "Every flag can also be set by the environment variable MCPLENS_<FLAG> (upper case, '-' and '.' as '_'), e.g. MCPLENS_FROM; a flag on the command line wins.\n"
