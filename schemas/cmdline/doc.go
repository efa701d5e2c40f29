// Package cmdline reads a container's command line the one way bomstream
// reads it: the detection that names what a container runs, and the
// redaction that removes what it must not keep.
//
// A command line is Kubernetes' command followed by its args, one argv.
// Its first words may be wrappers ([IsWrapper]: exec, env) or assignments
// ([Assignment]: VAR=value); the word after them is the program. A
// container with no command gives its args to the image's entrypoint:
// they name no program, unless they run a shell script themselves
// ([ShellArgs]).
//
// A shell ([IsShell]) with an option holding "c" runs a script
// ([ShellScript] finds it, past a "--"). [ParseScript] parses the script
// with mvdan.cc/sh into simple commands, nesting at most [MaxShellDepth]
// shells deep. A Python interpreter ([IsPython]) runs the value of its -c
// as Python instead.
//
// The words after a program are its arguments ([Args]). "--name=value"
// is a flag with its value. A flag without "=" takes the next word as its
// value, unless it is a boolean flag or the next word is a flag too
// ([IsFlag]; "-1" is a value). "--" ends the options.
//
// [ParseArgsWith] puts it together for the transformer: the invocations a
// container runs, with $(VAR) expanded as the kubelet does and each word's
// source element kept. The collector's redaction walks the same grammar
// word by word, so that a value it keeps or redacts is the value the
// transformer reads.
package cmdline
