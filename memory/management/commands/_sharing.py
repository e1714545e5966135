"""What `cmem share`, `unshare` and `shares` have in common: where they act.

On a teammate's machine (CLAUDE_MEM_WORKER_URL and CLAUDE_MEM_API_TOKEN set) they call the
team server's API with the user's token, which decides whose shares they are
(memory/api/sharing.py). On the server itself they act directly, for the user named with
--user (sharing is per user: the local single-user worker has no owners to share between).
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

import httpx
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from memory import config
from memory.team.sharing import ShareError, ShareNotFound

TIMEOUT_S = 30.0
FAILURES = (ShareError, ShareNotFound)


def remote() -> tuple[str, str] | None:
    """(worker URL, token) of a team server this machine talks to, or None: act here."""
    url, token = config.get("CLAUDE_MEM_WORKER_URL"), config.get("CLAUDE_MEM_API_TOKEN")
    return (url.rstrip("/"), token) if url and token else None


def call(target: tuple[str, str], method: str, path: str, **kwargs: Any) -> Any:
    """JSON of one API call with the user's token; its error as a CommandError."""
    url, token = target
    try:
        response = httpx.request(
            method,
            url + path,
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT_S,
            **kwargs,
        )
    except httpx.HTTPError as exc:
        raise CommandError(f"the team server at {url} is not reachable: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code >= 400:
        raise CommandError(body.get("error") or f"{response.status_code} from {url}{path}")
    return body


def add_user_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--user",
        default="",
        help="On the team server itself: the user whose shares these are (a client uses its token).",
    )


def local_user_id(username: str) -> int:
    if not username:
        raise CommandError(
            "sharing is per user: set CLAUDE_MEM_WORKER_URL and CLAUDE_MEM_API_TOKEN, "
            "or on the server name the user with --user"
        )
    found = get_user_model().objects.filter(username=username).values_list("pk", flat=True)
    if not found:
        raise CommandError(f"no such user: {username}")
    return int(found[0])


def names(raw: str) -> list[str]:
    return [name.strip() for name in raw.split(",") if name.strip()]


def describe(share: dict[str, Any]) -> str:
    who = "everyone" if share["everyone"] else ", ".join(share["members"]) or "no one"
    return f"#{share['id']} {share['project']} of {share['owner']}: shared with {who}"
