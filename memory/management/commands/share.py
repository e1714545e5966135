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
from memory.team.sharing import share_as_dict, share_grant


class Command(BaseCommand):
    help = (
        "Team mode: share one of your projects' memory with the whole team, or with the "
        "teammates named in --with. They read it (index, search, recall); only you change it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "project", help="The project, as cmem names it (`cmem stats --by project`)."
        )
        parser.add_argument(
            "--with", dest="members", default="", metavar="USER,USER",
            help="Only these teammates (default: everyone).",
        )  # fmt: skip
        add_user_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        members = names(options["members"])
        target = remote()
        if target is not None:
            share = call(
                target,
                "POST",
                "/api/shares",
                json={"project": options["project"], "members": members},
            )
        else:
            owner = local_user_id(options["user"])
            try:
                share = share_as_dict(
                    share_grant(owner_id=owner, project=options["project"], usernames=members)
                )
            except FAILURES as exc:
                raise CommandError(str(exc)) from None
        self.stdout.write(f"Shared {describe(share)}.")
