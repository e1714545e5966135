"""Travel: memory in a form that leaves the machine (Markdown files, sync through git)."""
