package flagadmin

import "context"

// Need is what an operation needs of its caller's permissions.
type Need int

// The needs of the operations, from the weakest.
const (
	// NeedAdminAPI: any principal of the admin API.
	NeedAdminAPI Need = iota + 1
	// NeedRootAdmin: the ADMIN permission.
	NeedRootAdmin
	// NeedFeatureUpdate: UPDATE_FEATURE on one project.
	NeedFeatureUpdate
)

// Access is what one call of an operation needs: a Need, and for
// NeedFeatureUpdate the Project it is on.
type Access struct {
	Need    Need
	Project string
}

// The accesses of operations that do not depend on their arguments.
var (
	adminAPI  = Access{Need: NeedAdminAPI}
	rootAdmin = Access{Need: NeedRootAdmin}
)

// featureUpdate is the access of a change to the features of projectID.
func featureUpdate(projectID string) Access {
	return Access{Need: NeedFeatureUpdate, Project: projectID}
}

// Authorize is the permission gate (authorize) for the operations of a
// package built over the Service (flagadmin/vlog, the verifiable log):
// each of them passes it once, before it reads or changes anything else,
// as the Service's own operations pass authorize. It returns nil when p
// has a, else an error of kind ErrNoAccess with the message of the rule
// that failed.
func (s *Service) Authorize(ctx context.Context, p Principal, a Access) error {
	return s.authorize(ctx, p, a)
}

// authorize is the permission gate: every operation of the Service that
// acts for a Principal passes through it once, before it reads or changes
// anything else, and the rules of who may do what are all here. It
// returns nil when p has a, else an error of kind ErrNoAccess:
//
//   - client and frontend tokens (and a user principal without its
//     account) may do nothing: "This token cannot be used for the admin
//     API.";
//   - adminAPI: every other principal;
//   - rootAdmin: admin tokens, the system and users whose root role is
//     Admin (IsRootAdmin): "You need the ADMIN permission to do this.";
//   - featureUpdate(project): root admins, the project's Owners and
//     Members, and root Editors when the project is open: "You need the
//     UPDATE_FEATURE permission on project ... to do this.".
//
// A feature update is decided on the stored project, so it can also fail
// as finding the project fails: ErrValidation for a project id that is not
// valid text, ErrNotFound for a project that does not exist and for a
// private one the caller is not a member of (it is not told that the
// project exists).
func (s *Service) authorize(ctx context.Context, p Principal, a Access) error {
	if !p.canUseAdminAPI() {
		return noAccess("This token cannot be used for the admin API.")
	}
	switch a.Need {
	case NeedAdminAPI:
		return nil
	case NeedRootAdmin:
		if !p.IsRootAdmin() {
			return noAccess("You need the ADMIN permission to do this.")
		}
		return nil
	case NeedFeatureUpdate:
		return s.authorizeFeatureUpdate(ctx, p, a.Project)
	}
	return noAccess("You do not have the permission to do this.")
}

// authorizeFeatureUpdate is authorize's rule for UPDATE_FEATURE on
// projectID, for p, a principal of the admin API. It reads the project
// once. For a caller that is not a root admin, the same store reads happen
// in the same order whether the project exists or not (the caller's
// project access, then the project), so a missing project and a private
// one the caller cannot see take the same time to answer: timing does not
// tell that it exists.
func (s *Service) authorizeFeatureUpdate(ctx context.Context, p Principal, projectID string) error {
	if err := CheckText("projectId", projectID); err != nil {
		return err
	}
	var access ProjectAccess
	if !p.IsRootAdmin() {
		var err error
		if access, err = s.store.ProjectAccess(ctx, p.User.ID); err != nil {
			return err
		}
	}
	project, err := s.store.Project(ctx, projectID)
	if err != nil {
		return projectNotFound(err, projectID)
	}
	if _, member := access.Roles[project.ID]; member || p.IsRootAdmin() {
		return nil
	}
	if project.Mode == ModePrivate {
		return notFound("Project %s does not exist.", QuoteInput(project.ID))
	}
	if project.Mode == ModeOpen && p.User.RootRole == RoleEditor {
		return nil
	}
	return noAccess("You need the UPDATE_FEATURE permission on project %s to do this.", QuoteInput(project.ID))
}

// IsRootAdmin reports whether p holds the ADMIN permission: an admin token,
// the system, or a user whose root role is Admin.
func (p Principal) IsRootAdmin() bool {
	switch p.Kind {
	case PrincipalAdminToken, PrincipalSystem:
		return true
	case PrincipalUser:
		return p.User != nil && p.User.RootRole == RoleAdmin
	}
	return false
}

// canUseAdminAPI reports whether p may call admin operations at all.
func (p Principal) canUseAdminAPI() bool {
	switch p.Kind {
	case PrincipalAdminToken, PrincipalSystem:
		return true
	case PrincipalUser:
		return p.User != nil
	}
	return false
}
