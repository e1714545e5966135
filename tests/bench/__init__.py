"""The benchmarks: a developer's tree, never in the wheel.

`make bench NAME=recall` (ARGS="--quick" / "--size N" / "--runs N" / "--seconds N") runs
`python -m tests.bench recall` (runner.py: the old `cmem bench` command's arguments); `make
bench` runs them all. One module a benchmark, each with `run(*, out, options)`; their data
(the recall set, the public FriendsQA set, the recorded e2e sessions) in data/; the scripts that made the embedding
tables in recall_model/. harness.py is what they share: a scratch data dir, a database
migrated and seeded in a child, a throwaway worker (the tests' LiveWorker). `cmem bench hooks`
(what a hook costs on this machine) is the one that ships: memory/management/commands/bench.py.
The fake model server they use is a test double: tests/fakes/anthropic.py.
"""
