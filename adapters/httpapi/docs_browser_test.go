package httpapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/flagadmin/flagadmin/internal/browsertest"
)

// TestDocsPageInBrowser opens /docs in a real headless browser, waits
// until the operations are listed with their parameters, authorizes with
// a token and runs one ("Try it out"), and checks that the page loaded
// nothing from anywhere but the server. It leaves a screenshot in the
// test's temporary directory, and at $FLAGADMIN_DOCS_SCREENSHOT when set
// (docs/docs-page.png is made that way).
func TestDocsPageInBrowser(t *testing.T) {
	allocCtx := browsertest.Start(t, 1280, 1600)
	env := newEnv(t, Config{}, nil)
	srv := httptest.NewServer(env.handler)
	defer srv.Close()

	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var requested, failed []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requested = append(requested, e.Request.URL)
		case *network.EventLoadingFailed: // blocked (by the page's CSP too) or broken
			failed = append(failed, fmt.Sprintf("%s %s", e.ErrorText, e.BlockedReason))
		case *runtime.EventExceptionThrown:
			failed = append(failed, "script error: "+e.ExceptionDetails.Error())
		}
	})

	var paths []string
	var params []string
	var status string
	var screenshot []byte
	err := chromedp.Run(ctx,
		network.Enable(),
		chromedp.Navigate(srv.URL+"/docs"),
		chromedp.Poll(`document.querySelectorAll('.opblock-summary [data-path]').length >= 5`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`[...document.querySelectorAll('.opblock-summary [data-path]')].map(e => e.dataset.path)`, &paths),
		chromedp.CaptureScreenshot(&screenshot), // the top of the page, as PNG
		// Authorize with the admin token (the Authorization header of every "Try it out").
		chromedp.Click(`.btn.authorize`, chromedp.ByQuery),
		chromedp.WaitVisible(`.auth-container input`, chromedp.ByQuery),
		chromedp.SendKeys(`.auth-container input`, adminToken, chromedp.ByQuery),
		chromedp.Click(`.auth-btn-wrapper .authorize`, chromedp.ByQuery),
		chromedp.Click(`.btn-done`, chromedp.ByQuery),
		// Open "GET /api/admin/search/events" and run it.
		chromedp.Click(`#operations-Events-searchEvents .opblock-summary-control`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operations-Events-searchEvents .parameters`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('#operations-Events-searchEvents .parameter__name')].map(e => e.firstChild.textContent.trim())`, &params),
		chromedp.Click(`#operations-Events-searchEvents .try-out__btn`, chromedp.ByQuery),
		chromedp.Click(`#operations-Events-searchEvents .execute`, chromedp.ByQuery),
		chromedp.WaitVisible(`#operations-Events-searchEvents .live-responses-table tbody .response-col_status`, chromedp.ByQuery),
		chromedp.Text(`#operations-Events-searchEvents .live-responses-table tbody .response-col_status`, &status, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("browser: %v (operations listed: %q)", err, paths)
	}
	shot := filepath.Join(t.TempDir(), "docs-page.png")
	if out := os.Getenv("FLAGADMIN_DOCS_SCREENSHOT"); out != "" {
		shot = out
	}
	if err := os.WriteFile(shot, screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	for _, want := range []string{
		"/api/admin/projects/{projectId}/features/{featureName}/lifecycle/complete",
		"/api/admin/search/events",
		"/api/admin/events/search",
		"/api/admin/projects",
		"/api/admin/service-account/{id}",
	} {
		if !slices.Contains(paths, want) {
			t.Errorf("the page does not list %s; it lists %q", want, paths)
		}
	}
	for _, want := range []string{"query", "feature", "project", "type", "createdBy", "from", "to", "limit", "offset"} {
		if !slices.Contains(params, want) {
			t.Errorf("search events: parameter %s not listed; got %q", want, params)
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(status), "200") {
		t.Errorf("Try it out of the event search with the admin token: status %q, want 200", status)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range failed {
		t.Errorf("the page failed to load something: %s", f)
	}
	for _, u := range requested {
		if !strings.HasPrefix(u, srv.URL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s: everything must come from the server itself", u)
		}
	}
}
