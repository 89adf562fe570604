package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// Changes are kept in the order made, read back newest first, by rule,
// with their documents (none before a rule was created, none after it was
// deleted), and survive reopening the store.
func TestRuleChanges(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "monitor.db")
	clk := newClock(t0)
	st := openAt(t, path, clk)
	v1, v2 := "conditions: [a]", "conditions: [b]"
	made := []Change{
		{Who: "console.token", Client: "10.0.0.5", Kind: "condition", Key: "org.example.Greeter:1.0.0:", Action: "save", New: &v1},
		{Who: "alice (console.token)", Client: "10.0.0.6", Kind: "tag", Key: "greeter-app", Action: "save", New: &v1},
		{Who: "console.token", Client: "10.0.0.5", Kind: "condition", Key: "org.example.Greeter:1.0.0:", Action: "save", Old: &v1, New: &v2},
		{Who: "console.token", Client: "10.0.0.5", Kind: "condition", Key: "org.example.Greeter:1.0.0:", Action: "delete", Old: &v2},
	}
	var ids []int64
	for i, c := range made {
		clk.Set(t0 + int64(i))
		id, err := st.RecordChange(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	st.Close()
	st = openAt(t, path, clk)

	got, err := st.Changes(ctx, "condition", "org.example.Greeter:1.0.0:", 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d changes, %v", len(got), err)
	}
	if got[0].ID != ids[3] || got[0].Action != "delete" || got[0].New != nil || *got[0].Old != v2 || got[0].Time != (t0+3)*1000 ||
		got[1].ID != ids[2] || *got[1].Old != v1 || *got[1].New != v2 || got[2].Old != nil || got[2].Client != "10.0.0.5" {
		t.Fatalf("changes %+v", got)
	}
	if got, _ := st.Changes(ctx, "condition", "org.example.Greeter:1.0.0:", 1); len(got) != 1 || got[0].ID != ids[3] {
		t.Fatalf("limit 1: %+v", got)
	}
	c, err := st.ChangeByID(ctx, ids[1])
	if err != nil || c.Who != "alice (console.token)" || c.Kind != "tag" || *c.New != v1 {
		t.Fatalf("change %d: %+v %v", ids[1], c, err)
	}
	if _, err := st.ChangeByID(ctx, 999); !errors.Is(err, ErrNoChange) {
		t.Fatalf("unknown change: %v", err)
	}
	if got, err := st.Changes(ctx, "tag", "other-app", 0); err != nil || len(got) != 0 || got == nil {
		t.Fatalf("a rule never changed: %v %v", got, err)
	}
}
