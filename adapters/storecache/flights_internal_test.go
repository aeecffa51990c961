package storecache

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// waitForWaiters returns once n callers of c wait for a computation (the
// one computing included).
func waitForWaiters(t *testing.T, c *resultCache, n int64) {
	t.Helper()
	for c.waiting.Load() < n {
		runtime.Gosched()
	}
}

// A computation that panics: the panic goes on in the caller that ran
// it, with its own value, and a caller that waited for it computes its
// own result instead of failing or waiting forever.
func TestResultCacheComputationPanics(t *testing.T) {
	c := newResultCache(1 << 20)
	ctx := context.Background()
	release := make(chan struct{})
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		c.load(ctx, []byte("k"), 1, nil, func() (cached, error) {
			<-release
			panic("the store broke")
		})
	}()
	waitForWaiters(t, c, 1)
	waiter := make(chan any, 1)
	go func() {
		v, err := c.load(ctx, []byte("k"), 1, nil, func() (cached, error) {
			return cached{value: "own", size: 1, keep: true}, nil
		})
		if err != nil {
			waiter <- err
			return
		}
		waiter <- v
	}()
	waitForWaiters(t, c, 2)
	close(release)
	if p := <-recovered; p != "the store broke" {
		t.Errorf("the computing caller recovered a %T (%.60v), want the computation's own panic value", p, p)
	}
	if got := <-waiter; got != "own" {
		t.Errorf("the waiter got %v, want the result of its own computation", got)
	}
	if v, err := c.load(ctx, []byte("k"), 1, nil, func() (cached, error) { return cached{}, errors.New("computed again") }); v != "own" || err != nil {
		t.Errorf("after the panic the cache answers %v, %v; want the waiter's result", v, err)
	}
}

// A caller waiting for another's computation leaves when its context
// ends, while the computation goes on; the computation's result is then
// cached for later callers.
func TestResultCacheWaiterLeaves(t *testing.T) {
	c := newResultCache(1 << 20)
	release := make(chan struct{})
	first := make(chan any, 1)
	go func() {
		v, _ := c.load(context.Background(), []byte("k"), 1, nil, func() (cached, error) {
			<-release
			return cached{value: "computed", size: 1, keep: true}, nil
		})
		first <- v
	}()
	waitForWaiters(t, c, 1)
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := c.load(ctx, []byte("k"), 1, nil, func() (cached, error) {
			return cached{}, errors.New("a waiter computed")
		})
		left <- err
	}()
	waitForWaiters(t, c, 2)
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiter whose context ended got %v, want context.Canceled", err)
	}
	close(release)
	if v := <-first; v != "computed" {
		t.Errorf("the computing caller got %v", v)
	}
	if v, err := c.load(context.Background(), []byte("k"), 1, nil, func() (cached, error) { return cached{}, errors.New("computed again") }); v != "computed" || err != nil {
		t.Errorf("then the cache answers %v, %v; want the computed result", v, err)
	}
}
