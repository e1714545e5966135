"""`cmem watch`: agents without hooks, captured through the sessions they write to disk.

An agent that keeps its conversation in a file but runs no hooks (Continue's CLI) is
followed here: each new user prompt, finished tool use and finished turn in its files becomes
the event a hook would have sent, posted to the worker's hook API like a hook's
(memory/hooks/dispatch.py: the same capture path, redaction and projects). `follower` keeps
how far each file was read (restart-safe); `continue_sessions` reads Continue's format.

Stdlib only, Django-free: it is a client of the worker, like the hook client it borrows
`post_local` from.
"""
