package evidence

import (
	"context"
	"io"
)

// VerifyBytes is verify for the external tests: Verify on bytes in memory.
func VerifyBytes(ctx context.Context, run io.Reader, env []byte, keys ...*PublicKey) (Verified, error) {
	return verify(ctx, "run.jsonl", run, "run.dsse.json", env, keys)
}
