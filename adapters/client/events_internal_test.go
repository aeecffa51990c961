package client

import (
	"strings"
	"testing"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/internal/eventtest"
)

// TestDecodeEventCarriesEveryField: the decoder of the Event JSON reads
// back every declared field (flagadmin.EventFields) of an event whose
// every field is set, as the server writes it (Event.MarshalJSON).
func TestDecodeEventCarriesEveryField(t *testing.T) {
	want := eventtest.Full(t)
	b, err := want.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := eventtest.Diff(want, got); d != nil {
		t.Errorf("decodeEvent lost fields:\n%s", strings.Join(d, "\n"))
	}
}

// TestSearchQuerySendsEveryParameter: each declared parameter given is
// sent under its name, and none is sent empty.
func TestSearchQuerySendsEveryParameter(t *testing.T) {
	if q := searchQuery(flagadmin.EventSearchParams{}); len(q) != 0 {
		t.Errorf("empty parameters give the query %q", q.Encode())
	}
	for _, f := range flagadmin.FilterParams() {
		var p flagadmin.EventSearchParams
		f.Set(&p, "IS:v")
		q := searchQuery(p)
		if len(q) != 1 || q.Get(f.Name) != "IS:v" {
			t.Errorf("parameter %s gives the query %q", f.Name, q.Encode())
		}
	}
}
