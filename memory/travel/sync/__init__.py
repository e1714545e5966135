"""`cmem sync`: this machine's memory through a git remote the user controls (issue 34).

The rooms, one way down:
- engine.py: one sync (fetch, import what changed there, export what changed here, commit
  on top of the fetched head, push, save the state) and its dry run;
- layout.py: the remote's files in the clone's work tree, read in and written out;
- git.py: every git call, with an explicit environment and a timeout;
- state.py: the sync folder (<data dir>/sync), its lock and its state file;
- crypto.py: the optional encryption (a key kept outside the remote, opaque file names);
- tasks.py: the automatic syncs (a schedule, SessionEnd), off by default.

Merging never happens in git: the Markdown files are merged by global id in
memory.travel's import (the later edit wins, the other is kept in history), and this
machine's commit always goes on top of the head it fetched.
"""
