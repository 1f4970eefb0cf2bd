package localcluster

import (
	"fmt"
	"os"
)

// ReplaceFile writes data to path at once: to a new file renamed over it,
// as a secret manager replaces a mounted secret, so that a reader sees the
// old contents or the new, never half of them.
func ReplaceFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
