from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management.commands._sharing import (
    FAILURES,
    add_user_argument,
    call,
    describe,
    local_user_id,
    names,
    remote,
)
from memory.team.sharing import share_as_dict, share_revoke


class Command(BaseCommand):
    help = (
        "Team mode: revoke a share of one of your projects: wholly, or only for the teammates "
        "named in --with. Its rows leave their views at once."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("project", help="The project shared.")
        parser.add_argument(
            "--with", dest="members", default="", metavar="USER,USER",
            help="Only for these teammates (default: the whole share).",
        )  # fmt: skip
        add_user_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        project, members = options["project"].strip(), names(options["members"])
        target = remote()
        if target is not None:
            mine = call(target, "GET", "/api/shares", params={"mine": "true"})["shares"]
            found = [s for s in mine if s["project"] == project]
            if not found:
                raise CommandError(f"no share of {project}")
            answer = call(
                target,
                "DELETE",
                f"/api/shares/{found[0]['id']}",
                params={"members": ",".join(members)},
            )
            left = answer["share"]
        else:
            owner = local_user_id(options["user"])
            try:
                share = share_revoke(owner_id=owner, project=project, usernames=members)
            except FAILURES as exc:
                raise CommandError(str(exc)) from None
            left = share_as_dict(share) if share else None
        if left is None:
            self.stdout.write(f"Unshared {project}: no teammate reads it any more.")
        else:
            self.stdout.write(f"Narrowed {describe(left)}.")
