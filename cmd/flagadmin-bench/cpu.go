package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc (USER_HZ, 100 on every
// Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// cpuSample is a reading of CPU time spent so far: by the server process,
// by this process (the load generator), and by the whole machine.
type cpuSample struct {
	server, self time.Duration
	// busy and total are the machine's non-idle and total CPU time, all cores.
	busy, total time.Duration
	ok          bool
}

// sampleCPU reads the CPU times of serverPID, this process and the machine
// from /proc; ok is false when any of them cannot be read (not Linux, or
// the server is remote: serverPID 0).
func sampleCPU(serverPID int) cpuSample {
	var s cpuSample
	var err1, err2, err3 error
	if serverPID != 0 {
		s.server, err1 = processCPU(serverPID)
	} else {
		err1 = errors.New("no server process")
	}
	s.self, err2 = processCPU(os.Getpid())
	s.busy, s.total, err3 = machineCPU()
	s.ok = err1 == nil && err2 == nil && err3 == nil
	return s
}

// processCPU returns the user and system CPU time of a process.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields are counted from
	// the last ')'. utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/PID/stat format")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc/PID/stat format")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// machineCPU returns the machine's busy and total CPU time over all cores
// (first line of /proc/stat; idle and iowait count as not busy).
func machineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, errors.New("unexpected /proc/stat format")
	}
	var sum, idle int64
	for i, v := range f[1:] {
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, err
		}
		sum += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return time.Duration(sum-idle) * clockTick, time.Duration(sum) * clockTick, nil
}

// cpuUse is where the CPU went during a phase, per completed request.
type cpuUse struct {
	// ServerMsPerRequest: the server process (0 when in-process or remote).
	ServerMsPerRequest float64 `json:"serverCpuMsPerRequest"`
	// LoadGenMsPerRequest: this process (the load generator; with an
	// in-process server, the server too).
	LoadGenMsPerRequest float64 `json:"loadGenCpuMsPerRequest"`
	// OtherMsPerRequest: everything else on the machine, the database first.
	OtherMsPerRequest float64 `json:"otherCpuMsPerRequest"`
	// MachineBusy is the share of all cores' time that was busy.
	MachineBusy float64 `json:"machineBusy"`
}

// cpuBetween attributes the CPU time between two samples to n requests.
// inProcess: the server is this process, so its time is the load
// generator's.
func cpuBetween(a, b cpuSample, n int, inProcess bool) (cpuUse, bool) {
	if !a.ok || !b.ok || n == 0 || b.total <= a.total {
		return cpuUse{}, false
	}
	per := func(d time.Duration) float64 { return millis(d) / float64(n) }
	server, self := b.server-a.server, b.self-a.self
	if inProcess {
		server = 0
	}
	busy := b.busy - a.busy
	return cpuUse{
		ServerMsPerRequest:  per(server),
		LoadGenMsPerRequest: per(self),
		OtherMsPerRequest:   per(max(0, busy-server-self)),
		MachineBusy:         float64(busy) / float64(b.total-a.total),
	}, true
}
