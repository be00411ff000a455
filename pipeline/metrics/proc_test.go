package metrics

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The CPU time read from /proc/self/stat agrees with getrusage(2), and a
// command name holding spaces and parentheses does not shift the fields.
func TestProcStat(t *testing.T) {
	for i := 0; i < 3e7; i++ { // some CPU time to measure
		_ = i * i
	}
	st, err := readProcStat()
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	ref := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	if st.cpu == 0 && runtime.GOARCH != "amd64" {
		// qemu-user (make test-arm64) synthesises /proc/self/stat
		// without CPU times; the parse below is still checked.
		t.Logf("/proc/self/stat gives no CPU time under emulation (getrusage: %g s)", ref)
	} else if d := st.cpu - ref; d < -0.05 || d > 0.05 {
		t.Errorf("cpu %g s from /proc, %g s from getrusage", st.cpu, ref)
	}
	line := []byte("42 (a (b) c) S 1 1 1 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 500 1048576 7 18446744073709551615\n")
	st, err = parseProcStat(line, time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	if st.cpu != 3 || st.vsize != 1048576 || st.rss != 7*float64(os.Getpagesize()) || !st.start.Equal(time.Unix(1005, 0)) {
		t.Errorf("parsed %+v", st)
	}
	if _, err := parseProcStat([]byte("42 (x) S 1 2"), time.Time{}); err == nil {
		t.Error("a short stat line parsed")
	}
}
