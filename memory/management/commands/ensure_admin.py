from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from memory import config
from memory.worker import state as worker


class Command(BaseCommand):
    help = "Create a local admin login if there is no superuser yet, and say how to log in."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        url = f"{worker.worker_address().url}/admin/"
        password_file = config.data_dir() / "admin-password"
        existing = users.objects.filter(is_superuser=True).order_by("pk").first()
        if existing is None:
            password = secrets.token_urlsafe(18)
            user = users.objects.filter(username="admin").first()
            if user is None:
                users.objects.create_superuser(username="admin", email="", password=password)
            else:  # an "admin" without admin rights, say from an old install: promote it
                user.is_staff = user.is_superuser = user.is_active = True
                user.set_password(password)
                user.save()
            config.write_atomic(password_file, f"{password}\n".encode(), mode=0o600)
            self.stdout.write(
                f"Created the admin login for {url}: user admin, password in {password_file}"
            )
            return
        name = existing.get_username()
        if name == "admin" and password_file.exists():
            self.stdout.write(f"Admin login at {url}: user admin, password in {password_file}")
        else:
            self.stdout.write(f"Admin login at {url}: user {name}")
        self.stdout.write(f"Forgot the password? `cmem manage changepassword {name}`")
