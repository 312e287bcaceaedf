package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts a CPU profile into cpu and arranges a heap profile
// into mem, a blocking profile into block and a mutex contention profile
// into mutex (any may be ""). The returned function ends them all; it is
// called when the command returns.
func startProfiles(cpu, mem, block, mutex string) (func(), error) {
	var stops []func()
	for _, p := range []struct{ file, name string }{{block, "block"}, {mutex, "mutex"}} {
		if p.file == "" {
			continue
		}
		f, err := os.Create(p.file)
		if err != nil {
			for _, s := range stops {
				s()
			}
			return nil, err
		}
		if p.name == "block" {
			runtime.SetBlockProfileRate(10000) // one blocking event per 10 µs blocked
		} else {
			runtime.SetMutexProfileFraction(5)
		}
		name := p.name
		stops = append(stops, func() {
			pprof.Lookup(name).WriteTo(f, 0)
			f.Close()
		})
	}
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if mem == "" {
		// Nothing will read the heap's samples: take none. Each keeps
		// its call stack for the life of the process, in a table the
		// first sample allocates: 0.6 MB of the daemon's memory after
		// the bench's 480 turns, 0.2 to 0.4 MB idle.
		runtime.MemProfileRate = 0
	} else {
		f, err := os.Create(mem)
		if err != nil {
			for _, s := range stops {
				s()
			}
			return nil, err
		}
		stops = append(stops, func() {
			runtime.GC()
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		})
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}, nil
}
