"""Deliverables: files the agent wrote outside the project's source tree, copied at Stop.

The copy happens while the Stop hook is being answered, not later in a task: the temp
folder or worktree holding the file is often deleted right after the turn. Capture never
raises; a file it cannot copy is skipped and logged, and Stop is answered regardless.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mimetypes
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import IO, Any

import nh3
from django.db import IntegrityError, transaction
from django.utils import timezone

from deliverables.models import Deliverable
from memory import config
from memory.agents.base import HookEvent
from memory.capture.handover import open_no_links
from memory.capture.turn_files import (
    WRITE_TOOLS,
    paths_from_tool_input,
    paths_from_transcript,
    unique,
)
from memory.models import Event, Prompt, Session
from memory.privacy import redaction
from memory.privacy.secret_locations import refusal_reason
from memory.projects import project_for_cwd, remote_request

log = logging.getLogger(__name__)

# A turn that writes hundreds of files outside the project is a build, not a deliverable.
MAX_FILES_PER_TURN = 50

# Inline previews: what each kind of file is shown as on My Work.
TEXT_PREVIEW_BYTES = 64 * 1024
_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".py": "text/x-python",
    ".ts": "text/plain",
    ".tsx": "text/plain",
    ".rs": "text/plain",
    ".go": "text/plain",
    ".toml": "text/plain",
    ".yaml": "text/yaml",
    ".yml": "text/yaml",
    ".log": "text/plain",
    ".ipynb": "application/json",
    ".csv": "text/csv",
}
IMAGE_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml", "image/avif"}
)


def deliverables_root() -> Path:
    return config.data_dir() / "deliverables"


# ---------------------------------------------------------------------------------------
# Which files did this turn write?


def _paths_from_events(session: Session) -> Iterator[str]:
    """Files written by this turn's captured tool uses (Event rows of the current prompt)."""
    events = Event.objects.filter(
        session=session,
        kind=Event.Kind.OBSERVATION,
        prompt_number=session.prompt_counter,
        tool_name__in=WRITE_TOOLS,
    ).order_by("created", "pk")
    for payload in events.values_list("payload", flat=True):
        if not isinstance(payload, dict) or not _event_succeeded(payload):
            continue
        tool_name = payload.get("tool_name", "")
        tool_input = payload.get("tool_input", payload)
        yield from paths_from_tool_input(tool_name or "", tool_input)


def _event_succeeded(payload: dict[str, Any]) -> bool:
    """A PostToolUse of a tool use that did what it said: a PostToolUseFailure (refused,
    interrupted, failed) or a response that reports failure wrote nothing of the agent's."""
    if payload.get("hook_event_name") == "PostToolUseFailure" or payload.get("error"):
        return False
    response = payload.get("tool_response")
    if isinstance(response, dict):
        if response.get("success") is False or response.get("is_error") or response.get("error"):
            return False
        code = response.get("exit_code", response.get("exitCode"))
        if isinstance(code, int) and code != 0:
            return False
    return True


# ---------------------------------------------------------------------------------------
# Is it a deliverable, and copying it.


@dataclass(frozen=True)
class _Copied:
    stored_path: str  # relative to deliverables_root()
    size: int
    sha256: str


