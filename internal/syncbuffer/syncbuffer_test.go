package syncbuffer

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got, want := b.String(), strings.Repeat("ab", 800); got != want {
		t.Errorf("got %d bytes, want %d", len(got), len(want))
	}
}
