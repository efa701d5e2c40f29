package sinks

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadSecret returns a credential from the file named by file or, when file
// is empty, from the environment variable named by env (read through
// getenv). The two config keys that name them are fileKey and envKey, used in
// the errors; errors name the file or the variable, never the value. A file
// loses one trailing newline; an empty credential is an error. When neither
// is set it returns "" and no error: the credential is optional there.
func ReadSecret(fileKey, file, envKey, env string, getenv func(string) string) (string, error) {
	switch {
	case file != "" && env != "":
		return "", fmt.Errorf("%s and %s: set one, not both", fileKey, envKey)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			if pe, ok := errors.AsType[*os.PathError](err); ok {
				err = pe.Err // the path is named once, below
			}
			return "", fmt.Errorf("%s %s: %w", fileKey, file, err)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if v == "" {
			return "", fmt.Errorf("%s %s: the file is empty", fileKey, file)
		}
		return v, nil
	case env != "":
		v := ""
		if getenv != nil {
			v = getenv(env)
		}
		if v == "" {
			return "", fmt.Errorf("%s: environment variable %s is not set", envKey, env)
		}
		return v, nil
	}
	return "", nil
}