def _inside(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def outside_project(path: str, *, project_root: str) -> bool:
    """True for a file that is not part of the project's source tree, nor a secret location
    (memory.privacy.secret_locations: system trees, cmem's data dir, credentials under $HOME)."""
    if project_root and _inside(path, project_root):
        return False
    real = os.path.realpath(path)
    if project_root and _inside(real, os.path.realpath(project_root)):
        return False
    reason = refusal_reason(path)
    if reason:
        log.info("deliverable %s refused: %s", path, reason)
        return False
    return True


def safe_segment(text: str, fallback: str) -> str:
    """A single path segment: no separators, no dot-names, printable, bounded."""
    cleaned = re.sub(r"[^\w.\- ()+,@=]", "_", text).strip(" .")
    return cleaned[:120] or fallback


def copy_into(src: str, dest_dir: Path, name: str, max_bytes: int) -> _Copied | None:
    """Copy one regular file (no symlink, no FIFO, no directory) into dest_dir.

    Every component is opened with O_NOFOLLOW (memory.capture.handover.open_no_links) and the file is checked
    with fstat on the open descriptor, so a file or parent folder swapped for a symlink, a
    pipe, or a hardlink to a file elsewhere (st_nlink > 1: a link to ~/.ssh/id_rsa has the
    same inode) is refused, and a FIFO never blocks. Text is redacted before it is stored.
    """
    try:
        fd = open_no_links(src)
    except OSError as exc:
        log.info("deliverable %s skipped: %s", src, exc.strerror or exc)
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            log.info("deliverable %s skipped: not a regular file", src)
            return None
        if st.st_nlink > 1:
            log.info("deliverable %s refused: %d hard links", src, st.st_nlink)
            return None
        if st.st_size > max_bytes:
            log.info(
                "deliverable %s skipped: %d bytes > CLAUDE_MEM_DELIVERABLES_MAX_BYTES",
                src,
                st.st_size,
            )
            return None
        return store_stream(fh, dest_dir, name, max_bytes)


def store_stream(fh: IO[bytes], dest_dir: Path, name: str, max_bytes: int) -> _Copied:
    """Store the bytes of `fh` (a checked file on this machine, or bytes a hook handed
    over) as `dest_dir/name`, redacted when it is text; a different content under the same
    name gets its sha's first 8 digits appended. Raises OSError past `max_bytes`."""
    dest_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    tmp_fd, tmp_name = tempfile.mkstemp(dir=dest_dir, prefix=".incoming-")
    try:
        with os.fdopen(tmp_fd, "wb") as out:
            while chunk := fh.read(1024 * 1024):
                size += len(chunk)
                if size > max_bytes:  # grew while we read it
                    raise OSError("file grew past the size cap while copying")
                digest.update(chunk)
                out.write(chunk)
        redacted = _redacted_copy(Path(tmp_name), name)
        sha = _sha256_of(Path(tmp_name)) if redacted else digest.hexdigest()
        target = dest_dir / name
        if target.exists() and _sha256_of(target) != sha:
            stem, dot, ext = name.rpartition(".")
            target = dest_dir / (f"{stem}-{sha[:8]}.{ext}" if dot and stem else f"{name}-{sha[:8]}")
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    size = os.path.getsize(target)  # the stored (redacted) size
    return _Copied(stored_path=str(target.relative_to(deliverables_root())), size=size, sha256=sha)


def _redacted_copy(path: Path, name: str) -> bool:
    """Rewrite a text deliverable with secrets redacted by the redactor every stored text
    goes through (memory.privacy.redact_text); True when anything changed. Any
    file that is UTF-8 without NUL bytes counts as text, whatever its name: a dotfile such
    as ~/.zshrc has no type but carries `export API_KEY=…`. Binary files are kept as is."""
    data = path.read_bytes()
    if b"\x00" in data:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    cleaned = redaction.redact_text(text)
    if cleaned == text:
        return False
    path.write_bytes(cleaned.encode("utf-8"))
    return True


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def content_type_for(name: str) -> str:
    ext = os.path.splitext(name)[1].lower()
    if ext in _EXTRA_TYPES:
        return _EXTRA_TYPES[ext]
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or "application/octet-stream"


def deliverables_capture(
    *, session: Session, event: HookEvent, skip: frozenset[str] | set[str] = frozenset()
) -> list[Deliverable]:
    """Copy the files this turn wrote outside the project into the data dir.

    1. Off when CLAUDE_MEM_DELIVERABLES_ENABLED is false.
    2. Collect written paths: this prompt's Write/Edit/MultiEdit/NotebookEdit (and Codex
       apply_patch) Event rows, plus the transcript's last turn (async PostToolUse hooks may
       not have arrived yet).
    3. Keep files outside Session.project_root and outside the data dir; skip missing files,
       directories, symlinks, special files and files over CLAUDE_MEM_DELIVERABLES_MAX_BYTES.
    4. Copy to <data dir>/deliverables/<project>/<YYYY-MM-DD>/<name> with size and sha256,
       and attach a Deliverable to the session and the current prompt (once per content).
    Paths in `skip` were dealt with from bytes the hook handed over (deliverables.handover).
    """
    settings = config.load()
    if not config.deliverables_enabled(settings):
        return []
    if remote_request():
        # Team mode: the paths (and the transcript) are the client's, not this server's;
        # reading them would copy the server's own files (/proc/self/environ, a 0600 file).
        return []
    max_bytes = config.deliverables_max_bytes(settings)
    cwd = event.cwd or session.cwd
    project_root = session.project_root or (project_for_cwd(cwd).root if cwd else "")

    try:
        candidates = list(_paths_from_events(session))
    except Exception:  # a bad payload row must not cost the turn its deliverables
        log.exception("deliverables: reading events of session %s failed", session.pk)
        candidates = []
    candidates += paths_from_transcript(event.transcript_path or session.transcript_path)

    prompt = Prompt.objects.filter(session=session, number=session.prompt_counter).first()
    day = timezone.localdate().isoformat()
    dest_dir = deliverables_root() / safe_segment(session.project, "project") / day
    made: list[Deliverable] = []
    for raw in unique(candidates)[:MAX_FILES_PER_TURN]:
        path = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(cwd or "/", raw))
        if path in skip or not outside_project(path, project_root=project_root):
            continue
        try:
            deliverable = _deliverable_from_file(
                session=session, prompt=prompt, path=path, dest_dir=dest_dir, max_bytes=max_bytes
            )
        except Exception:  # Stop is answered whatever happens to one file
            log.exception("deliverable %s could not be captured", path)
            continue
        if deliverable is not None:
            made.append(deliverable)
    return made


