//go:build nocloudsinks

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// verifyCmd, built with -tags nocloudsinks (the collector), says where
// verify is: it needs the registry and Sigstore clients this build leaves out.
func verifyCmd(*env) *cobra.Command {
	return &cobra.Command{
		Use:     "verify",
		Short:   "Verify signed AI-BOM attestations (not in this build: run the bomstream image or binary)",
		Example: `  bomstream verify`,
		Hidden:  true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("verify: this build of bomstream leaves it out (-tags nocloudsinks, the bomstream-collector image): run the bomstream image or binary")
		},
	}
}
