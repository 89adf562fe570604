package benchcalls

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// CPU counts a process's own time and that of the processes it started.
func TestCPU(t *testing.T) {
	before, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A child that burns CPU for a while and then waits to be stopped.
	child := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done; exec sleep 60`)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	if _, err := out.Read(make([]byte, 8)); err != nil { // "done": the loop is over
		t.Fatal(err)
	}
	childCPU, err := CPU(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if childCPU < 20*time.Millisecond {
		t.Fatalf("the child's loop took %v of CPU, want some", childCPU)
	}
	after, err := CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < childCPU {
		t.Errorf("CPU of this process grew by %v while its child used %v", after-before, childCPU)
	}
	if _, err := CPU(1 << 30); err == nil {
		t.Error("CPU of a process that does not exist: no error")
	}
}
