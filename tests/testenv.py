"""Loaded with `-p tests.testenv` before Django reads its settings: every test run gets its
own data dir, runs huey tasks inline, and can never reach the real Anthropic API."""

from __future__ import annotations

import os
import tempfile
import uuid

os.environ["CLAUDE_MEM_DATA_DIR"] = tempfile.mkdtemp(prefix="cmem-test-")
os.environ["CMEM_HUEY_IMMEDIATE"] = "1"
# Marks every process this run starts (make_worker_env keeps it: no CLAUDE_MEM_/CMEM_ prefix),
# so the check at the end of the run (tests/conftest.py) finds what a test left running.
os.environ["PYTEST_CMEM_RUN"] = uuid.uuid4().hex
for _name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
    os.environ.pop(_name, None)
for _name in [k for k in os.environ if k.startswith("CLAUDE_MEM_") and k != "CLAUDE_MEM_DATA_DIR"]:
    os.environ.pop(_name, None)
# A developer's own logged-in `claude` CLI must never become the observer of a test run
# (`auto` would pick it); the claude-provider tests point CLAUDE_MEM_CLAUDE_PATH at one.
os.environ["CLAUDE_MEM_CLAUDE_PATH"] = "none"
# Team-mode matrix (`make test` runs the backend-sensitive suites twice): these point the
# run at PostgreSQL (pytest-django creates `test_<name>`) and Redis, on a queue of its own.
if os.environ.get("CMEM_TEST_DATABASE_URL"):
    os.environ["CLAUDE_MEM_DATABASE_URL"] = os.environ["CMEM_TEST_DATABASE_URL"]
if os.environ.get("CMEM_TEST_QUEUE_URL"):
    os.environ["CLAUDE_MEM_QUEUE_URL"] = os.environ["CMEM_TEST_QUEUE_URL"]
    os.environ.setdefault("CMEM_HUEY_NAME", f"cmem-test-{os.getpid()}")
