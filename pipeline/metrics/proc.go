package metrics

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The Go runtime's and the process's metrics, under the names and with
// the meanings that Prometheus's Go client gives them (go_*, process_*),
// so that the usual dashboards and alerts work: written by hand because
// client_golang, with the protobuf exposition it carries, grows the
// linux/arm64 binary by 4.0 MB (8.5 → 12.5 MB) for the same text.

// writeRuntime writes the go_* metrics and posed_build_info.
func writeRuntime(w io.Writer, version string) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g := func(name, help string, v float64) { writeMetric(w, name, help, "gauge", v) }
	c := func(name, help string, v float64) { writeMetric(w, name, help, "counter", v) }
	g("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	if n := procThreads(); n > 0 {
		g("go_threads", "Number of OS threads of the process.", float64(n))
	}
	g("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting.", float64(runtime.GOMAXPROCS(0)))
	fmt.Fprintf(w, "# HELP go_info Information about the Go environment.\n# TYPE go_info gauge\ngo_info{version=%q} 1\n", runtime.Version())
	fmt.Fprintf(w, "# HELP posed_build_info posed's version and the Go version that built it; always 1.\n# TYPE posed_build_info gauge\nposed_build_info{version=%q,goversion=%q} 1\n", version, runtime.Version())
	g("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", float64(ms.Alloc))
	c("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", float64(ms.TotalAlloc))
	g("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(ms.Sys))
	c("go_memstats_mallocs_total", "Total number of heap objects allocated.", float64(ms.Mallocs))
	c("go_memstats_frees_total", "Total number of heap objects frees.", float64(ms.Frees))
	g("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", float64(ms.HeapAlloc))
	g("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", float64(ms.HeapSys))
	g("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", float64(ms.HeapIdle))
	g("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", float64(ms.HeapInuse))
	g("go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", float64(ms.HeapReleased))
	g("go_memstats_heap_objects", "Number of currently allocated objects.", float64(ms.HeapObjects))
	g("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in use.", float64(ms.StackInuse))
	g("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", float64(ms.NextGC))
	g("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(ms.LastGC)/1e9)
	// GC pauses: a summary over the last (up to 256) pauses, as the Go
	// client reports them.
	n := min(int(ms.NumGC), len(ms.PauseNs))
	pauses := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		pauses = append(pauses, float64(ms.PauseNs[(int(ms.NumGC)-1-i+len(ms.PauseNs))%len(ms.PauseNs)])/1e9)
	}
	slices.Sort(pauses)
	fmt.Fprintf(w, "# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.\n# TYPE go_gc_duration_seconds summary\n")
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		v := math.NaN()
		if len(pauses) > 0 {
			v = pauses[int(math.Round(q*float64(len(pauses)-1)))]
		}
		fmt.Fprintf(w, "go_gc_duration_seconds{quantile=\"%g\"} %g\n", q, v)
	}
	fmt.Fprintf(w, "go_gc_duration_seconds_sum %g\ngo_gc_duration_seconds_count %d\n", float64(ms.PauseTotalNs)/1e9, ms.NumGC)
}

// writeProcess writes the process_* metrics from /proc/self (nothing
// where there is no procfs).
func writeProcess(w io.Writer) {
	st, err := readProcStat()
	if err != nil {
		return
	}
	g := func(name, help string, v float64) { writeMetric(w, name, help, "gauge", v) }
	writeMetric(w, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", st.cpu)
	g("process_resident_memory_bytes", "Resident memory size in bytes.", st.rss)
	g("process_virtual_memory_bytes", "Virtual memory size in bytes.", st.vsize)
	if !st.start.IsZero() {
		g("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", float64(st.start.UnixNano())/1e9)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		g("process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		g("process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
}

// writeMetric writes one unlabelled metric with its HELP and TYPE.
func writeMetric(w io.Writer, name, help, typ string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %g\n", name, help, name, typ, name, v)
}

// procStat is what /proc/self/stat says of the process.
type procStat struct {
	cpu, rss, vsize float64 // CPU seconds, bytes, bytes
	start           time.Time
}

// userHZ is the kernel's clock tick for /proc times (USER_HZ, 100 on
// every Linux architecture posed runs on).
const userHZ = 100

func readProcStat() (procStat, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b, bootTime())
}

// parseProcStat reads proc(5)'s stat line: fields after the command name
// (which may hold spaces and parentheses, so the last ')' ends it).
func parseProcStat(b []byte, boot time.Time) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/self/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("/proc/self/stat: %d fields", len(f)+2)
	}
	num := func(k int) float64 {
		v, _ := strconv.ParseFloat(f[k-3], 64)
		return v
	}
	st := procStat{
		cpu:   (num(14) + num(15)) / userHZ, // utime + stime
		vsize: num(23),
		rss:   num(24) * float64(os.Getpagesize()),
	}
	if !boot.IsZero() {
		st.start = boot.Add(time.Duration(num(22) / userHZ * float64(time.Second)))
	}
	return st, nil
}

// bootTime is the system's boot time from /proc/stat's btime.
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(s, 0)
			}
		}
	}
	return time.Time{}
}

// procThreads is the process's thread count from /proc/self/status (0 if
// unknown). (runtime/pprof's threadcreate count would add 131 KB.)
func procThreads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
