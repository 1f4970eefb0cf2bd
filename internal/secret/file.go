package secret

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxFileBytes bounds a secret file: a token or a password, not a document
// (a path mistyped to a large file fails here, not in a handshake).
const maxFileBytes = 4096

// ErrEmpty is a secret file with nothing in it but white space.
var ErrEmpty = errors.New("secret file is empty")

// ReadFile reads a secret from path: its contents without the white space
// around it (an editor's or `echo`'s final newline is not part of it).
// Errors name the file, never its contents.
func ReadFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("secret file %s: %w", path, err)
	}
	if len(b) > maxFileBytes {
		return "", fmt.Errorf("secret file %s: larger than %d bytes", path, maxFileBytes)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%w: %s", ErrEmpty, path)
	}
	return s, nil
}
