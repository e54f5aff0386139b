package filewatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A change to a watched name wakes the subscriptions, after Settle; the directory's removal
// ends them with an error.
func TestHub(t *testing.T) {
	dir := t.TempDir()
	settled := make(chan struct{}, 16)
	h := NewHub(dir, []string{"f"}, Options{Settle: func(context.Context) { settled <- struct{}{} }})
	defer h.Close(nil)
	a, err := h.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := os.WriteFile(filepath.Join(dir, "f.tmp"), []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "f.tmp"), filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.C():
	case <-time.After(30 * time.Second):
		t.Fatal("no wake after the rename")
	}
	select {
	case <-settled:
	default:
		t.Fatal("woken before Settle ran")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
		if !errors.Is(a.Err(), errGone) {
			t.Fatalf("Err() = %v after the directory's removal", a.Err())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription did not end when its directory was removed")
	}
	h.Close(nil)
	if _, err := h.Subscribe(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
}
