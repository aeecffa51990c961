package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// results is everything a run measured, as --json writes it.
type results struct {
	Tool      string      `json:"tool"`
	StartedAt time.Time   `json:"startedAt"`
	Config    runConfig   `json:"config"`
	Machine   machineInfo `json:"machine"`
	Database  dbInfo      `json:"database"`
	World     worldInfo   `json:"world"`
	Server    serverInfo  `json:"server"`
	// Ceiling is the bare net/http handler's phase; nil when not measured.
	Ceiling *phaseResult  `json:"ceiling,omitempty"`
	Kinds   []phaseResult `json:"kinds"`
	Targets []targetCheck `json:"targets"`
}

// runConfig is the load's configuration.
type runConfig struct {
	Connections     int     `json:"connections"`
	DurationSeconds float64 `json:"durationSecondsPerKind"`
	WarmupSeconds   float64 `json:"warmupSecondsPerKind"`
	Kinds           string  `json:"kinds"`
	AccessLog       bool    `json:"accessLog"`
	URL             string  `json:"url,omitempty"`
	// ResultCacheBytes is the result cache of the server the run started
	// (0: off); nil for a server at --url.
	ResultCacheBytes *int64 `json:"resultCacheBytes,omitempty"`
	// DBMaxConns bounds the connections of the server the run started to
	// PostgreSQL or MySQL; 0 for a server at --url.
	DBMaxConns int `json:"dbMaxConns,omitempty"`
}

