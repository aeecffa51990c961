package client

import (
	"context"
	"net/http"
)

// DeleteServiceAccount deletes the service account id (DELETE
// /api/admin/service-account/:id). An unknown id is flagadmin.ErrNotFound,
// a caller without the ADMIN permission flagadmin.ErrNoAccess. It is
// retried like a read: deleting twice leaves the same state, but a retry
// after a first attempt whose answer was lost is answered
// flagadmin.ErrNotFound. An empty id is a *flagadmin.ValidationError and
// sends nothing.
func (c *Client) DeleteServiceAccount(ctx context.Context, id string) error {
	if err := requirePathParams("id", id); err != nil {
		return err
	}
	u := c.endpoint("/api/admin/service-account/"+segment(id), nil)
	_, _, err := c.do(ctx, request{method: http.MethodDelete, url: u, accept: "application/json", retry: retrySafe})
	return err
}
