// Package browsertest starts a headless Chromium for tests that drive a
// page with chromedp: the API's /docs page, and Unleash's web UI through
// flagadmin. Without a browser the tests skip, saying how to install one.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// SkipReason is why a test skips when no browser is installed.
const SkipReason = "no headless browser: install Debian's chromium (apt-get install chromium) or set CHROME to a Chrome or Chromium binary"

// Path returns the browser to drive: $CHROME, else Debian's chromium,
// else Chrome; "" when none is installed.
func Path() string {
	if p := os.Getenv("CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start returns the allocator of a headless browser whose window is
// width by height, in the UTC time zone, skipping t when no browser is
// installed; the browser is stopped when t ends. Open a tab with
// chromedp.NewContext(Start(...)); a second tab of that context shares
// its cookies, one opened with chromedp.WithNewBrowserContext does not.
func Start(t testing.TB, width, height int) context.Context {
	t.Helper()
	browser := Path()
	if browser == "" {
		t.Skip(SkipReason)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(width, height),
		chromedp.Env("TZ=UTC"))
	ctx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	return ctx
}
