package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// CompleteLifecycle marks a feature's lifecycle completed with an outcome
// (POST /api/admin/projects/:projectId/features/:featureName/lifecycle/complete).
// A missing project or feature is flagadmin.ErrNotFound, a bad body a
// *flagadmin.ValidationError. It is a write: it is retried only when the
// connection could not be opened. An empty projectID or featureName is a
// *flagadmin.ValidationError and sends nothing.
func (c *Client) CompleteLifecycle(ctx context.Context, projectID, featureName string, req flagadmin.CompleteRequest) error {
	if err := requirePathParams("projectId", projectID, "featureName", featureName); err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	u := c.endpoint("/api/admin/projects/"+segment(projectID)+"/features/"+segment(featureName)+"/lifecycle/complete", nil)
	_, _, err = c.do(ctx, request{method: http.MethodPost, url: u, body: body, accept: "application/json", retry: retryUnsent})
	return err
}