// machineInfo describes where the run happened.
type machineInfo struct {
	Hostname    string `json:"hostname"`
	OS          string `json:"os"`
	Kernel      string `json:"kernel,omitempty"`
	CPUModel    string `json:"cpuModel,omitempty"`
	NumCPU      int    `json:"nproc"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	GoVersion   string `json:"goVersion"`
	// LoadAverage is /proc/loadavg when the run started.
	LoadAverage string `json:"loadAverage,omitempty"`
}

// dbInfo names the database (password removed).
type dbInfo struct {
	URL string `json:"url"`
	// RunCopy is the copy of the world the run used ("" when in place).
	RunCopy string `json:"runCopy,omitempty"`
	System  string `json:"system"`
	Version string `json:"version,omitempty"`
}

// serverInfo says how the server ran and how much memory it took.
type serverInfo struct {
	// Mode: child (its own process), in-process (shares this process with
	// the load generator) or remote (--url).
	Mode         string  `json:"mode"`
	BaseURL      string  `json:"baseUrl"`
	PeakRSSBytes int64   `json:"peakRssBytes,omitempty"`
	PeakRSSMiB   float64 `json:"peakRssMiB,omitempty"`
}

// targetCheck is one of the search targets and whether the run met it.
type targetCheck struct {
	Target string `json:"target"`
	Got    string `json:"got"`
	OK     bool   `json:"ok"`
}

// collectMachine describes this machine (Linux details when /proc has them).
func collectMachine() machineInfo {
	m := machineInfo{OS: runtime.GOOS + "/" + runtime.GOARCH, NumCPU: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAverage = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if fs := strings.Fields(rest); len(fs) == 2 {
					kb, _ := strconv.ParseInt(fs[0], 10, 64)
					m.MemoryBytes = kb * 1024
				}
				break
			}
		}
		f.Close()
	}
	return m
}

// Targets of the fixed kinds.
const (
	pageP99Ms         = 25.0
	pageCeilingShare  = 0.30
	queryP99Ms        = 100.0
	offsetP99Ms       = 100.0
	projectsP99Ms     = 25.0  // about 200 projects
	manyProjectsP99Ms = 100.0 // 10,000 projects
	manyProjects      = 1000  // from this many projects on, the 10,000-project target applies
	peakRSSLimitMiB   = 150.0
	sqliteVsPostgresX = 3.0
	// Targets of the varied workload.
	variedPageP99Ms        = 25.0
	variedPageCeilingShare = 0.12
	variedOffsetP99Ms      = 50.0
	variedProjectsP99Ms    = 25.0
	variedSQLiteX          = 2.0
	mib                    = 1 << 20
	checkMark, failTag     = "ok", "MISS"
)

// evaluate checks the run against the search targets.
func evaluate(r *results) []targetCheck {
	var out []targetCheck
	add := func(target, got string, ok bool) {
		out = append(out, targetCheck{Target: target, Got: got, OK: ok})
	}
	for _, k := range r.Kinds {
		if k.Requests == 0 && k.Class != classDeprecated && k.Class != classWrite && k.Class != classMixed && k.Class != classVariedOther {
			add(k.Kind+" answered within the window", fmt.Sprintf("no answer in %.0fs (%d late)", k.Seconds, k.Late), false)
			continue
		}
		switch k.Class {
		case classVariedPage:
			add(fmt.Sprintf("%s p99 < %.0f ms", k.Kind, variedPageP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < variedPageP99Ms)
			if r.Ceiling != nil {
				add(fmt.Sprintf("%s >= %.0f%% of the ceiling", k.Kind, 100*variedPageCeilingShare),
					fmt.Sprintf("%.1f%%", 100*k.CeilingFraction), k.CeilingFraction >= variedPageCeilingShare)
			}
		case classVariedOffset:
			add(fmt.Sprintf("%s p99 < %.0f ms", k.Kind, variedOffsetP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < variedOffsetP99Ms)
		case classVariedProjects:
			if r.World.Projects < manyProjects {
				add(fmt.Sprintf("%s (%d projects) p99 < %.0f ms", k.Kind, r.World.Projects, variedProjectsP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < variedProjectsP99Ms)
			}
		case classPage:
			add(fmt.Sprintf("%s p99 < %.0f ms", k.Kind, pageP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < pageP99Ms)
			if r.Ceiling != nil {
				add(fmt.Sprintf("%s >= %.0f%% of the ceiling", k.Kind, 100*pageCeilingShare),
					fmt.Sprintf("%.1f%%", 100*k.CeilingFraction), k.CeilingFraction >= pageCeilingShare)
			}
		case classQuery:
			add(fmt.Sprintf("%s p99 < %.0f ms", k.Kind, queryP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < queryP99Ms)
		case classOffset:
			add(fmt.Sprintf("%s p99 < %.0f ms", k.Kind, offsetP99Ms), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < offsetP99Ms)
		case classProjects:
			limit := projectsP99Ms
			if r.World.Projects >= manyProjects {
				limit = manyProjectsP99Ms
			}
			add(fmt.Sprintf("%s (%d projects) p99 < %.0f ms", k.Kind, r.World.Projects, limit), fmt.Sprintf("%.1f ms", k.P99Ms), k.P99Ms < limit)
		}
	}
	evaluateKeyset(r, add)
	evaluateStream(r, add)
	errs := 0
	for _, k := range r.Kinds {
		errs += k.Errors
	}
	add("no errors", strconv.Itoa(errs), errs == 0)
	if r.Server.PeakRSSBytes > 0 && r.Server.Mode == "child" {
		add(fmt.Sprintf("server peak RSS < %.0f MiB", peakRSSLimitMiB), fmt.Sprintf("%.1f MiB", r.Server.PeakRSSMiB), r.Server.PeakRSSMiB < peakRSSLimitMiB)
	}
	return out
}

// printHeader writes what the run is about.
func printHeader(w io.Writer, r *results) {
	m := r.Machine
	fmt.Fprintf(w, "flagadmin-bench %s\n", r.StartedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "machine:  %s, %d CPUs, %.1f GiB RAM, %s, %s, load %s\n", orDash(m.CPUModel), m.NumCPU,
		float64(m.MemoryBytes)/(1<<30), m.OS, m.GoVersion, orDash(m.LoadAverage))
	fmt.Fprintf(w, "database: %s (%s)\n", r.Database.URL, orDash(r.Database.Version))
	if r.Database.RunCopy != "" {
		fmt.Fprintf(w, "          the run used a fresh copy, %s, dropped afterwards\n", r.Database.RunCopy)
	}
	wd := r.World
	how := "reused"
	if !wd.Reused {
		how = fmt.Sprintf("built in %.1fs, %s events/s", wd.BuildSeconds, thousands(int64(wd.EventsPerSecond)))
	}
	fmt.Fprintf(w, "world:    %s events (%s in the database), %d projects, %d features, %d users, seed %d; %s\n",
		thousands(int64(wd.Events)), thousands(int64(wd.EventsInDatabase)), wd.Projects, wd.Features, wd.Users, wd.Seed, how)
	fmt.Fprintf(w, "server:   %s at %s, result cache %s", r.Server.Mode, r.Server.BaseURL, resultCacheText(r.Config.ResultCacheBytes))
	if r.Config.DBMaxConns > 0 && (r.Database.System == "postgres" || r.Database.System == "mysql") {
		fmt.Fprintf(w, ", at most %d database connections", r.Config.DBMaxConns)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "load:     %d connections, each kind alone for %s after a %s warm-up\n",
		r.Config.Connections, time.Duration(r.Config.DurationSeconds*float64(time.Second)), time.Duration(r.Config.WarmupSeconds*float64(time.Second)))
}

// resultCacheText describes the server's result cache for the header.
func resultCacheText(size *int64) string {
	switch {
	case size == nil:
		return "(the server's own)"
	case *size == 0:
		return "off"
	case *size%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", *size>>20)
	}
	return fmt.Sprintf("%s bytes", thousands(*size))
}

// printTable writes one row per kind (and the ceiling), then the peak RSS.
func printTable(w io.Writer, r *results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\terrors\tbytes/req\tof ceiling\tcpu ms/req: server\tload gen\tdb+other\tbusy\t")
	row := func(k phaseResult) {
		frac := "-"
		if k.Class != classCeiling && r.Ceiling != nil && r.Ceiling.RPS > 0 {
			frac = fmt.Sprintf("%.1f%%", 100*k.CeilingFraction)
		}
		cpu := "-\t-\t-\t-"
		if c := k.CPU; c != nil {
			cpu = fmt.Sprintf("%.3f\t%.3f\t%.3f\t%.0f%%", c.ServerMsPerRequest, c.LoadGenMsPerRequest, c.OtherMsPerRequest, 100*c.MachineBusy)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t\n", k.Kind, k.RPS, k.P50Ms, k.P90Ms, k.P99Ms, k.MaxMs,
			k.Errors, thousands(int64(k.BytesPerRequest)), frac, cpu)
	}
	if r.Ceiling != nil {
		row(*r.Ceiling)
	}
	for _, k := range r.Kinds {
		row(k)
	}
	tw.Flush()
	switch {
	case r.Server.PeakRSSBytes > 0 && r.Server.Mode == "in-process":
		fmt.Fprintf(w, "peak RSS: %.1f MiB (in-process: the server and the load generator together)\n", r.Server.PeakRSSMiB)
	case r.Server.PeakRSSBytes > 0:
		fmt.Fprintf(w, "server peak RSS: %.1f MiB (VmHWM of the server process)\n", r.Server.PeakRSSMiB)
	default:
		fmt.Fprintln(w, "server peak RSS: unknown (remote server)")
	}
	for _, k := range r.Kinds {
		if k.FirstError != "" {
			fmt.Fprintf(w, "first error of %s: %s\n", k.Kind, k.FirstError)
		}
		if k.Requests == 0 {
			fmt.Fprintf(w, "%s: no request completed within the %.0fs window (%d were still running): its requests take longer than --warmup + --duration\n", k.Kind, k.Seconds, k.Late)
		}
	}
}

// printTargets writes the search targets and the verdicts.
func printTargets(w io.Writer, checks []targetCheck) {
	if len(checks) == 0 {
		return
	}
	fmt.Fprintln(w, "targets:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		verdict := checkMark
		if !c.OK {
			verdict = failTag
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Target, c.Got, verdict)
	}
	tw.Flush()
}

// printKinds writes what each kind sends.
func printKinds(w io.Writer, kinds []kind) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range kinds {
		fmt.Fprintf(tw, "  %s\t%s\n", k.Name, k.About)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeJSON writes r to path, indented.
func writeJSON(path string, r *results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readResults reads a file written by --json.
func readResults(path string) (*results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// compareResults writes, for every kind in both runs, the second run's
// p50, p99 and requests/s relative to the first's; when the first is
// PostgreSQL and the second SQLite, it checks the target "every search
// within 3x" on p50 and p99. It reports whether every check passed.
func compareResults(w io.Writer, base, other *results) bool {
	fmt.Fprintf(w, "%s (%s) relative to %s (%s)\n", other.Database.System, other.Database.URL, base.Database.System, base.Database.URL)
	byKind := map[string]phaseResult{}
	for _, k := range base.Kinds {
		byKind[k.Kind] = k
	}
	check := base.Database.System == "postgres" && other.Database.System == "sqlite"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "kind\tp50 ms\tp50 x\tp99 ms\tp99 x\treq/s\treq/s x\t"
	if check {
		header += "within\t"
	}
	fmt.Fprintln(tw, header)
	allOK := true
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	for _, k := range other.Kinds {
		b, ok := byKind[k.Kind]
		if !ok {
			continue
		}
		p50x, p99x, rpsx := ratio(k.P50Ms, b.P50Ms), ratio(k.P99Ms, b.P99Ms), ratio(k.RPS, b.RPS)
		line := fmt.Sprintf("%s\t%.2f\t%.2fx\t%.2f\t%.2fx\t%.1f\t%.2fx\t", k.Kind, k.P50Ms, p50x, k.P99Ms, p99x, k.RPS, rpsx)
		if check {
			verdict := "-"
			limit := 0.0
			switch {
			case strings.HasPrefix(k.Kind, "varied/") && k.Class != classMixed:
				limit = variedSQLiteX
			case strings.HasPrefix(k.Kind, "search/") || strings.HasPrefix(k.Kind, "deprecated/"):
				limit = sqliteVsPostgresX
			}
			if limit > 0 {
				verdict = fmt.Sprintf("%s (%.0fx)", checkMark, limit)
				if p50x > limit || p99x > limit {
					verdict, allOK = fmt.Sprintf("%s (%.0fx)", failTag, limit), false
				}
			}
			line += verdict + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	return allOK
}
