// Package cache is a small TTL cache safe for concurrent use.
package cache

import (
	"sync"
	"time"
)

// Entry is one cached value and when it stops being valid.
type Entry[V any] struct {
	Value   V
	Expires time.Time
}

// Store is what a cache backend must do.
type Store interface {
	Get(key string) (any, bool)
	Set(key string, value any)
}

type Clock func() time.Time

// Cache holds values for a fixed time.
type Cache[V any] struct {
	mu      sync.Mutex
	ttl     time.Duration
	entries map[string]Entry[V]
	now     Clock
}

// New returns an empty cache whose entries live for ttl.
func New[V any](ttl time.Duration) *Cache[V] {
	return &Cache[V]{ttl: ttl, entries: map[string]Entry[V]{}, now: time.Now}
}

// Get returns the value for key if it has not expired.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.now().After(e.Expires) {
		var zero V
		return zero, false
	}
	return e.Value, true
}

func (c *Cache[V]) Set(key string, value V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = Entry[V]{Value: value, Expires: c.now().Add(c.ttl)}
}

func (c Cache[V]) Len() int {
	return len(c.entries)
}
