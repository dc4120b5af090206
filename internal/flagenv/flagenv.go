// Package flagenv lets every flag of a command also be set from the
// environment, as MCPLENS_<FLAG> with the name upper-cased and '-' and '.'
// turned into '_' (--pair-window is MCPLENS_PAIR_WINDOW, --tap.server is
// MCPLENS_TAP_SERVER). A flag given on the command line wins.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// Prefix starts every environment variable name.
const Prefix = "MCPLENS_"

// Name returns the environment variable of a flag.
func Name(flagName string) string {
	r := strings.NewReplacer("-", "_", ".", "_")
	return Prefix + strings.ToUpper(r.Replace(flagName))
}

// Parse applies the environment to fs's flags as defaults, then parses
// args. A bad value in the environment is an error naming the variable.
func Parse(fs *flag.FlagSet, args []string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := Name(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return fs.Parse(args)
}

// Usage is a line for --help saying how the environment is read.
const Usage = "Every flag can also be set by the environment variable MCPLENS_<FLAG> (upper case, '-' and '.' as '_'), e.g. MCPLENS_FROM; a flag on the command line wins.\n"
