package memstore

import (
	"slices"

	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// What someone who can change the store's memory does (the attacks on
// retention): each reports whether event id has a leaf.

// DeleteEventRow removes event id, leaving its leaf.
func DeleteEventRow(s *Store, id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.events = slices.DeleteFunc(s.w.events, func(e storedEvent) bool { return e.ID == id })
	return s.w.leafOf(id) != nil
}

// MarkPruned marks the leaf of event id pruned and drops its salt, as
// pruning does.
func MarkPruned(s *Store, id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.w.leafOf(id)
	if l != nil {
		l.pruned, l.salt = true, nil
	}
	return l != nil
}

// EditLeaf rewrites the fields the leaf of event id records with edit.
func EditLeaf(s *Store, id int64, edit func(*vlog.Leaf)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.w.leafOf(id)
	if l == nil {
		return false
	}
	ll := l.logLeaf(0)
	edit(&ll)
	l.hash, l.pruned, l.createdAt, l.project, l.typ, l.content, l.salt = ll.Hash, ll.Pruned, ll.CreatedAt, ll.Project, ll.Type, ll.Content, ll.Salt
	return true
}

// leafOf returns the leaf of event id, nil when it has none.
func (w *world) leafOf(id int64) *leaf {
	for i := range w.leaves {
		if w.leaves[i].eventID == id {
			return &w.leaves[i]
		}
	}
	return nil
}
