//go:build !linux

package kernel

import "syscall"

// Parker has no epoll here: idle readers stay goroutines.
type Parker struct{}

// Slot is a reader's place in a Parker.
type Slot struct{}

// Waker is a parked reader.
type Waker interface{ Wake() }

// NewParker returns nil: there is no parker here.
func NewParker() *Parker { return nil }

// Park reports false: the reader goes on itself.
func (*Parker) Park(*Slot, Waker, syscall.Conn) bool { return false }

// Forget does nothing.
func (*Parker) Forget(*Slot) {}

// Run returns at once.
func (*Parker) Run() {}

// Close does nothing.
func (*Parker) Close() {}
