// Package cli is the shared tail of every mcplens command's main: flags
// from the environment and the command line, one exit code per kind of
// failure, and a context that ends on SIGINT or SIGTERM.
//
// Exit codes: 0 success (and --help), 1 the command failed, 2 a bad flag
// or configuration.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/flagenv"
)

// exit is os.Exit; tests replace it.
var exit = os.Exit

var osExit = os.Exit

// ParseFlags applies MCPLENS_<FLAG> environment variables, then args
// (flagenv.Parse). After --help it exits 0; on a bad flag it prints the
// error, prefixed with the command's name, and exits 2.
func ParseFlags(fs *flag.FlagSet, args []string) {
	if err := flagenv.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			exit(0)
			return
		}
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		exit(2)
	}
}

// Validate logs err as an invalid configuration and exits 2 when it is not
// nil.
func Validate(logger zerolog.Logger, err error) {
	if err != nil {
		logger.Error().Err(err).Msg("invalid configuration")
		exit(2)
	}
}

// Run runs fn with a context that ends on SIGINT or SIGTERM; when fn fails
// it logs the error as "<name> failed" and exits 1.
func Run(logger zerolog.Logger, name string, fn func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := fn(ctx)
	stop()
	if err != nil {
		logger.Error().Err(err).Msgf("%s failed", name)
		exit(1)
	}
}

// IsTerminal says whether w is a character device such as a terminal (a
// command writes progress there, and never gzip).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
