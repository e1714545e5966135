"""One line of `cmem doctor`: each installer checks its own agent's configuration and
returns these rows; memory/worker/doctor.py gathers them with the worker's own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Check:
    status: str  # ok | warn | fail
    what: str
    fix: str = ""
