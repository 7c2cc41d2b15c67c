// Package atomicfile writes a file so that a reader (or an artifact
// upload) sees the old contents or the new, never half of them: the data
// goes to a temporary file in the same directory, which is then renamed
// over the target (rename(2) is atomic within a file system).
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data, mode 0644 (os.CreateTemp makes a file
// private; what zerodrop writes this way is for everyone to read). A
// failure leaves path as it was and no temporary file behind.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	merr := tmp.Chmod(0o644)
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
