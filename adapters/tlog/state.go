package tlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateSuffix is added to the signing key's file name to name the file a
// signing server keeps its last checkpoint in, by default.
const StateSuffix = ".checkpoint"

// readState reads the checkpoint a signing server saved last; nil, nil
// when the file does not exist.
func readState(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the checkpoint state file: %v", err)
	}
	return b, nil
}

// writeState replaces the state file with note, atomically (replaceFile).
func writeState(path string, note []byte) error {
	if err := replaceFile(path, note); err != nil {
		return fmt.Errorf("cannot write the checkpoint state file %s: %v", path, err)
	}
	return nil
}

// replaceFile replaces the file path with data, atomically: a temporary
// file in the same directory, synced, renamed over it, and the directory
// synced, so that a crash leaves the old content or the new one.
func replaceFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		err = d.Sync()
		d.Close()
		if err != nil && !errors.Is(err, os.ErrInvalid) {
			return err
		}
	}
	return nil
}
