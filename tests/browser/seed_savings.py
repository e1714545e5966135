"""`python -m tests.browser.seed_savings known ROOT REL...`: a past session whose observations
read each file (with its content hash), made through the ORM inside a live worker's data dir
so that worker's real read gate refuses the files. Prints the observation ids as JSON."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from datetime import timedelta
from pathlib import Path


def _main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    import django

    django.setup()
    from django.utils import timezone

    from memory.models import Observation, ObservationFile, Session

    if argv[0] != "known":
        raise SystemExit(f"unknown command {argv[0]!r}")
    root = Path(argv[1])
    created = timezone.now() - timedelta(days=1)
    past = Session.objects.create(
        session_id="past-savings", project=root.name, project_root=str(root), started=created
    )
    ids = []
    for rel in argv[2:]:
        digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        obs = Observation.objects.create(
            session=past,
            project=root.name,
            type="discovery",
            title=f"How {rel} is built",
            files_read=[rel],
            created=created,
        )
        ObservationFile.objects.create(
            observation=obs,
            project=root.name,
            path=rel,
            role="read",
            content_hash=digest,
            created=created,
        )
        ids.append(obs.pk)
    print(json.dumps({"ids": ids}))


if __name__ == "__main__":
    _main(sys.argv[1:])
