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
// The environment sets what a flag sets. [EnvName] derives a flag's
// variable: BOMSTREAM_NATS_URL for --nats-url. [FromEnv] marks the flags
// that configure the process, and [Env.SetFlags] fills those the command
// line left unset. A setting without a flag is named like one and read with
// [Env.Lookup]. An old variable name still works as an alias, with a
// warning. No message ever holds a variable's value, only its name.
//
// The package imports nothing of the project, so any stage can use it.
package config
