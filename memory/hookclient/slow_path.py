"""The hook client's one slow path: what it needs of the worker's code, imported only when
the worker is down (the spool must hold no secret) or a turn's files must travel with the
event (a Stop the worker cannot copy for, a `work_state_write` call).

The only module of the hook client allowed to import beyond memory.protocol (the
`hookclient-project` contract in pyproject.toml): the privacy rules and the handover's
bounded file reads, both below Django. Each function imports only what it uses, and only
once it knows it needs it: a spool write never pays for the handover, nor a handover with
deliverables off for anything.
"""

from __future__ import annotations

from memory.hookclient import setting

_OFF = frozenset({"false", "0", "no", "off"})


def spool_scrubbed(body: bytes) -> bytes | None:
    """`body` with secrets and <private> passages removed, or None when it is not a JSON
    object (memory/privacy/spool_scrub.py)."""
    # hook path: the privacy rules compile their patterns at import, paid only when spooling
    from memory.privacy.spool_scrub import spool_scrub

    return spool_scrub(body)


def handover(body: bytes, kind: str, *, request_limit: int) -> bytes:
    """`body` with the bytes of the files it names handed over (memory/capture/handover.py:
    when, and the bounds); unchanged when deliverables are off or anything goes wrong."""
    if setting("CLAUDE_MEM_DELIVERABLES_ENABLED", "true").strip().lower() in _OFF:
        return body
    try:
        # hook path: the handover's file reads, paid only when a turn's files must travel
        from memory.capture.handover import handover_add

        max_file = int(setting("CLAUDE_MEM_DELIVERABLES_MAX_BYTES", "20000000").strip())
        return handover_add(body, kind=kind, request_limit=request_limit, max_file=max_file)
    except Exception:  # noqa: BLE001 - the event goes without the bytes, never not at all
        return body
