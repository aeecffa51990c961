// Package npmci installs the npm packages of a directory for tests that
// run Node (the real Unleash, the independent verifier of the log's
// leaves): "npm ci" from its lock file, once per process and under a file
// lock across processes, skipped when node_modules was installed from the
// same lock file already (a stamp in node_modules, which .ci/run writes
// too).
package npmci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// installTimeout bounds one "npm ci".
const installTimeout = 5 * time.Minute

// Installer installs one directory's packages. Its zero value is not
// ready: use New.
type Installer struct {
	dir, lockName, why string
	once               sync.Once
	err                error
	skip               string
}

// New returns the installer of dir's packages; lockName names its lock
// file across processes, and why says, when Node or npm is missing, what
// the skipped test needed it for.
func New(dir, lockName, why string) *Installer {
	return &Installer{dir: dir, lockName: lockName, why: why}
}

// Ensure installs the packages unless done already, skips t when Node or
// npm is not installed, and fails t when the install fails.
func (i *Installer) Ensure(t testing.TB) {
	t.Helper()
	i.once.Do(func() {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				i.skip = tool + " is not installed: " + i.why
				return
			}
		}
		i.err = i.installLocked()
	})
	if i.skip != "" {
		t.Skip(i.skip)
	}
	if i.err != nil {
		t.Fatalf("npm ci: %v", i.err)
	}
}

func (i *Installer) installLocked() error {
	lockFile, err := os.ReadFile(filepath.Join(i.dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lockFile)
	want := hex.EncodeToString(sum[:])
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), i.lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	stamp := filepath.Join(i.dir, "node_modules", ".flagadmin-installed")
	if have, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(have)) == want {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = i.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", i.dir, err, out)
	}
	return os.WriteFile(stamp, []byte(want+"\n"), 0o644)
}
