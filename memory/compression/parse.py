"""Parse the model's XML (claude-mem's `parseAgentXml` rules, §5.4 of the upstream notes).

- One enclosing ``` fence is stripped. An empty reply means "nothing worth keeping".
- The first root tag decides the mode; prose, or the wrong root, is invalid (`ParseError`).
- Fields are taken with non-greedy regexes and trimmed; empty array items are dropped.
- A missing or unknown type becomes `discovery` (claude-mem keeps unknown types as
  emitted; every reader here expects the nine ids of the legend).
- A certainty (confirmed, hypothesis, dead_end) is read leniently (case, `-` or a space
  for `_`); anything else, or none, is "" (unknown): a hostile or confused reply cannot
  store a value the readers do not know.
- Concepts are cut at the first ':', lower-cased, kept only from the closed list, and never
  equal to the type.
- An observation with no title, narrative, facts or concepts is dropped; a summary with
  none of request/investigated/learned/completed/next_steps is invalid.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from functools import lru_cache

from memory.compression.prompts import CERTAINTIES, CONCEPTS, TYPES

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.S)
_ROOT = re.compile(r"<(observation|summary|skip_summary)\b", re.S)
_USES = re.compile(r"""uses\s*=\s*["']([^"']*)["']""")


class ParseError(ValueError):
    """The reply is not usable XML; the message says why (it goes into the repair request)."""


@dataclass
class ParsedObservation:
    type: str
    title: str
    subtitle: str = ""
    facts: list[str] = field(default_factory=list)
    narrative: str = ""
    concepts: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    uses: list[int] = field(default_factory=list)
    # "" (unknown: the offline compressor, a reply without one) or one of CERTAINTIES.
    certainty: str = ""
    # Files the capture's hashes show changed (hash_evidence), stored as modified even though
    # the cited tool use (a Read) modified nothing itself. Never set from a model's reply.
    evidence_modified: list[str] = field(default_factory=list)


@dataclass
class ParsedSummary:
    request: str = ""
    investigated: str = ""
    learned: str = ""
    completed: str = ""
    next_steps: str = ""
    notes: str = ""


def _strip(text: str) -> str:
    text = text.strip()
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text


@dataclass
class _Block:
    attrs: str
    body: str
    start: int
    end: int


@lru_cache(maxsize=64)
def _tag_res(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    return re.compile(rf"<{name}\b([^<>]*)>"), re.compile(rf"</{name}\s*>")


def _blocks(text: str, name: str, *, first_only: bool = False) -> list[_Block]:
    """`<name …>body</name>` blocks in order, as a non-greedy regex pairs them, in linear
    time: the closing tags are found in one pass and a cursor only moves forward (a hostile
    reply of thousands of unclosed tags made `(.*?)</name>` quadratic)."""
    opens, closes = _tag_res(name)
    close_spans = [(m.start(), m.end()) for m in closes.finditer(text)]
    out: list[_Block] = []
    c = 0
    position = 0
    for match in opens.finditer(text):
        if match.start() < position:
            continue
        while c < len(close_spans) and close_spans[c][0] < match.end():
            c += 1
        if c == len(close_spans):
            break  # no later opening tag can be closed either
        close_start, close_end = close_spans[c]
        out.append(
            _Block(match.group(1), text[match.end() : close_start], match.start(), close_end)
        )
        position = close_end
        c += 1
        if first_only:
            break
    return out


def _field(body: str, name: str) -> str:
    found = _blocks(body, name, first_only=True)
    return html.unescape(" ".join(found[0].body.split())) if found else ""


def _items(body: str, outer: str, inner: str) -> list[str]:
    found = _blocks(body, outer, first_only=True)
    if not found:
        return []
    values = (html.unescape(" ".join(b.body.split())) for b in _blocks(found[0].body, inner))
    return [v for v in values if v]


def _root(text: str) -> str:
    match = _ROOT.search(text)
    if not match:
        raise ParseError(
            "the reply holds no <observation> or <summary> block (prose is not accepted)"
        )
    if text[: match.start()].strip():
        raise ParseError("the reply has text before its first XML block")
    return match.group(1)


def parse_observations(text: str) -> list[ParsedObservation]:
    """The observations in a reply; [] for an empty reply. Raises ParseError when invalid."""
    text = _strip(text)
    if not text:
        return []
    if _root(text) != "observation":
        raise ParseError("expected <observation> blocks, got a different root tag")
    blocks = _blocks(text, "observation")
    if text.count("<observation") != len(blocks):
        raise ParseError("an <observation> block is not closed")
    gaps = [text[a.end : b.start] for a, b in zip(blocks, blocks[1:], strict=False)]
    leftover = "".join([text[: blocks[0].start] if blocks else text, *gaps])
    if blocks:
        leftover += text[blocks[-1].end :]
    if leftover.strip():
        raise ParseError("the reply has prose outside its <observation> blocks")
    out: list[ParsedObservation] = []
    for block in blocks:
        obs = _observation(block.attrs, block.body)
        if obs is not None:
            out.append(obs)
    return out


def _certainty(body: str) -> str:
    raw = _field(body, "certainty")
    if len(raw) > 20:  # longer than any id, however it is spelt: not one of them
        return ""
    value = re.sub(r"[\s-]+", "_", raw.strip().lower())
    return value if value in CERTAINTIES else ""


def _observation(attrs: str, body: str) -> ParsedObservation | None:
    kind = _field(body, "type").lower()
    if kind not in TYPES:
        kind = "discovery"
    concepts: list[str] = []
    for raw in _items(body, "concepts", "concept"):
        concept = raw.split(":", 1)[0].strip().lower()
        if concept in CONCEPTS and concept != kind and concept not in concepts:
            concepts.append(concept)
    uses_match = _USES.search(attrs)
    uses = [int(n) for n in re.findall(r"\d+", uses_match.group(1))] if uses_match else []
    obs = ParsedObservation(
        type=kind,
        title=_field(body, "title")[:300],
        subtitle=_field(body, "subtitle"),
        facts=_items(body, "facts", "fact"),
        narrative=_field(body, "narrative"),
        concepts=concepts,
        files_read=_items(body, "files_read", "file"),
        files_modified=_items(body, "files_modified", "file"),
        uses=uses,
        certainty=_certainty(body),
    )
    if not (obs.title or obs.narrative or obs.facts or obs.concepts):
        return None
    if not obs.title:
        obs.title = (obs.subtitle or obs.narrative or obs.facts[0])[:120]
    return obs


def parse_summary(text: str) -> ParsedSummary | None:
    """The summary of a reply; None for `<skip_summary/>`. Raises ParseError when invalid."""
    text = _strip(text)
    if not text:
        raise ParseError("the reply is empty; a <summary> block is required")
    root = _root(text)
    if root == "skip_summary":
        return None
    if root != "summary":
        raise ParseError("expected a <summary> block, got a different root tag")
    found = _blocks(text, "summary", first_only=True)
    if not found:
        raise ParseError("the <summary> block is not closed")
    body = found[0].body
    summary = ParsedSummary(
        request=_field(body, "request"),
        investigated=_field(body, "investigated"),
        learned=_field(body, "learned"),
        completed=_field(body, "completed"),
        next_steps=_field(body, "next_steps"),
        notes=_field(body, "notes"),
    )
    if not any(
        [
            summary.request,
            summary.investigated,
            summary.learned,
            summary.completed,
            summary.next_steps,
        ]
    ):
        raise ParseError(
            "the <summary> has none of request, investigated, learned, completed, next_steps"
        )
    return summary
