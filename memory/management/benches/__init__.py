"""Benchmarks that ship with cmem (`cmem bench NAME`); the developers' own are in tests/bench/."""
