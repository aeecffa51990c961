package httpapi

import (
	"context"
	"net/http"
)

type deleteServiceAccountInput struct {
	ID string `path:"id" doc:"The numeric id of the service account. An unknown or non-numeric id, or the id of a normal user, is a 404; an id with a NUL character or invalid UTF-8 is a 400." example:"10"`
}

func (s *Server) registerServiceAccounts() {
	op := s.operation("deleteServiceAccount", http.MethodDelete, "/api/admin/service-account/{id}", tagServiceAccounts,
		"Delete a service account",
		"Deletes a service account: the account is removed, every token it owns stops working at once, "+
			"and a service-account-deleted event is recorded with the account in preData. Needs the ADMIN "+
			"permission (an admin token or a root Admin). Deleting it again is a 404.",
		"The service account is deleted. The response has no body.",
		http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
		http.StatusInternalServerError, http.StatusServiceUnavailable)
	register(s, op, s.deleteServiceAccount)
}

func (s *Server) deleteServiceAccount(ctx context.Context, in *deleteServiceAccountInput) (*emptyOutput, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.svc.DeleteServiceAccount(ctx, p, in.ID); err != nil {
		return nil, s.fail(ctx, err)
	}
	return &emptyOutput{}, nil
}
