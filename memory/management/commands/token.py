from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.models import ApiToken
from memory.team.tokens import TokenError, token_create_for_username, token_find, token_revoke


class Command(BaseCommand):
    help = "Team mode: create, list and revoke the API tokens hook clients send to a shared worker."

    def add_arguments(self, parser: ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser(
            "create", help="Make a token for USER (created if new); printed once."
        )
        create.add_argument("user")
        create.add_argument(
            "--name", default="", help="What the token is for, e.g. the laptop's name."
        )
        sub.add_parser("list", help="Every token: id, prefix, user, name, state, last used.")
        revoke = sub.add_parser("revoke", help="Revoke a token by id or prefix.")
        revoke.add_argument("token", help="The id or the prefix `cmem token list` shows.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "create":
                self.create(options["user"], options["name"])
            elif options["action"] == "list":
                self.list()
            else:
                self.revoke(options["token"])
        except TokenError as exc:
            raise CommandError(str(exc)) from exc

    def create(self, username: str, name: str) -> None:
        token, raw = token_create_for_username(username=username, name=name)
        self.stdout.write(raw)
        self.stderr.write(
            f"token {token.pk} ({token.prefix}…) for {token.user.get_username()}: shown once, store it now.\n"
            f"Hook clients send it with CLAUDE_MEM_API_TOKEN={raw[: len(token.prefix)]}… and CLAUDE_MEM_WORKER_URL."
        )

    def list(self) -> None:
        tokens = ApiToken.objects.select_related("user").order_by("pk")
        for token in tokens:
            state = "revoked" if token.revoked else "active"
            used = token.last_used.isoformat(timespec="seconds") if token.last_used else "never"
            self.stdout.write(
                f"{token.pk}\t{token.prefix}…\t{token.user.get_username()}\t{token.name}\t{state}\tlast used {used}"
            )
        if not tokens:
            self.stdout.write("no tokens; make one with `cmem token create USER`")

    def revoke(self, ref: str) -> None:
        token = token_revoke(token=token_find(ref=ref))
        self.stdout.write(
            f"revoked token {token.pk} ({token.prefix}…) of {token.user.get_username()}"
        )
