package flagadmin

import (
	"context"
	"encoding/json"
	"strconv"
)

// DeleteServiceAccount deletes a service account (DELETE
// /api/admin/service-account/:id). It needs the ADMIN permission. An unknown
// or non-numeric id, or the id of a normal user, is ErrNotFound; an id that
// is not valid text (invalid UTF-8, NUL) is ErrValidation. In one
// transaction the account and all its tokens are removed and a
// service-account-deleted event is recorded with the account in preData.
func (s *Service) DeleteServiceAccount(ctx context.Context, p Principal, id string) error {
	if err := s.authorize(ctx, p, rootAdmin); err != nil {
		return err
	}
	if err := CheckText("id", id); err != nil {
		return err
	}
	missing := notFound("Service account %s does not exist.", QuoteInput(id))
	uid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return missing
	}
	by, byID := p.Actor()
	err = s.store.DeleteUser(ctx, uid, func(u User) (Event, error) {
		if !u.IsService {
			return Event{}, missing
		}
		pre, err := json.Marshal(map[string]any{"id": u.ID, "name": u.Name, "username": u.Username, "rootRole": u.RootRole})
		if err != nil {
			return Event{}, err
		}
		return Event{
			CreatedAt:       s.now(),
			Type:            EventServiceAccountDeleted,
			CreatedBy:       by,
			CreatedByUserID: byID,
			PreData:         pre,
		}, nil
	})
	if isKind(err, ErrNotFound) {
		return missing
	}
	return err
}
