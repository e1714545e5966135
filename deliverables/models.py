"""A deliverable: a file the agent produced in a turn, copied into the data dir."""

from __future__ import annotations

from django.db import models
from django.urls import reverse
from django.utils import timezone

from memory.global_ids import LENGTH as GID_LENGTH
from memory.global_ids import new_gid
from memory.models import Prompt, Session


class Deliverable(models.Model):
    """A file the agent wrote outside the project (copied at Stop) or attached with the
    `work_state_write` MCP tool (read by the tool call's PostToolUse hook)."""

    # The row's identity across machines, exports and teams (memory/global_ids.py).
    gid = models.CharField(max_length=GID_LENGTH, unique=True, default=new_gid, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="deliverables")
    prompt = models.ForeignKey(
        Prompt, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliverables"
    )
    project = models.CharField(max_length=200)
    original_path = models.TextField()
    stored_path = models.TextField(help_text="Relative to <data dir>/deliverables/.")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    content_type = models.CharField(max_length=200, blank=True)
    # Attached by the agent with the work_state_write MCP tool (not only written by it).
    attached = models.BooleanField(default=False)
    title = models.CharField(max_length=200, blank=True)
    note = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # The same bytes from the same turn are stored once, however often Stop fires.
            models.UniqueConstraint(
                fields=["session", "original_path", "sha256"], name="deliverable_uniq"
            ),
        ]
        indexes = [
            # Used by My Work: a project's deliverables, newest first.
            models.Index(fields=["project", "-created"], name="deliverable_project_recent_idx"),
        ]

    def __str__(self) -> str:
        return self.original_path.rsplit("/", 1)[-1]

    def get_absolute_url(self) -> str:
        return reverse("deliverables-download", args=[self.pk])

    @property
    def name(self) -> str:
        return str(self)