def _deliverable_from_file(
    *, session: Session, prompt: Prompt | None, path: str, dest_dir: Path, max_bytes: int
) -> Deliverable | None:
    name = safe_segment(os.path.basename(path), "file")
    copied = copy_into(path, dest_dir, name, max_bytes)
    if copied is None:
        return None
    return deliverable_record(session=session, prompt=prompt, path=path, copied=copied, name=name)


def deliverable_record(
    *,
    session: Session,
    prompt: Prompt | None,
    path: str,
    copied: _Copied,
    name: str,
    attached: bool = False,
    title: str = "",
    note: str = "",
) -> Deliverable:
    """The Deliverable row of a stored copy, once per (session, path, content). An
    attachment of a file the turn also wrote marks the existing row attached."""
    existing = Deliverable.objects.filter(
        session=session, original_path=path, sha256=copied.sha256
    ).first()
    if existing is None:
        try:
            with transaction.atomic():
                return Deliverable.objects.create(
                    session=session,
                    prompt=prompt,
                    project=session.project,
                    original_path=path,
                    stored_path=copied.stored_path,
                    size=copied.size,
                    sha256=copied.sha256,
                    content_type=content_type_for(name),
                    attached=attached,
                    title=title,
                    note=note,
                )
        except IntegrityError:  # a concurrent Stop of the same turn stored it first
            existing = Deliverable.objects.get(
                session=session, original_path=path, sha256=copied.sha256
            )
    if attached and not existing.attached:
        existing.attached, existing.title, existing.note = True, title, note
        existing.save(update_fields=["attached", "title", "note"])
    return existing


# ---------------------------------------------------------------------------------------
# Reading a stored deliverable back (downloads and previews).


class DeliverableMissing(LookupError):
    """The stored copy is gone or lies outside the deliverables folder."""


def deliverable_file_path(*, deliverable: Deliverable) -> Path:
    """The stored copy's absolute path, guaranteed to lie under the deliverables root."""
    root = deliverables_root().resolve()
    path = (root / deliverable.stored_path).resolve()
    if not path.is_relative_to(root) or path == root or not path.is_file():
        raise DeliverableMissing(deliverable.stored_path)
    return path


def deliverable_preview_kind(*, deliverable: Deliverable) -> str:
    """How My Work previews it: markdown, html, image, text, or '' (download only)."""
    ctype = (deliverable.content_type or content_type_for(deliverable.name)).split(";")[0]
    if ctype == "text/markdown":
        return "markdown"
    if ctype in {"text/html", "application/xhtml+xml"}:
        return "html"
    if ctype in IMAGE_TYPES:
        return "image"
    if ctype.startswith("text/") or ctype in {
        "application/json",
        "application/xml",
        "application/javascript",
    }:
        return "text"
    return ""


def deliverable_read_text(
    *, deliverable: Deliverable, limit: int = TEXT_PREVIEW_BYTES
) -> tuple[str, bool]:
    """The first `limit` bytes as text, and whether it was cut."""
    path = deliverable_file_path(deliverable=deliverable)
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def _image_as_link(renderer: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """A markdown image is rendered as a plain link: a preview never fetches anything (a
    remote image is a tracker; the page's CSP allows only same-origin and data: images)."""
    token = tokens[idx]
    src = escape(str(token.attrGet("src") or ""))
    label = escape(token.content or str(token.attrGet("src") or "image"))
    return f'<a href="{src}">{label}</a>'


def markdown_to_safe_html(text: str) -> str:
    """Markdown rendered with raw HTML off and images as links, then sanitised by nh3 (links
    get rel=noopener)."""
    # Imported here: markdown-it is ~80 ms and several MB that only a deliverable page needs,
    # not every worker process at start.
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.add_render_rule("image", _image_as_link)
    html = md.render(text)
    return nh3.clean(
        html, url_schemes={"http", "https", "mailto"}, link_rel="noopener noreferrer nofollow"
    )
