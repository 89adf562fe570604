package session

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestNegotiate(t *testing.T) {
	tr := NewTracker(time.Second, 2*time.Second, 20*time.Second)
	for req, want := range map[int32]time.Duration{
		0: 2 * time.Second, 1500: 2 * time.Second, 5000: 5 * time.Second, 60000: 20 * time.Second,
	} {
		if got := tr.Negotiate(req); got != want {
			t.Errorf("Negotiate(%d) = %v, want %v", req, got, want)
		}
	}
}

func TestExpiryBuckets(t *testing.T) {
	tr := NewTracker(100*time.Millisecond, 0, time.Hour)
	t0 := time.UnixMilli(1_000_000)
	tr.Add(1, NewPassword(), 400*time.Millisecond, t0)
	tr.Add(2, NewPassword(), 400*time.Millisecond, t0)
	// Expiry comes after the timeout, at most one tick late.
	if got := tr.Expired(t0.Add(399 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	tr.Touch(2, t0.Add(300*time.Millisecond))
	if got := tr.Expired(t0.Add(500 * time.Millisecond)); !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("expired %v, want [1]", got)
	}
	if tr.Touch(1, t0.Add(500*time.Millisecond)) {
		t.Fatal("touched a closing session")
	}
	tr.Remove(1)
	if got := tr.Expired(t0.Add(900 * time.Millisecond)); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("expired %v, want [2]", got)
	}
}

func TestResume(t *testing.T) {
	tr := NewTracker(time.Second, 0, time.Hour)
	now := time.Now()
	pw := NewPassword()
	tr.Add(7, pw, 10*time.Second, now)
	tr.Bind(7, "conn1")
	if _, ok := tr.Resume(7, bytes.Repeat([]byte{0}, 16), time.Second, "conn2", now); ok {
		t.Fatal("wrong password accepted")
	}
	if tr.Owner(7) != "conn1" {
		t.Fatal("a failed resume changed the owner")
	}
	prev, ok := tr.Resume(7, pw, 5*time.Second, "conn2", now)
	if !ok || prev != "conn1" || tr.Owner(7) != "conn2" || tr.Timeout(7) != 5*time.Second {
		t.Fatalf("resume: prev %v ok %v", prev, ok)
	}
	tr.Unbind(7, "conn1") // the old connection closing must not unbind the new one
	if tr.Owner(7) != "conn2" {
		t.Fatal("old connection unbound the new one")
	}
	if _, ok := tr.Resume(8, pw, time.Second, "c", now); ok {
		t.Fatal("unknown session resumed")
	}
}

func TestIDsUnique(t *testing.T) {
	tr := NewTracker(time.Second, 0, time.Hour)
	now := time.Now()
	seen := map[int64]bool{}
	for i := 0; i < 1000; i++ {
		id := tr.NewID(now)
		if id <= 0 || seen[id] {
			t.Fatalf("id %d repeated or not positive", id)
		}
		seen[id] = true
	}
}
