"""Team mode: whose rows a request may see and write (the one scoping seam).

On a shared server every row belongs to the user whose token captured it: a session has an
`owner` (migration 0009), and everything else hangs off a session (prompts, events,
observations, their files, summaries, file views, deliverables, vectors through their row)
or carries the owner itself (ledger lines, which outlive their session). The token
middleware (memory/team/auth.py) opens `viewer_scope(user)` around each `/api/` request;
the services read the viewer from here and never from the request, so a new endpoint
that calls an existing service is scoped without knowing it.

- No scope (the local single-user worker, the consumer, the CLI on the server): every row,
  exactly as before team mode existed; new rows have no owner.
- A token of a **staff** user (Django's `is_staff`, the flag that also opens the pages and
  the admin): reads every row; writes rows owned by that user.
- Any other token: writes, corrects and forgets only rows of sessions its user owns
  (`owned`); reads those plus the rows of every project a teammate shared with it
  (`readable`, memory/team/sharing.py: a `ProjectShare` of (owner, project) for everyone
  or for named members); a session another user owns is foreign (`ForeignSession`): a
  hook naming it stores nothing and learns nothing.

Reads that a share opens call `readable`; everything else (writes, stats, the ledger,
deliverables) keeps `owned`, so a surface nobody extended stays isolated.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet

from memory.models import ProjectShare


@dataclass(frozen=True)
class Viewer:
    user_id: int
    staff: bool
    # What `readable_reach` read for this viewer: one read of the shares per request (a
    # viewer lives for one request), however many queries of it narrow through them.
    reach: list[Reach] = field(default_factory=list, compare=False, repr=False)


_viewer: ContextVar[Viewer | None] = ContextVar("cmem_viewer", default=None)

M = TypeVar("M", bound=Model)


class ForeignSession(PermissionError):
    """A hook named a session another user owns: nothing is stored or answered for it."""


@contextmanager
def viewer_scope(*, user_id: int, staff: bool) -> Iterator[Viewer]:
    viewer = Viewer(user_id=user_id, staff=staff)
    token = _viewer.set(viewer)
    try:
        yield viewer
    finally:
        _viewer.reset(token)


def current_viewer() -> Viewer | None:
    return _viewer.get()


def writer_id() -> int | None:
    """The owner of rows created now: the token's user, or None (local, internal work)."""
    viewer = _viewer.get()
    return viewer.user_id if viewer else None


def restricted_owner() -> int | None:
    """The owner reads are limited to, or None when this request may read every row."""
    viewer = _viewer.get()
    if viewer is None or viewer.staff:
        return None
    return viewer.user_id


def owned(rows: QuerySet[M], owner_path: str = "session__owner") -> QuerySet[M]:
    """`rows` narrowed to the current viewer's own: what it may change, and what it reads
    where no share reaches (reads a share opens use `readable`). `owner_path`: the lookup
    from the row to its owner's id, e.g. `owner` on a session, `session__owner` below it."""
    owner = restricted_owner()
    if owner is None:
        return rows
    return rows.filter(**{f"{owner_path}_id": owner})


@dataclass(frozen=True)
class Reach:
    """The sessions a restricted viewer reads: their own, and those each teammate captured
    in a project shared with them (`shared`: (owner id, project) pairs)."""

    user_id: int
    shared: tuple[tuple[int, str], ...] = ()

    def q(self, owner_path: str = "session__owner") -> Q:
        """The ORM filter: `owner_path` leads from the row to its owner (as in `owned`);
        the project is read beside it (`session__project`, `project` on a session)."""
        project_path = owner_path.removesuffix("owner") + "project"
        found = Q(**{f"{owner_path}_id": self.user_id})
        for owner, project in self.shared:
            found |= Q(**{f"{owner_path}_id": owner, project_path: project})
        return found

    def sessions_sql(self, alias: str = "scope_s") -> tuple[str, list[Any]]:
        """A subquery of the readable session ids, for the raw SQL of the search backends."""
        clauses = [f"{alias}.owner_id = %s"]
        params: list[Any] = [self.user_id]
        for owner, project in self.shared:
            clauses.append(f"({alias}.owner_id = %s AND {alias}.project = %s)")
            params += [owner, project]
        where = " OR ".join(clauses)
        return f"SELECT {alias}.id FROM memory_session {alias} WHERE {where}", params


def readable_reach() -> Reach | None:
    """What the current viewer reads, or None when it reads every row. The shares are read
    once per request (a few rows by index), so a revoked share closes at the next one."""
    viewer = _viewer.get()
    if viewer is None or viewer.staff:
        return None
    if viewer.reach:
        return viewer.reach[0]
    shared = (
        ProjectShare.objects.filter(Q(everyone=True) | Q(members=viewer.user_id))
        .exclude(owner_id=viewer.user_id)
        .values_list("owner_id", "project")
        .order_by("owner_id", "project")
        .distinct()
    )
    reach = Reach(user_id=viewer.user_id, shared=tuple(shared))
    viewer.reach.append(reach)
    return reach


def readable(rows: QuerySet[M], owner_path: str = "session__owner") -> QuerySet[M]:
    """`rows` narrowed to what the current viewer may read: `owned` plus shared projects."""
    reach = readable_reach()
    if reach is None:
        return rows
    if not reach.shared:
        return rows.filter(**{f"{owner_path}_id": reach.user_id})
    return rows.filter(reach.q(owner_path))


def session_check(owner_id: int | None) -> None:
    """Refuse a session the current writer does not own (a guessed or copied session id).

    Local and internal work (no scope) may use any session, as before team mode; a token
    may use only sessions of its own user, staff included: staff read everything, but a
    staff hook never writes into a teammate's session.
    """
    viewer = _viewer.get()
    if viewer is None:
        return
    if owner_id != viewer.user_id:
        raise ForeignSession("this session belongs to another user")
