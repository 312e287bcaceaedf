package session

import (
	"container/list"
	"sync"
)

// lru is a set of at most max members, most recently used first: the
// sessions that keep their logs open (see logs.keep). Using one more than
// max evicts the least recently used, whose caller then closes it.
//
// mu is a leaf lock: taken with or without a session's lock.
type lru[T comparable] struct {
	max int

	mu sync.Mutex
	l  list.List // of T
	at map[T]*list.Element
}

func newLRU[T comparable](max int) *lru[T] { return &lru[T]{max: max, at: map[T]*list.Element{}} }

// touch marks x as used now, adding it if it is not a member, and
// returns the member it evicted, if any (never x itself).
func (c *lru[T]) touch(x T) (evicted T, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.at[x]; e != nil {
		c.l.MoveToFront(e)
		return evicted, false
	}
	c.at[x] = c.l.PushFront(x)
	if c.l.Len() <= c.max || c.l.Len() < 2 {
		return evicted, false
	}
	evicted = c.l.Remove(c.l.Back()).(T)
	delete(c.at, evicted)
	return evicted, true
}

// remove takes x out, if it is a member.
func (c *lru[T]) remove(x T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.at[x]; e != nil {
		c.l.Remove(e)
		delete(c.at, x)
	}
}

func (c *lru[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.l.Len()
}
