// Package session keeps agent sessions: their on-disk store, state,
// queue, events and the running of turns. It knows nothing of 9P or of
// HTTP: the tree reads typed values from it, and an agent Runner (the
// loop) drives turns through the Turn it is handed.
//
// A session is a directory, DataDir/s/<id>/:
//
//	meta.json      id, name, agent, backend, model, cwd, parameters (replaced atomically)
//	chat           the conversation as text, append-only
//	context.jsonl  the message history sent to the model, one JSON message a line
//	events.jsonl   events, one JSON object a line, with a sequence number
//	queue.jsonl    prompts waiting for the current turn (replaced atomically),
//	               after the count of prompts taken from it so far
//	usage.json     token and cost totals (a fixed-size record rewritten in place)
//	plan, env      the agent's plan; KEY=VALUE lines for tools (mode 0600)
//	systemprompt   the system prompt as last sent (the last reply and prompt come from the history)
//	history/       full histories saved before each compaction
//	tmp/           scratch space of execute_code (full outputs ...)
//	turn           present while a turn runs: names the prompt; a crash leaves it
//
// Every append to chat, context.jsonl and events.jsonl that acknowledges a
// client's write is fsync'd before that write returns. Each record of the
// .jsonl logs is appended with its newline in one write, so bytes after
// the last newline are a record a crash tore, never acknowledged: opening
// the log for append cuts them, and History leaves them out; a bad line
// before the last is corruption, reported by its line number.
//
// A Session composes parts that each do one job, each with its own tests:
// the logs (store.go), the state machine (state.go), the prompt queue
// (queue.go), the consent asks (asks.go), the tools' environment
// (env.go), and in the Manager the LRU of
// sessions whose logs stay open (lru.go). A Runner sees a turn's session
// only through the Turn and its Handle.
//
// Lock order: Manager.mu before Session.mu before the leaf locks of the
// parts (machine, queue, asks, env, the LRU). Methods ending in Locked need
// Session.mu held.
package session
