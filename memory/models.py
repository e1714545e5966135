"""The memory model graph: sessions, prompts, the event queue, observations and their files, summaries, file views, the ledger, caches and tokens."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from memory.global_ids import LENGTH as GID_LENGTH
from memory.global_ids import new_gid


def estimate_tokens(text: str) -> int:
    """Deliberately approximate (4 characters a token), like claude-mem: cheap and stable."""
    return (len(text) + 3) // 4


def currency_tags(
    *,
    status: str,
    certainty: str = "",
    origin: str = "observer",
    person_edited: bool = False,
    superseded_by: int | None = None,
) -> list[str]:
    """How current a memory is and where it came from, as short labels every surface shows
    the same way: the index, the gate, prompt recall, search, get_observations, the pages."""
    tags: list[str] = []
    if status == "superseded":
        tags.append(f"superseded by #{superseded_by}" if superseded_by else "superseded")
    elif status != "current":
        tags.append({"abandoned": "abandoned hypothesis"}.get(status, status))
    if origin == "agent":
        tags.append("agent-written")
    elif origin == "user":
        tags.append("written by you")
    elif person_edited:
        tags.append("corrected")
    if certainty == "hypothesis":
        tags.append("hypothesis")
    elif certainty == "dead_end":
        tags.append("dead end")
    return tags


def row_tags(row: Any) -> list[str]:
    """`currency_tags` of anything carrying the fields (a model row, a search hit, a gate
    candidate), with `superseded_by` as the successor's id."""
    successor = getattr(row, "superseded_by_id", None) or getattr(row, "superseded_by", None)
    return currency_tags(
        status=row.status,
        certainty=row.certainty,
        origin=row.origin,
        person_edited=row.person_edited,
        superseded_by=successor if isinstance(successor, int) else None,
    )


class SessionQuerySet(models.QuerySet["Session"]):
    def for_project(self, project: str) -> SessionQuerySet:
        return self.filter(project=project)


