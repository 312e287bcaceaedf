package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts a CPU profile into cpu and arranges a heap profile
// into mem (either may be ""). The returned function ends both; it is
// called when the command returns.
func startProfiles(cpu, mem string) (func(), error) {
	var stops []func()
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
	if mem != "" {
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
