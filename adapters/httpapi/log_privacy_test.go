package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/tlog/leaf"
)

// TestLogHidesWhatACallerMayNotSee plays the guessing attack on the
// log: a Viewer gathers every hash the log serves it (inclusion proofs of
// the events it may see, consistency proofs between every pair of sizes)
// and, for each event it may not see, tries to confirm it from those
// hashes knowing everything about it but its salt: its exact content,
// with no salt, the zero salt, or any salt it was given. Nothing
// confirms, and no answer it gets holds a hidden event's salt. With the
// event's real salt the same guess does confirm: the hashes it gathered
// hold the hidden leaves, so only the salt stands between it and them.
func TestLogHidesWhatACallerMayNotSee(t *testing.T) {
	e := newLogEnv(t, true, true)
	const size = 5
	hidden := []int64{3, 4} // vic may not see them (a private project; no project)
	seen := map[[32]byte]bool{}
	var bodies [][]byte
	add := func(hashes [][]byte) {
		for _, h := range hashes {
			seen[[32]byte(h)] = true
		}
	}
	var salts [][]byte
	for id := int64(1); id <= size; id++ {
		for s := id; s <= size; s++ {
			w := e.get(t, "/api/admin/log/proof?id="+itoa(id)+"&size="+itoa(s), vicToken)
			bodies = append(bodies, w.Body.Bytes())
			if w.Code != http.StatusOK {
				continue
			}
			var p struct {
				LeafHash []byte   `json:"leafHash"`
				Hashes   [][]byte `json:"hashes"`
				Salt     []byte   `json:"salt"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			add(append(p.Hashes, p.LeafHash))
			salts = append(salts, p.Salt)
		}
	}
	for from := int64(1); from <= size; from++ {
		for to := from; to <= size; to++ {
			w := e.get(t, "/api/admin/log/consistency?from="+itoa(from)+"&to="+itoa(to), vicToken)
			bodies = append(bodies, w.Body.Bytes())
			var p struct {
				Hashes [][]byte `json:"hashes"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			add(p.Hashes)
		}
	}
	if w := e.get(t, "/api/admin/log/leaves", vicToken); w.Code != http.StatusForbidden {
		t.Errorf("leaves for a Viewer: status %d, want 403", w.Code)
	}
	// The real salts, as the root admin reads them.
	var page struct {
		Leaves []struct {
			EventID int64  `json:"id"`
			Salt    []byte `json:"salt"`
		} `json:"leaves"`
	}
	if err := json.Unmarshal(e.get(t, "/api/admin/log/leaves", adminToken).Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	real := map[int64][]byte{}
	for _, l := range page.Leaves {
		real[l.EventID] = l.Salt
	}
	for _, id := range hidden {
		ev := e.event(t, id)
		salt := real[id]
		if len(salt) != leaf.SaltSize {
			t.Fatalf("event %d: the admin's leaves give salt %x, want %d bytes", id, salt, leaf.SaltSize)
		}
		for _, b := range bodies {
			if bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString(salt))) {
				t.Errorf("event %d: its salt is in an answer to the Viewer: %s", id, b)
			}
		}
		ev.Salt = salt
		if h, err := leaf.LeafHash(ev); err != nil || !seen[h] {
			t.Fatalf("event %d: its leaf (err %v) is not among the %d hashes the Viewer gathered: the test would prove nothing", id, err, len(seen))
		}
		guesses := append([][]byte{make([]byte, leaf.SaltSize)}, salts...)
		for _, g := range guesses {
			ev.Salt = g
			if h, err := leaf.LeafHash(ev); err == nil && seen[h] {
				t.Errorf("event %d: confirmed by the Viewer with salt %x", id, g)
			}
		}
		content, err := leaf.EventContent(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, unsalted := range [][]byte{content, append([]byte(leaf.LeafFormat+"\n"), content...)} {
			if h := rfcLeaf(unsalted); seen[h] {
				t.Errorf("event %d: confirmed by the Viewer from its unsalted content", id)
			}
		}
	}
}

// rfcLeaf is RFC 9162's leaf hash of data.
func rfcLeaf(data []byte) [32]byte {
	return sha256.Sum256(append([]byte{0}, data...))
}
