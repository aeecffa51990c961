package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// ListProjects returns the projects the caller can see (GET
// /api/admin/projects), the archived ones when opts.Archived. Fields the
// server adds (Unleash's onboardingStatus, cleanupCount) are ignored;
// fields it omits keep their zero value (Unleash omits favorite for admin
// tokens). Unleash 8 open source lists only the default project and
// ignores archived.
func (c *Client) ListProjects(ctx context.Context, opts flagadmin.ProjectListOptions) ([]flagadmin.ProjectListEntry, error) {
	q := url.Values{}
	if opts.Archived {
		q.Set("archived", "true")
	}
	resp, body, err := c.do(ctx, request{method: http.MethodGet, url: c.endpoint("/api/admin/projects", q), accept: "application/json", retry: retrySafe})
	if err != nil {
		return nil, err
	}
	if err := requireJSON(resp, "list projects"); err != nil {
		return nil, err
	}
	return decodeProjects(body)
}

// decodeProjects decodes a projectsSchema body: version and projects are
// required, and every project needs an id.
func decodeProjects(body []byte) ([]flagadmin.ProjectListEntry, error) {
	var wire struct {
		Version  *int                          `json:"version"`
		Projects *[]flagadmin.ProjectListEntry `json:"projects"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("client: list projects: decode the response: %w", err)
	}
	if wire.Version == nil || *wire.Version < 1 {
		return nil, fmt.Errorf("client: list projects: the response has no version of 1 or more")
	}
	if wire.Projects == nil {
		return nil, fmt.Errorf("client: list projects: the response has no projects array")
	}
	out := *wire.Projects
	for i := range out {
		p := &out[i]
		if p.ID == "" {
			return nil, fmt.Errorf("client: list projects: projects[%d] has no id", i)
		}
		p.CreatedAt = p.CreatedAt.UTC()
		p.LastUpdatedAt = utcPtr(p.LastUpdatedAt)
		p.ArchivedAt = utcPtr(p.ArchivedAt)
		p.LastReportedFlagUsage = utcPtr(p.LastReportedFlagUsage)
	}
	return out, nil
}
