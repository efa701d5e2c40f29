package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// EnvPrefix begins the name of every variable bomstream reads.
const EnvPrefix = "BOMSTREAM_"

// EnvName is the variable that sets the flag (or the setting named like a
// flag) name: [EnvPrefix] and the name upper-cased, each '-' a '_'. The
// variable of --nats-url is BOMSTREAM_NATS_URL.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Env is the environment as a command reads it. Values never reach a
// message: a warning or an error names the variable alone, since a
// variable may hold a password or a token.
type Env struct {
	// Getenv reads a variable; an empty value counts as unset.
	Getenv func(string) string
	// Aliases are the old names still read for a setting, by the setting's
	// flag name. Each one read gives a warning naming the new variable.
	Aliases map[string][]string
	// Warn gets each warning, one line; nil drops them.
	Warn func(string)
}

// Lookup is the value the environment gives the setting called name (in
// flag form): that of [EnvName](name), else that of its first alias that
// is set, with a warning. ok is false when none is set.
func (e Env) Lookup(name string) (value string, ok bool) {
	if v := e.Getenv(EnvName(name)); v != "" {
		return v, true
	}
	for _, old := range e.Aliases[name] {
		if v := e.Getenv(old); v != "" {
			if e.Warn != nil {
				e.Warn(fmt.Sprintf("%s is deprecated; set %s instead", old, EnvName(name)))
			}
			return v, true
		}
	}
	return "", false
}

// envAnnotation marks the flags [Env.SetFlags] reads variables for.
const envAnnotation = "bomstream.dev/env"

// FromEnv marks the flags of fs named (all of them when none is named) as
// flags that [Env.SetFlags] sets from their variables. The flags that
// configure the process are marked where they are declared; a flag that
// means something else in one command (find's --cluster, a filter) is not.
func FromEnv(fs *pflag.FlagSet, names ...string) {
	mark := func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[envAnnotation] = []string{EnvName(f.Name)}
	}
	if len(names) == 0 {
		fs.VisitAll(mark)
	}
	for _, n := range names {
		if f := fs.Lookup(n); f != nil {
			mark(f)
		}
	}
}

// SetFlags gives every flag of fs marked by [FromEnv] that the command
// line left unset the value of its variable, when the environment sets
// one: the command line wins over the environment. A flag so set counts
// as set (pflag's Changed). Errors name the variable and the flag; they do
// not wrap pflag's, which quote the value.
func (e Env) SetFlags(fs *pflag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if _, marked := f.Annotations[envAnnotation]; !marked || f.Changed {
			return
		}
		v, ok := e.Lookup(f.Name)
		if !ok {
			return
		}
		if fs.Set(f.Name, v) != nil {
			errs = append(errs, fmt.Errorf("%s: not a valid value for --%s (%s)", EnvName(f.Name), f.Name, f.Value.Type()))
		}
	})
	return errors.Join(errs...)
}
