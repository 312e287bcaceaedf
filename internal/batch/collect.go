package batch

import (
	"os"
	"path/filepath"
	"time"
)

// Finished jobs are collected, so that the jobs of subagent_spawn do not
// pile up in b/ forever. The rule, documented in docs/agents.md:
//
//   - a job a session spawned is removed Keep.Spawned after it finished
//     (its parent's tool has read the result by then);
//   - a job made through b/new, Keep.User after it finished;
//   - the members' chats and histories go to tr/ first, as every ended
//     session's do, so nothing of what they said is lost.
//
// A job's finishing time is the modification time of its done file,
// written when its last member settled, so the rule holds across
// restarts.

// Keep says how long finished jobs stay.
type Keep struct {
	Spawned, User time.Duration
}

// DefaultKeep: an hour for sub-agents, a week for the user's jobs.
var DefaultKeep = Keep{Spawned: time.Hour, User: 7 * 24 * time.Hour}

// collectEvery is how often the collector looks.
const collectEvery = time.Minute

const doneFile = "done"

func (r *Registry) keep() Keep {
	k := r.o.Keep
	if k.Spawned == 0 {
		k.Spawned = DefaultKeep.Spawned
	}
	if k.User == 0 {
		k.User = DefaultKeep.User
	}
	return k
}

func (r *Registry) collect() {
	t := time.NewTicker(collectEvery)
	defer t.Stop()
	for {
		r.CollectNow(time.Now())
		select {
		case <-t.C:
		case <-r.stopCollect:
			return
		}
	}
}

// CollectNow removes the jobs that finished long enough before now.
func (r *Registry) CollectNow(now time.Time) {
	k := r.keep()
	for _, j := range r.List() {
		fi, err := os.Stat(filepath.Join(j.dir, doneFile))
		if err != nil {
			continue // running, or done before done files existed
		}
		d := k.User
		if j.spec.Parent != "" {
			d = k.Spawned
		}
		if d < 0 || now.Sub(fi.ModTime()) < d {
			continue
		}
		if err := r.Remove(j.id); err != nil {
			r.o.Logf("collect job %s: %v", j.id, err)
		}
	}
}

// finished marks j done on disk, for the collector.
func (j *Job) finished() {
	if f, err := os.Create(filepath.Join(j.dir, doneFile)); err == nil {
		f.Close()
	}
}

// saveTranscripts copies every member's chat and history to tr/.
func (j *Job) saveTranscripts() {
	if j.r.o.TrDir == "" {
		return
	}
	for _, s := range j.Members() {
		if err := s.SaveTranscriptTo(j.r.o.TrDir, "b"+j.id+"-"+s.Name()); err != nil {
			j.r.o.Logf("job %s member %s: transcript: %v", j.id, s.Name(), err)
		}
	}
}
