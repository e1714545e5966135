from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.core.serializers.json import DjangoJSONEncoder

from memory.management.commands._sharing import (
    add_user_argument,
    call,
    describe,
    local_user_id,
    remote,
)
from memory.team.sharing import share_as_dict, shares_visible


class Command(BaseCommand):
    help = (
        "Team mode: list your shares (with a token: yours, or every one for staff; on the "
        "server: every share, or --user's)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the shares as JSON.")
        add_user_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        target = remote()
        if target is not None:
            shares = call(target, "GET", "/api/shares")["shares"]
        elif options["user"]:
            owner = local_user_id(options["user"])
            shares = [share_as_dict(s) for s in shares_visible(user_id=owner)]
        else:
            shares = [share_as_dict(s) for s in shares_visible(user_id=0, staff=True)]
        if options["json"]:
            self.stdout.write(json.dumps({"shares": shares}, cls=DjangoJSONEncoder, indent=2))
            return
        for share in shares:
            self.stdout.write(describe(share))
        if not shares:
            self.stdout.write("no shares; share a project with `cmem share PROJECT`")
