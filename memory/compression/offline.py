"""The offline compressor: deterministic observations and summaries from the payload alone.

Used with no API key, with CLAUDE_MEM_COMPRESSOR=offline, once the daily token budget is
spent, and as the fallback when the API keeps failing or answers with unusable XML. It
needs nothing but the captured tool use, so cmem is fully usable without a key: the type
comes from the tool and its outcome, the title from what changed (a def/class name, a
comment, the first changed line), the facts from paths, commands, exit codes and errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from memory.compression.offline_shell import command_observation
from memory.compression.offline_text import joined, t
from memory.compression.parse import ParsedObservation, ParsedSummary
from memory.compression.tooluse import SHELL_TOOLS, ToolUse, sanitize

_DEF = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|function|func|fn|interface|struct|enum|type)\s+([A-Za-z_][\w]*)"
)
_JS_FN = re.compile(
    r"^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?\("
)
_COMMENT = re.compile(r"^\s*(?:#|//|/\*+|\*|--|\"\"\"|''')\s*(.+?)\s*(?:\*/|\"\"\"|''')?\s*$")
_ERROR_LINE = re.compile(r"(?i)(error|exception|fatal|not found|no such file|denied|cannot)")
_WEAK_ERROR_LINE = re.compile(r"(?i)\b(failed|failure|assert)")
_FIX_WORDS = re.compile(
    r"(?i)\b(fix|fixes|fixed|bug|broken|error|crash|regression|failing|fails)\b"
)
_REFACTOR_WORDS = re.compile(
    r"(?i)\b(refactor|rename|extract|move|cleanup|clean up|simplify|reorganize)\b"
)
_FAILED_TITLE = re.compile(r"(?i)\bfailed\b|失败")
_DECISION_WORDS = re.compile(r"(?i)\b(decide|decided|decision|instead of|we will use|chose)\b")


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    # Never end mid-token (a path cut in two reads as another path): back up to a space.
    return (cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut).rstrip() + "…"


def _symbols(lines: Sequence[str]) -> list[str]:
    found: list[str] = []
    for line in lines:
        match = _DEF.match(line) or _JS_FN.match(line)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found


def _changed_lines(diff: str) -> tuple[list[str], list[str]]:
    added, removed = [], []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "***")):
            continue
        if line.startswith("+"):
            added.append(line[1:])
        elif line.startswith("-"):
            removed.append(line[1:])
    return added, removed


def _edit_gist(added: list[str], removed: list[str]) -> tuple[str, str, list[str]]:
    """(kind, a few words saying what an edit did, the symbols it touched). The words are in
    the user's language (offline_text); symbols and quoted code lines stay verbatim. kind
    (renamed, added, removed, changed, line, removed_line, edited) decides the type."""
    new_symbols = _symbols(added)
    old_symbols = _symbols(removed)
    gone = [s for s in old_symbols if s not in new_symbols]
    born = [s for s in new_symbols if s not in old_symbols]
    symbols = list(dict.fromkeys(new_symbols + old_symbols))
    if born and gone and len(born) == len(gone) == 1:
        return "renamed", t("gist_renamed", old=f"{gone[0]}()", new=f"{born[0]}()"), symbols
    if born:
        return "added", t("gist_added", symbols=", ".join(f"{s}()" for s in born[:3])), symbols
    if gone:
        return "removed", t("gist_removed", symbols=", ".join(f"{s}()" for s in gone[:3])), symbols
    for line in added:
        match = _COMMENT.match(line)
        if (
            match
            and len(match.group(1)) > 6
            and not match.group(1).startswith(("!", "-*-", "noqa", "type:"))
        ):
            # The comment the edit added, quoted as written: it is the code's own words.
            return "line", _short(match.group(1).rstrip(".:"), 70), symbols
    if symbols:
        return (
            "changed",
            t("gist_changed", symbols=", ".join(f"{s}()" for s in symbols[:3])),
            symbols,
        )
    first = next((line.strip() for line in added if line.strip()), "")
    if first:
        return "line", _short(first, 70), symbols
    first_removed = next((line.strip() for line in removed if line.strip()), "")
    if first_removed:
        return "removed_line", t("gist_removed_line", line=_short(first_removed, 60)), symbols
    return "edited", t("gist_edited"), symbols


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # The last error line is usually the real one (tracebacks); "1 failed" tallies come last.
    for pattern in (_ERROR_LINE, _WEAK_ERROR_LINE):
        for line in reversed(lines):
            if pattern.search(line) and not line.startswith("File "):
                return _short(line, 160)
    return _short(lines[-1], 160) if lines else ""


def observation_for(
    use: ToolUse, *, prompt: str = "", earlier_failure: bool = False
) -> ParsedObservation | None:
    """One observation for one tool use, or None when it holds nothing worth keeping."""
    name = use.name
    if name in SHELL_TOOLS and not use.patch_text:
        return command_observation(use, earlier_failure=earlier_failure)
    if use.modified_paths or (
        use.name in {"Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch"} and not use.error
    ):
        return _edit_observation(use, prompt=prompt, earlier_failure=earlier_failure)
    if use.error and name not in {"Bash", "shell", "exec_command"}:
        return _failure_observation(use)
    if name in {"Read", "NotebookRead", "read_file"}:
        return _read_observation(use)
    if name in {"Grep", "Glob", "LS"}:
        return _search_observation(use)
    return _generic_observation(use)


def _edit_observation(use: ToolUse, *, prompt: str, earlier_failure: bool) -> ParsedObservation:
    path = use.path or (use.modified_paths[0] if use.modified_paths else "a file")
    files = use.modified_paths or ([use.path] if use.path else [])
    facts: list[str] = []
    if use.name in {"Write", "write_file", "NotebookEdit"} and not use.edits():
        content = use.written_content
        lines = content.splitlines()
        symbols = _symbols(lines)
        title = t("created" if use.created_file else "wrote", path=path) + (
            f": {t('defines', symbols=', '.join(f'{x}()' for x in symbols[:4]))}"
            if symbols
            else (
                f": {first}"
                if (first := _short(next((x for x in lines if x.strip()), ""), 70))
                else ""
            )
        )
        facts.append(
            f"{path}: {len(lines)} lines written{' (new file)' if use.created_file else ''}."
        )
        if symbols:
            facts.append(f"{path} defines: {', '.join(symbols[:10])}.")
        kind = "feature" if use.created_file or symbols else "change"
        narrative = (
            t("created" if use.created_file else "wrote", path=path)
            + t("n_lines", n=len(lines))
            + t("full_stop")
        )
        added: list[str] = lines
    else:
        added, removed = _changed_lines(use.diff())
        gist_kind, gist, symbols = _edit_gist(added, removed)
        title = (
            t("edited", path=path, gist=gist)
            if len(files) <= 1
            else t("edited_many", n=len(files), gist=gist)
        )
        facts.append(f"{path}: +{len(added)} −{len(removed)} lines.")
        if symbols:
            facts.append(f"Symbols touched in {path}: {', '.join(symbols[:10])}.")
        for other in files[1:6]:
            facts.append(f"Also modified {other}.")
        narrative = t("edited", path=", ".join(files[:5]) or path, gist=gist) + t("full_stop")
        if _REFACTOR_WORDS.search(prompt) or gist_kind == "renamed":
            kind = "refactor"
        elif earlier_failure or _FIX_WORDS.search(prompt):
            kind = "bugfix"
        elif gist_kind == "added":
            kind = "feature"
        else:
            kind = "change"
    if _DECISION_WORDS.search("\n".join(added[:50])):
        facts.append("The change records a decision in its text.")
    concepts = ["problem-solution"] if kind == "bugfix" else ["what-changed"]
    return ParsedObservation(
        type=kind,
        title=sanitize(_short(title, 140)),
        subtitle=sanitize(_short(f"{use.name} of {', '.join(files[:3]) or path}", 160)),
        facts=[sanitize(f) for f in facts],
        narrative=sanitize(narrative),
        concepts=concepts,
        files_read=[],
        files_modified=files,
        uses=[use.n],
    )


def _read_observation(use: ToolUse) -> ParsedObservation:
    path = use.path
    content = use.output
    symbols = _symbols(content.splitlines())
    extent = use.read_range()
    title = t("read", path=path) + (
        f": {', '.join(symbols[:4])}" if symbols else (f" ({extent})" if extent else "")
    )
    facts = [f"{path}{f' ({extent})' if extent else ''} was read."]
    if symbols:
        facts.append(f"{path} defines: {', '.join(symbols[:12])}.")
    docline = next(
        (m.group(1) for line in content.splitlines()[:5] if (m := _COMMENT.match(line))), ""
    )
    narrative = f"Read {path}{f' ({extent})' if extent else ''}."
    if docline:
        narrative += f" It starts: {_short(docline, 160)}"
    return ParsedObservation(
        type="discovery",
        title=sanitize(_short(title, 140)),
        subtitle=sanitize(_short(docline or f"Contents of {path}", 160)),
        facts=[sanitize(f) for f in facts],
        narrative=sanitize(narrative),
        concepts=["how-it-works"],
        files_read=use.read_paths or ([path] if path else []),
        uses=[use.n],
    )


def _search_observation(use: ToolUse) -> ParsedObservation | None:
    pattern = str(use.tool_input.get("pattern", "")) or str(use.tool_input.get("path", ""))
    where = use.tool_input.get("path") or use.tool_input.get("glob") or ""
    response = use.response if isinstance(use.response, dict) else {}
    files = (
        [str(f) for f in response.get("filenames", []) if isinstance(f, str)]
        if isinstance(response.get("filenames"), list)
        else []
    )
    count = response.get("numFiles", len(files))
    rel_files = [use.rel(f) for f in files]
    verb = "Searched for" if use.name == "Grep" else "Listed"
    title = (
        f"{verb} `{_short(pattern, 60)}`"
        + (f" in {use.rel(str(where))}" if where and use.name == "Grep" else "")
        + f": {count} files"
    )
    facts = [f"{use.name} `{_short(pattern, 80)}` matched {count} files."]
    if rel_files:
        facts.append("Matches: " + ", ".join(rel_files[:8]) + (" …" if len(rel_files) > 8 else ""))
    elif not use.output.strip() or count == 0:
        facts.append("Nothing matched.")
    return ParsedObservation(
        type="discovery",
        title=sanitize(_short(title, 140)),
        subtitle=sanitize(_short(", ".join(rel_files[:3]) or "no matches", 160)),
        facts=[sanitize(f) for f in facts],
        narrative=sanitize(f"{verb} `{_short(pattern, 80)}`: {count} files."),
        concepts=["how-it-works"],
        uses=[use.n],
    )


def _failure_observation(use: ToolUse) -> ParsedObservation:
    error = _first_error(use.error) or _short(use.error, 160)
    target = use.path or _short(use.command, 60) or use.name
    return ParsedObservation(
        type="discovery",
        title=sanitize(_short(f"{use.name} of {target} failed: {error}", 160)),
        subtitle=sanitize(_short(error, 160)),
        facts=[sanitize(f"{use.name} {target} failed: {error}")],
        narrative=sanitize(f"{use.name} of {target} failed. {error}"),
        concepts=["gotcha"],
        uses=[use.n],
    )


def _generic_observation(use: ToolUse) -> ParsedObservation | None:
    output = use.output.strip()
    params = ", ".join(f"{k}={_short(str(v), 40)}" for k, v in list(use.tool_input.items())[:3])
    if not output and not params:
        return None
    first = _short(output.splitlines()[0], 100) if output else ""
    return ParsedObservation(
        type="discovery",
        title=sanitize(_short(f"{use.name}: {params or first}", 140)),
        subtitle=sanitize(first or f"{use.name} was used"),
        facts=[sanitize(f"{use.name} called with {params}.")] if params else [],
        narrative=sanitize(
            f"{use.name} ran" + (f"; it returned: {_short(output, 200)}" if output else ".")
        ),
        concepts=["how-it-works"],
        uses=[use.n],
    )


def observations_for_batch(
    uses: Sequence[ToolUse], *, prompts: dict[int, str], failed_before: bool = False
) -> list[ParsedObservation]:
    """One observation per tool use that holds something; a failure earlier in the same
    prompt turns a following edit into a bugfix."""
    out: list[ParsedObservation] = []
    failure_in_prompt: dict[int | None, bool] = {}
    for use in uses:
        prompt = prompts.get(use.prompt_number or 0, "")
        earlier = failure_in_prompt.get(use.prompt_number, failed_before)
        obs = observation_for(use, prompt=prompt, earlier_failure=earlier)
        if obs is not None:
            out.append(obs)
        if use.failed:
            failure_in_prompt[use.prompt_number] = True
        elif use.modified_paths:
            failure_in_prompt[use.prompt_number] = False  # the fix landed; later edits are ordinary
    return out


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _request_title(request: str, work: list[str], discoveries: list[str]) -> str:
    """The user's request when it fits on one line whole; else what the turn did. A prompt
    is never cut: a title ending mid-path reads as a wrong path."""
    lines = request.strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    if first and len(first) <= 120 and len(lines) <= 2:
        return first
    done = work or discoveries
    if not done:
        return t("summary_session")
    return t("summary_more", first=done[0], n=len(done) - 1) if len(done) > 1 else done[0]


def summary_for(
    *, request: str, observations: Sequence[Mapping[str, Any]], last_message: str
) -> ParsedSummary:
    """A summary from the turn's observations (dicts with type/title/files), the prompt
    when it fits whole, and the agent's last message. `completed` (My Work's "Done") lists
    what changed; "No file changes" only when nothing did."""
    discoveries = [str(o["title"]) for o in observations if o.get("type") == "discovery"]
    work = [str(o["title"]) for o in observations if o.get("type") not in {"discovery"}]
    read: list[str] = []
    modified: list[str] = []
    for o in observations:
        read += [str(f) for f in _strings(o.get("files_read")) if f not in read]
        modified += [str(f) for f in _strings(o.get("files_modified")) if f not in modified]
    failures = [
        (i, str(o["title"]))
        for i, o in enumerate(observations)
        if o.get("type") == "discovery" and _FAILED_TITLE.search(str(o.get("title", "")))
    ]
    last_change = max(
        (i for i, o in enumerate(observations) if _strings(o.get("files_modified"))), default=-1
    )
    investigated = "; ".join(discoveries[:6])
    if read:
        investigated = (investigated + "; " if investigated else "") + t(
            "summary_read", paths=joined(read, 8)
        )
    completed = "; ".join(work[:6])
    if modified:
        completed = (completed + "; " if completed else "") + t(
            "summary_modified", paths=joined(modified, 8)
        )
    last = " ".join(last_message.split())
    notes = []
    if failures:
        notes.append(t("summary_failures", n=len(failures), last=_short(failures[-1][1], 120)))
    if last:
        notes.append(t("summary_last_message", text=_short(last, 300)))
    open_failure = bool(failures) and failures[-1][0] > last_change
    return ParsedSummary(
        request=sanitize(_request_title(request, work, discoveries)),
        investigated=sanitize(investigated),
        learned=sanitize("; ".join(discoveries[6:10])),
        completed=sanitize(completed) or (t("summary_no_changes") if observations else ""),
        next_steps=sanitize(t("summary_fix_next", failure=_short(failures[-1][1], 160)))
        if open_failure
        else "",
        notes=sanitize(" ".join(notes)),
    )
