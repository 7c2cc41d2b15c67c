package main

import (
	"context"
	"fmt"

	"zerodrop.dev/zerodrop/harness/evidence"
)

func keygenCommand() command {
	return command{name: "keygen", summary: "make a key pair that signs run files (and the public key that verifies them)", run: runKeygen}
}

const keygenDescription = `
Makes an Ed25519 key pair: PATH (PKCS #8 PEM, mode 0600) signs run files
(zerodrop load --sign-key PATH, or ZERODROP_SIGN_KEY=PATH for make e2e and
zerodrop test), PATH.pub (PKIX PEM) verifies them (zerodrop report
--verify-key PATH.pub). Refuses to overwrite either file.

Without --sign-key, zerodrop signs with this machine's key, made on first
use in $XDG_CONFIG_HOME/zerodrop (else ~/.config/zerodrop). A key pair of
your own is for a key kept as a CI secret or shared by a team's machines.
Each signature is an in-toto statement in a DSSE envelope next to the run
file (run.dsse.json).`

func runKeygen(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "keygen", "--out PATH", keygenDescription)
	out := fs.String("out", "", "`PATH` of the private key to write (PATH.pub gets the public key)")
	if code, ok := parseFlags(c, fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return badInput(c, "keygen", "unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return badInput(c, "keygen", "missing --out PATH")
	}
	k, err := evidence.GenerateKey()
	if err != nil {
		fmt.Fprintf(c.stderr, "zerodrop keygen: %v\n", err)
		return exitBroken
	}
	if err := evidence.WriteKey(k, *out); err != nil {
		return badInput(c, "keygen", "%v", err)
	}
	fmt.Fprintf(c.stdout, "key %s\nprivate: %s (sign: --sign-key %s)\npublic:  %s (verify: zerodrop report --verify-key %s)\n",
		k.KeyID(), *out, *out, evidence.PublicFileName(*out), evidence.PublicFileName(*out))
	return exitOK
}