class Session(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        COMPLETED = "completed"
        FAILED = "failed"

    # The row's identity across machines, exports and teams (memory/global_ids.py).
    gid = models.CharField(max_length=GID_LENGTH, unique=True, default=new_gid, editable=False)
    platform = models.CharField(max_length=32, default="claude-code")
    session_id = models.CharField(max_length=200, help_text="The agent's own session id.")
    project = models.CharField(max_length=200)
    project_root = models.TextField(
        blank=True, help_text="Folder the project's paths are relative to."
    )
    cwd = models.TextField(blank=True)
    transcript_path = models.TextField(blank=True)
    # db_default too: rows written by raw SQL (benchmarks, older tools) need no value.
    model = models.CharField(
        max_length=120,
        blank=True,
        default="",
        db_default="",
        help_text="The agent's main model, as its transcript names it (blank: not known).",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    prompt_counter = models.PositiveIntegerField(default=0)
    started = models.DateTimeField(default=timezone.now)
    ended = models.DateTimeField(null=True, blank=True)
    # Team mode: the user whose token captured the session; every row below it is theirs
    # (memory/team/scope.py). Empty for the local single-user worker and imported history.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="cmem_sessions",
    )

    objects: models.Manager[Session] = SessionQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        constraints = [
            # Hooks look a session up by the agent's id; one row per (platform, id).
            models.UniqueConstraint(
                fields=["platform", "session_id"], name="session_platform_sid_uniq"
            ),
        ]
        indexes = [
            # Used by the SessionStart index and the timeline: a project's recent sessions.
            models.Index(fields=["project", "-started"], name="session_project_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.project} · {self.session_id[:8]}"

    def get_absolute_url(self) -> str:
        return reverse("memory-session-detail", args=[self.pk])

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.ACTIVE


class Prompt(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="prompts")
    number = models.PositiveIntegerField()
    text = models.TextField()
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # A prompt number is given once per session; a repeated hook updates, never duplicates.
            models.UniqueConstraint(
                fields=["session", "number"], name="prompt_session_number_uniq"
            ),
        ]
        indexes = [
            # Used by My Work and the timeline: recent prompts across projects.
            models.Index(fields=["-created"], name="prompt_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.number} {self.text[:60]}"


class EventQuerySet(models.QuerySet["Event"]):
    def pending(self) -> EventQuerySet:
        return self.filter(status__in=[Event.Status.PENDING, Event.Status.CLAIMED])


class Event(models.Model):
    """A captured hook event waiting to be compressed: the durable queue.

    The row is written in the same transaction that acknowledges the hook, and the huey task
    only ever receives ids, so a crash anywhere loses nothing that was acknowledged.
    """

    class Kind(models.TextChoices):
        OBSERVATION = "observation"
        SUMMARY = "summary"

    class Status(models.TextChoices):
        PENDING = "pending"
        CLAIMED = "claimed"
        DONE = "done"
        FAILED = "failed"
        SKIPPED = "skipped"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    tool_name = models.CharField(max_length=200, blank=True)
    tool_use_id = models.CharField(max_length=200, blank=True)
    prompt_number = models.PositiveIntegerField(null=True, blank=True)
    payload = models.JSONField(default=dict, help_text="The sanitized hook payload.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    objects: models.Manager[Event] = EventQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        constraints = [
            # Idempotent capture: Claude Code may deliver a tool use twice (retries, backfill).
            models.UniqueConstraint(
                fields=["session", "tool_use_id"],
                condition=~Q(tool_use_id=""),
                name="event_session_tool_use_uniq",
            ),
        ]
        indexes = [
            # Used by the compression task: a session's pending events, oldest first.
            models.Index(fields=["session", "status", "created"], name="event_session_status_idx"),
            # Used by the reclaimer and `pending` in /api/stats.
            models.Index(fields=["status", "claimed_at"], name="event_status_claimed_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.tool_name or ''} ({self.status})"


class ObservationQuerySet(models.QuerySet["Observation"]):
    def for_project(self, project: str) -> ObservationQuerySet:
        return self.filter(project=project)

    def current(self) -> ObservationQuerySet:
        """Rows still true: not wrong, outdated, superseded, abandoned or retired."""
        return self.filter(status=Observation.Status.CURRENT)

    def briefed(self, project: str) -> ObservationQuerySet:
        """What the SessionStart index may show for `project`: current, not demoted, this
        project's rows and the user's all-projects memories."""
        return self.current().filter(
            Q(project=project) | Q(scope=Observation.Scope.ALL), demoted=False
        )


class Observation(models.Model):
    class Type(models.TextChoices):
        BUGFIX = "bugfix", "Bug Fix"
        FEATURE = "feature", "Feature"
        REFACTOR = "refactor", "Refactor"
        CHANGE = "change", "Change"
        DISCOVERY = "discovery", "Discovery"
        DECISION = "decision", "Decision"
        SECURITY_ALERT = "security_alert", "Security Alert"
        SECURITY_NOTE = "security_note", "Security Note"
        SENSITIVE = "sensitive", "Sensitive Info"
        # Kinds only a memory written on purpose has (`remember`), never the observer.
        PREFERENCE = "preference", "Preference"
        NOTE = "note", "Note"

    class Status(models.TextChoices):
        """Whether the row is still true. Only `current` rows are briefed as current; the
        others stay searchable, labelled, and can be restored (memory/curation/)."""

        CURRENT = "current", "Current"
        WRONG = "wrong", "Wrong"
        OUTDATED = "outdated", "Outdated"
        SUPERSEDED = "superseded", "Superseded"
        ABANDONED = "abandoned", "Abandoned hypothesis"
        RETIRED = "retired", "Retired"

    class Certainty(models.TextChoices):
        UNKNOWN = "", "Unknown"
        CONFIRMED = "confirmed", "Confirmed"
        HYPOTHESIS = "hypothesis", "Hypothesis"
        DEAD_END = "dead_end", "Dead end"

    class Origin(models.TextChoices):
        OBSERVER = "observer", "Observer"
        AGENT = "agent", "Written by the agent"
        USER = "user", "Written by a person"

    class Scope(models.TextChoices):
        PROJECT = "project", "This project"
        ALL = "all", "All of the user's projects"

    # The row's identity across machines, exports and teams (memory/global_ids.py).
    gid = models.CharField(max_length=GID_LENGTH, unique=True, default=new_gid, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="observations")
    project = models.CharField(max_length=200)
    type = models.CharField(max_length=32, default=Type.DISCOVERY)
    title = models.CharField(max_length=300)
    subtitle = models.TextField(blank=True)
    facts = models.JSONField(default=list)
    narrative = models.TextField(blank=True)
    concepts = models.JSONField(default=list)
    files_read = models.JSONField(default=list)
    files_modified = models.JSONField(default=list)
    tool_name = models.CharField(max_length=200, blank=True)
    prompt_number = models.PositiveIntegerField(null=True, blank=True)
    compressor = models.CharField(
        max_length=100, blank=True, help_text="offline, or the model used."
    )
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    content_hash = models.CharField(max_length=32, blank=True)
    created = models.DateTimeField(default=timezone.now)
    # Curation (migration 0011): what is true now, who wrote it, who changed it.
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.CURRENT, db_default="current"
    )
    status_reason = models.TextField(blank=True, default="", db_default="")
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    pinned = models.BooleanField(default=False, db_default=False)
    demoted = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Left out of the SessionStart index (never recalled for weeks); still searchable.",
    )
    certainty = models.CharField(
        max_length=16, blank=True, choices=Certainty.choices, default="", db_default=""
    )
    origin = models.CharField(
        max_length=16, choices=Origin.choices, default=Origin.OBSERVER, db_default="observer"
    )
    person_edited = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A person wrote or edited it: neither the agent nor consolidation may change it.",
    )
    topic = models.CharField(max_length=200, blank=True, default="", db_default="")
    scope = models.CharField(
        max_length=16, choices=Scope.choices, default=Scope.PROJECT, db_default="project"
    )
    edited = models.DateTimeField(null=True, blank=True)
    last_recalled = models.DateTimeField(null=True, blank=True)
    # The captured tool uses it was compressed from (memory/compression/store.py): what
    # get_tool_uses and the observation page show raw. None for a memory written on purpose
    # (`remember`) or imported from another tool's database.
    events = models.ManyToManyField(Event, blank=True, related_name="observations")

    objects: models.Manager[Observation] = ObservationQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        indexes = [
            # Used by `remember`'s topic upsert and the consolidation pass.
            models.Index(
                fields=["project", "topic"], condition=~Q(topic=""), name="obs_project_topic_idx"
            ),
            # Used by the SessionStart index and the timeline: a project's newest observations.
            models.Index(fields=["project", "-created"], name="obs_project_recent_idx"),
            # Used by session pages and summaries: a session's observations in order.
            models.Index(fields=["session", "created"], name="obs_session_created_idx"),
            # Used by the dashboard's unfiltered timeline.
            models.Index(fields=["-created"], name="obs_recent_idx"),
            # Used by the SessionStart index: the user's all-projects memories, newest first
            # (a parameter never matches a partial index's `scope = 'all'`, so a full one).
            models.Index(fields=["scope", "-created"], name="obs_scope_recent_idx"),
            # Used by the SessionStart index's pinned section: the few pinned rows.
            models.Index(fields=["-created"], condition=Q(pinned=True), name="obs_pinned_idx"),
        ]
        constraints = [
            # Replays and imports never store the same observation twice in one session.
            models.UniqueConstraint(
                fields=["session", "content_hash"],
                condition=~Q(content_hash=""),
                name="obs_session_content_uniq",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    def get_absolute_url(self) -> str:
        return reverse("memory-observation-detail", args=[self.pk])

    def compute_content_hash(self) -> str:
        raw = f"{self.session_id}\0{self.title}\0{self.narrative}".encode()
        return hashlib.sha256(raw).hexdigest()[:16]

    @property
    def fetch_tokens(self) -> int:
        """What get_observations([id]) costs the agent, roughly."""
        text = "".join([self.title, self.subtitle, self.narrative, *map(str, self.facts)])
        return estimate_tokens(text) + 20

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.pk,
            "gid": self.gid,
            "type": self.type,
            "title": self.title,
            "subtitle": self.subtitle,
            "facts": self.facts,
            "narrative": self.narrative,
            "concepts": self.concepts,
            "files_read": self.files_read,
            "files_modified": self.files_modified,
            "project": self.project,
            "session": self.session_id,
            "tool_name": self.tool_name,
            "prompt_number": self.prompt_number,
            "created_at": self.created.isoformat(),
            "status": self.status,
            "status_reason": self.status_reason,
            "superseded_by": self.superseded_by_id,
            "pinned": self.pinned,
            "demoted": self.demoted,
            "certainty": self.certainty,
            "origin": self.origin,
            "person_edited": self.person_edited,
            "topic": self.topic,
            "scope": self.scope,
            "edited_at": self.edited.isoformat() if self.edited else None,
        }

    @property
    def is_current(self) -> bool:
        return self.status == Observation.Status.CURRENT

    @property
    def tags(self) -> list[str]:
        return row_tags(self)


class ObservationRevision(models.Model):
    """One change to an observation: who made it, why, and the fields before and after.

    Every curation is a revision, so every one can be undone (memory/curation/history.py).
    `forget` deletes the row and, by cascade, its revisions; a redacting edit blanks the
    text of every earlier revision of the row.
    """

    class Actor(models.TextChoices):
        USER = "user", "a person"
        AGENT = "agent", "the agent"
        CONSOLIDATION = "consolidation", "consolidation"

    # The row's identity across machines, exports and teams (memory/global_ids.py).
    gid = models.CharField(max_length=GID_LENGTH, unique=True, default=new_gid, editable=False)
    observation = models.ForeignKey(Observation, on_delete=models.CASCADE, related_name="revisions")
    action = models.CharField(max_length=24)
    actor = models.CharField(max_length=16, choices=Actor.choices)
    # Team mode: the user whose token made the change (a staff member correcting a
    # teammate's row is named here); None on a local worker.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="cmem_revisions",
    )
    reason = models.TextField(blank=True)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    # A consolidation pass's id: its page lists a pass's changes together.
    batch = models.CharField(max_length=32, blank=True)
    undone = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["observation", "created"], name="obsrev_obs_created_idx"),
            models.Index(fields=["actor", "-created"], name="obsrev_actor_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} #{self.observation_id} by {self.actor}"


class ObservationFile(models.Model):
    """One file an observation read or modified: the gate's lookup table.

    claude-mem scans every observation with json_each to find a file's history (13 ms at
    10k rows); this table turns that into one indexed range read.
    """

    class Role(models.TextChoices):
        READ = "read"
        MODIFIED = "modified"

    observation = models.ForeignKey(Observation, on_delete=models.CASCADE, related_name="files")
    project = models.CharField(max_length=200)
    path = models.TextField(help_text="Project-relative when inside the project, else absolute.")
    role = models.CharField(max_length=16, choices=Role.choices)
    content_hash = models.CharField(
        max_length=64, blank=True, help_text="The file's sha256 at capture."
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            # Used by the file-read gate: a file's observations, newest first.
            models.Index(fields=["project", "path", "-created"], name="obsfile_project_path_idx"),
            # The read gate's second slice: a file's rows that modified it, newest first,
            # without walking the file's reads (issue 33; gate.GATE_MODIFIED_ROWS).
            models.Index(
                fields=["project", "path", "role", "-created"], name="obsfile_path_role_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} ({self.role})"


class Summary(models.Model):
    # The row's identity across machines, exports and teams (memory/global_ids.py).
    gid = models.CharField(max_length=GID_LENGTH, unique=True, default=new_gid, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="summaries")
    project = models.CharField(max_length=200)
    prompt_number = models.PositiveIntegerField(null=True, blank=True)
    request = models.TextField(blank=True)
    investigated = models.TextField(blank=True)
    learned = models.TextField(blank=True)
    completed = models.TextField(blank=True)
    next_steps = models.TextField(blank=True)
    notes = models.TextField(blank=True)
    compressor = models.CharField(max_length=100, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "summaries"
        indexes = [
            # Used by the SessionStart index: a project's latest summaries.
            models.Index(fields=["project", "-created"], name="summary_project_recent_idx"),
        ]

    def __str__(self) -> str:
        return self.request[:80] or f"Summary {self.pk}"


class FileView(models.Model):
    """What the model has seen of a file in a session (docs/reference/source-rules.md)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="file_views")
    path = models.TextField(help_text="Absolute path as the agent named it.")
    content_hash = models.CharField(max_length=64, blank=True)
    mtime = models.FloatField(null=True, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    offset = models.PositiveIntegerField(null=True, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True)
    partial = models.BooleanField(default=False)
    denied = models.BooleanField(default=False, help_text="The gate refused a read of it once.")
    seen = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # The gate asks "what does this session hold of this file": one row per pair.
            models.UniqueConstraint(fields=["session", "path"], name="fileview_session_path_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.path} ({'partial' if self.partial else 'full'})"


class LedgerEntry(models.Model):
    """One token-ledger line: what a gate decision, an injection or the observer cost or saved."""

    class Kind(models.TextChoices):
        GATE_DENY = "gate_deny"
        GATE_CONTEXT = "gate_context"
        GATE_RETRY = "gate_retry"
        INJECTION = "injection"
        OBSERVER = "observer"
        # A cmem memory tool's answer (get_observations, smart_outline, smart_unfold,
        # get_tool_uses) that the agent called in the session: shown tokens, often in place
        # of a refused read.
        MEMORY_TOOL = "memory_tool"
        # A consolidation pass's model request (memory/curation/consolidation/): its tokens
        # and cost, booked like the observer's.
        CONSOLIDATION = "consolidation"

    class Outcome(models.TextChoices):
        """What a refusal (GATE_DENY) led to in its session; blank: nothing (yet)."""

        NOTHING = "", "nothing"
        READ_AGAIN = "read_again", "read again"
        GET_OBSERVATIONS = "get_observations", "get_observations"
        SMART_OUTLINE = "smart_outline", "smart_outline"
        SMART_UNFOLD = "smart_unfold", "smart_unfold"
        GET_TOOL_USES = "get_tool_uses", "get_tool_uses"
        # A failure recall (INJECTION `failure_recall`) after which the same error came back
        # in its session: the recalled fix did not spare the agent the failure.
        REPEATED = "repeated", "the same error again"

    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="ledger"
    )
    # The session's owner, kept on the line itself: a ledger line outlives its session.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="cmem_ledger",
    )
    project = models.CharField(max_length=200)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    path = models.TextField(blank=True)
    tokens_shown = models.IntegerField(
        default=0, help_text="Tokens cmem put in the model's context."
    )
    tokens_avoided = models.IntegerField(
        default=0, help_text="Tokens of a read the agent did not make."
    )
    tokens_spent = models.IntegerField(default=0, help_text="API tokens the observer spent.")
    # GATE_DENY: `reread` for a refused re-read of a file the session holds; blank for a
    # first read refused with the timeline. INJECTION: `session_start`, `prompt_recall`,
    # `failure_recall` (past fixes of a failed tool use's error, `path` = `error:<key>`) or
    # `failure_recall_held` (one the adaptive rule held back: nothing shown).
    # MEMORY_TOOL: the tool's bare name.
    detail = models.CharField(max_length=32, blank=True, default="", db_default="")
    outcome = models.CharField(
        max_length=32, blank=True, choices=Outcome.choices, default="", db_default=""
    )
    # Observer rows: which provider and model, the request's usage split, and its cost.
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=120, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(
        default=0, help_text="Input tokens read from (or written to) the prompt cache."
    )
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(
        default=0.0, help_text="As the provider reported it, else from cmem's price table."
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "ledger entries"
        indexes = [
            # Used by the savings report: per project and day.
            models.Index(fields=["project", "created"], name="ledger_project_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.project}"


class ContextCache(models.Model):
    """The rendered SessionStart index of a project, until something invalidates it."""

    project = models.CharField(max_length=200, unique=True)
    text = models.TextField()
    tokens = models.PositiveIntegerField(default=0)
    # What the text was rendered from (newest observation and summary, settings, zone): a
    # cheap second guard, so a missed invalidation can never serve an outdated index.
    key = models.CharField(max_length=300, blank=True)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"context for {self.project}"

    @classmethod
    def invalidate(cls, *, project: str) -> None:
        """Drop the cached index of a project (new observations, settings change, clear/compact).

        Here, beside the cache, because every writer calls it: compression, import, forget,
        pruning and the settings page."""
        cls.objects.filter(project=project).delete()


class ExcludedProject(models.Model):
    """A glob of project paths (or names) that cmem stores nothing for; edited in the admin."""

    glob = models.CharField(max_length=500, unique=True)
    note = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.glob


class ApiToken(models.Model):
    """Team mode: a per-user token the hook client sends to a shared worker."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cmem_tokens"
    )
    name = models.CharField(max_length=100)
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The first characters, to recognise it.")
    revoked = models.BooleanField(default=False)
    last_used = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class Embedding(models.Model):
    """The vector of one observation, summary or prompt, next to its row.

    One table for the three kinds (a kind and the row's id, no foreign key: a delete trigger
    of migration 0006 removes the vector with its row however the row is deleted, raw SQL
    included). `model` is the version of the model that made it: a row whose model is not
    the configured one is re-embedded in the background. `vector` is float16, L2-normalised.
    """

    kind = models.CharField(max_length=12)
    object_id = models.BigIntegerField()
    model = models.CharField(max_length=100)
    vector = models.BinaryField()
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "object_id"], name="embedding_kind_object_uniq"
            ),
        ]
        indexes = [
            # Used by the vector scan (one kind, one model) and the re-embed sweep.
            models.Index(fields=["kind", "model"], name="embedding_kind_model_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id} ({self.model})"


class Tombstone(models.Model):
    """A row `forget` deleted, by global id: sync carries it so other machines forget too."""

    gid = models.CharField(max_length=GID_LENGTH, unique=True)
    kind = models.CharField(max_length=16)
    project = models.CharField(max_length=200, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="cmem_tombstones",
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["created"], name="tombstone_created_idx")]

    def __str__(self) -> str:
        return f"forgotten {self.kind} {self.gid}"


class ProjectShare(models.Model):
    """Team mode: one user's project opened to teammates for reading (memory/team/sharing.py).

    The rows shared are those of every session the owner captured in `project`, past and
    future; writes stay the owner's. `everyone`: the whole team; else only `members`.
    Deleting the row revokes it at once: scoping reads the shares on every request."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cmem_shares"
    )
    project = models.CharField(max_length=200)
    everyone = models.BooleanField(default=False)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="cmem_shared_with"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # One share per project of an owner: sharing again widens it, never duplicates.
            models.UniqueConstraint(fields=["owner", "project"], name="share_owner_project_uniq"),
        ]
        indexes = [
            # Used by the scoping seam's shares-for-everyone lookup on every teammate read.
            models.Index(
                fields=["everyone"], condition=Q(everyone=True), name="share_everyone_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project} of user {self.owner_id}"


class ViewerCorrection(models.Model):
    """Team mode: a teammate's correction of a row shared with them, seen by them only.

    Only a row's author (or staff) corrects it for everyone; anyone else's mark or edit is
    this overlay, applied to that viewer's reads (index, search, detail) and nobody else's.
    Empty text fields leave the author's text as it is."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cmem_overlays"
    )
    observation = models.ForeignKey(
        Observation, on_delete=models.CASCADE, related_name="viewer_corrections"
    )
    status = models.CharField(
        max_length=16, choices=Observation.Status.choices, default=Observation.Status.CURRENT
    )
    reason = models.TextField(blank=True)
    title = models.CharField(max_length=300, blank=True)
    subtitle = models.TextField(blank=True)
    narrative = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # One overlay per viewer and row: a second correction updates it.
            models.UniqueConstraint(
                fields=["user", "observation"], name="overlay_user_observation_uniq"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.observation_id} for user {self.user_id}: {self.status}"
