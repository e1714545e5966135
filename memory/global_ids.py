"""Global ids: the identity a row keeps across machines, exports, imports, sync and teams.

Integer primary keys are local (two machines both have an observation #42); a global id
is a ULID (python-ulid): 26 Crockford base32 characters, unique without coordination, and
sorting by creation time, so a file listing or a merge by id reads oldest first. Rows
that existed before global ids (migration 0017) get one made from their own creation
time, so their order survives too.
"""

from __future__ import annotations

from datetime import datetime

from ulid import ULID

LENGTH = 26
_ALPHABET = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")


def new_gid() -> str:
    """A fresh global id (a model field's default)."""
    return str(ULID())


def gid_at(moment: datetime) -> str:
    """A global id whose time part is `moment` (rows filled by the migration, imports)."""
    return str(ULID.from_datetime(moment))


def is_gid(value: object) -> bool:
    """Whether `value` has the form of a global id (a file's front matter is untrusted)."""
    return (
        isinstance(value, str)
        and len(value) == LENGTH
        and value[0] in "01234567"
        and set(value) <= _ALPHABET
    )
