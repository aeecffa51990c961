package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"

	"github.com/flagadmin/flagadmin/adapters/client"
	"github.com/flagadmin/flagadmin/adapters/httpapi"
)

// TestEmbeddedAndRemoteAgree runs report embedded and through the client
// against a server over the same world: the outputs must be identical.
func TestEmbeddedAndRemoteAgree(t *testing.T) {
	ctx := context.Background()
	embedded, err := connect(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var local bytes.Buffer
	if err := report(ctx, embedded, &local); err != nil {
		t.Fatal(err)
	}

	svc, secret, err := embeddedWorld(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(svc, httpapi.Config{}).Handler())
	defer srv.Close()
	remote, err := connect(ctx, srv.URL, secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := remote.(*client.Client); !ok {
		t.Fatalf("connect with a server: got %T, want *client.Client", remote)
	}
	var over bytes.Buffer
	if err := report(ctx, remote, &over); err != nil {
		t.Fatal(err)
	}
	if local.String() != over.String() {
		t.Errorf("embedded and remote differ:\nembedded:\n%s\nremote:\n%s", &local, &over)
	}
	for _, want := range []string{"2 projects:", "feature-created events: 2", "limit 5000 refused: limit:", "web/new-checkout completed: kept", "not found = true"} {
		if !bytes.Contains(local.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, &local)
		}
	}
}
