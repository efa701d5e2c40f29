// Package filters binds the inventory's query fields (inventory.Fields)
// as command-line flags, so that `bomstream find` and `kubectl bomstream
// find` take the same flags with the same help, and read them back as
// the field names and values inventory.ParseQuery and the HTTP API's
// query parameters take. --findings (BindFindings) is bound only where
// the API answers it; `bomstream find` binds its own.
package filters
