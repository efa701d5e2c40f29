// Package config reads the configuration people write: the process file,
// the sink blocks in it, kind profiles, detection rules and findings rules.
//
// Every one of them goes through [Decode], on one YAML library. Decode is
// strict: a key that names no field is an error, and so is a value of the
// wrong type. Each problem is one line that names the line and the path of
// the key ("line 3: stream.replicas: cannot unmarshal the text `three` into
// int"). All problems are reported at once, and the caller names the file.
//
// A sink's block reaches its sink as values, not text. [DecodeValue] decodes
// them as strictly, naming the path alone. [Lines] gives the line of every
// key, for the checks a caller makes after decoding.
//
// The package imports nothing of the project, so any stage can use it.
package config
