"""What never gets stored: private tags, secrets, and the bulk of huge fields.

Applied by the capture services before anything reaches the database, in this order:
1. strip `<private>…</private>` and claude-mem's other tags (docs/reference/source-rules.md), so a
   user can keep a passage out of memory and cmem never re-ingests its own context;
2. redact secrets: explicit patterns for the common providers plus the regex plugins of
   `detect-secrets`, each replaced by `[REDACTED:<kind>]`;
3. cap each field, keeping head and tail with a marker saying how much was cut.
Redaction runs before the cap so a secret can never be cut in half and survive as a prefix.
"""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from typing import Any

from memory import config

log = logging.getLogger(__name__)

STRIPPED_TAGS = (
    "private",
    "claude-mem-context",
    "system_instruction",
    "system-instruction",
    "persisted-output",
    "system-reminder",
)
_TAG_NAMES = "|".join(map(re.escape, STRIPPED_TAGS))
# One token regex for the opening and closing tags of every stripped name, case-insensitive
# (`<PRIVATE>` is as private as `<private>`). Attribute runs are bounded so that a field of
# tens of thousands of unclosed `<private x` fragments costs one bounded probe per fragment:
# the scan below is linear in the text, where a backtracking `.*?</\1>` was quadratic.
_TAG_TOKEN_RE = re.compile(
    r"<(?:/(" + _TAG_NAMES + r")\s{0,64}|(" + _TAG_NAMES + r")(?:\s[^<>]{0,512})?)>",
    re.IGNORECASE,
)
_TASK_NOTIFICATION_RE = re.compile(
    r"\A\s*<task-notification(?:\s[^>]*)?>.*</task-notification>\s*\Z", re.DOTALL
)

# Keys whose string value is a credential whatever it looks like (tool inputs, env maps).
_SECRET_KEY_RE = re.compile(
    r"(?:^|[_\-.])(?:password|passwd|passphrase|secret|client[_-]?secret|token|access[_-]?token|"
    r"refresh[_-]?token|auth[_-]?token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
    r"private[_-]?key|authorization|credentials?)$",
    re.IGNORECASE,
)

# (kind, pattern, group): `group` is the part replaced (0 = the whole match).
_EXPLICIT: list[tuple[str, str, int]] = [
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        0,
    ),
    # The tail of a cut field may hold the end of a key whose BEGIN line was cut away.
    ("private-key", r"\A.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", 0),
    ("anthropic", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0),
    ("openai", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}", 0),
    ("openai", r"\bsk-(?!ant-)[A-Za-z0-9]{32,}\b", 0),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}\b", 0),
    (
        "aws-secret-key",
        r"(?i)\b(?:aws_?)?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        1,
    ),
    ("github", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b", 0),
    ("github", r"\bgithub_pat_[A-Za-z0-9_]{22,}", 0),
    ("slack", r"\bxox[bpars]-[A-Za-z0-9\-]{10,}", 0),
    ("google", r"\bAIza[0-9A-Za-z_\-]{35,}", 0),
    (
        "bearer",
        r"(?i)\bauthorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic)\s+([A-Za-z0-9._~+/=\-]{8,})",
        1,
    ),
    ("bearer", r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{20,}=*)", 1),
    # Explicit where detect-secrets is not enough, or not loaded (the hook client's spool):
    ("stripe-access-key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}", 0),
    ("json-web-token", r"\beyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,}", 0),
    # `postgres://user:pw@host`: the password between the user and the host.
    (
        "basic-auth-credentials",
        r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/@]{1,256}:([^\s@/]{1,256})@",
        1,
    ),
    # `mysql -pSECRET` (no space: a space means "prompt for it"), `sshpass -p SECRET`.
    (
        "password",
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]{0,512}?\s-p([^\s-][^\s]*)",
        1,
    ),
    ("password", r"\bsshpass\b[^\n|;&]{0,512}?\s-p\s*([^\s-][^\s]*)", 1),
]
# `password=…`, `"secret": "…"`, `API_TOKEN: …`: the value after a secret-sounding name.
_ASSIGNMENT_RE = re.compile(
    r"(?i)(password|passwd|passphrase|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key)[A-Za-z0-9_\-]{0,64}"
    r"([\"']?\s*(?::=|=|:)\s*)([\"']?)([^\s\"'`,;)}\]]{4,})"
)
_CODE_VALUE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(|\[|$)")
_PLACEHOLDERS = {
    "none",
    "null",
    "true",
    "false",
    "str",
    "string",
    "bytes",
    "optional",
    "undefined",
    "required",
    "xxxx",
    "****",
    "redacted",
    "changeme",
    "example",
    "secret",
    "password",
    "token",
}


class ScanStats:
    """Counts the tag scanner's steps, so tests can prove the work is linear in the input."""

    def __init__(self) -> None:
        self.tokens = 0


def strip_tags(text: str, *, stats: ScanStats | None = None) -> str:
    """`text` without the stripped tags and what they enclose, in one linear pass.

    1. One scan finds every opening and closing token of the stripped names.
    2. An opening tag pairs with the next closing tag of the same name after it (as a
       non-greedy regex would); the pair and everything between are dropped.
    3. An unclosed `<private>` hides everything after it: when in doubt, keep it out. Other
       unclosed tags are kept as text.
    """
    if "<" not in text:
        return text
    tokens = list(_TAG_TOKEN_RE.finditer(text))
    if stats is not None:
        stats.tokens += len(tokens)
    if not tokens:
        return text
    if len(tokens) > 200:
        log.warning("stripping %s tag tokens from one field", len(tokens))
    # For each name, the indexes (into `tokens`) of its closing tags, in order; a cursor per
    # name only moves forward, so pairing is linear overall.
    closes: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        if token.group(1):
            closes.setdefault(token.group(1).lower(), []).append(i)
    cursor = dict.fromkeys(closes, 0)
    out: list[str] = []
    kept_from = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = (token.group(2) or "").lower()
        if not name or token.start() < kept_from:
            i += 1
            continue
        positions = closes.get(name, [])
        c = cursor.get(name, 0)
        while c < len(positions) and positions[c] <= i:
            c += 1
        cursor[name] = c
        if c < len(positions):
            close = tokens[positions[c]]
            out.append(text[kept_from : token.start()])
            kept_from = close.end()
            i = positions[c] + 1
            continue
        if name == "private":
            out.append(text[kept_from : token.start()])
            kept_from = len(text)
            break
        i += 1
    out.append(text[kept_from:])
    return "".join(out)


def is_internal_notification(text: str) -> bool:
    """A prompt that is only a `<task-notification>` block is protocol, not the user."""
    return len(text) <= 256 * 1024 and bool(_TASK_NOTIFICATION_RE.match(text))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


class _Lazy:
    """A pattern compiled on first use: most fields trigger none of the ~60 patterns, and
    compiling all of them up front would cost the hook client's spool path for nothing."""

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, _Lazy, int], ...]:
    """Explicit patterns first (precise kinds), then every regex plugin of detect-secrets,
    from the snapshot in memory.privacy.secret_patterns (no detect-secrets import: the same
    rules on the hook client's spool path as in the worker)."""
    # first scan only: ~300 patterns, and the hook's slow path and the MCP server import privacy
    from memory.privacy.secret_patterns import PLUGIN_PATTERNS

    explicit = [
        (kind, _Lazy(p, re.DOTALL if kind == "private-key" else 0), g) for kind, p, g in _EXPLICIT
    ]
    # A group that starts after the match is the secret after a keyword (`aws…key =
    # "<secret>"`); otherwise the whole match is the secret (see _sub).
    plugin = [(kind, _Lazy(p, flags), -1) for kind, p, flags in PLUGIN_PATTERNS]
    return tuple(explicit + plugin)


def _redact_assignment(match: re.Match[str]) -> str:
    keyword, sep, quote, value = match.groups()
    if not quote and (
        _CODE_VALUE_RE.match(value)
        and not value.isalnum()
        or value.startswith(("$", "%", "{", "<"))
    ):
        return match.group(0)  # `token = get_token()`, `password=os.environ[...]`, `${SECRET}`
    if value.lower().strip("*x") in _PLACEHOLDERS or value.startswith("[REDACTED"):
        return match.group(0)
    kind = "password" if keyword.lower().startswith("pass") else "secret"
    whole = match.group(0)
    return whole[: match.start(4) - match.start()] + f"[REDACTED:{kind}]"


# A pattern only runs when one of its literals occurs in the (lower-cased) text: a substring
# search is ~50× cheaper than a regex pass, and most fields contain none of them.
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "private-key": ("private key",),
    "anthropic": ("sk-ant-",),
    "openai": ("sk-",),
    "openai-token": ("t3blbkfj",),
    "aws-access-key": ("akia", "asia", "abia", "acca", "a3t"),
    "aws-secret-key": ("secret_access_key", "secretaccesskey", "secret_key", "secretkey"),
    "github": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "slack": ("xox",),
    "slack-token": ("xox", "hooks.slack.com"),
    "google": ("aiza",),
    "bearer": ("bearer", "authorization"),
    "artifactory-credentials": ("akc", "ap"),
    "azure-storage-account-access-key": ("accountkey=",),
    "basic-auth-credentials": ("://",),
    "gitlab-token": ("gl", "gr1348941"),
    "json-web-token": ("eyj",),
    "npm-tokens": ("_authtoken",),
    "pypi-token": ("pypi-",),
    "sendgrid-api-key": ("sg.",),
    "square-oauth-secret": ("sq0csp-",),
    "stripe-access-key": ("k_live_", "k_test_"),
    "password": ("mysql", "mariadb", "sshpass"),
    "twilio-api-key": ("ac", "sk"),
    "private-key-detector": ("private key", "putty"),
    "mailchimp-access-key": ("-us",),
}
# Literals one of which every _ASSIGNMENT_RE keyword contains (password/passwd -> "passw",
# passphrase -> "passp", every *key -> "key"): test output full of "PASSED" skips the regex.
_ASSIGNMENT_TRIGGERS = ("passw", "passp", "secret", "token", "key")


@lru_cache(maxsize=1)
def _triggered_patterns() -> tuple[tuple[str, _Lazy, int, tuple[str, ...]], ...]:
    """The patterns with their trigger literals looked up once, not per field."""
    return tuple((kind, lazy, group, _TRIGGERS.get(kind, ())) for kind, lazy, group in _patterns())


def redact_text(text: str) -> str:
    """Every secret in `text` replaced by `[REDACTED:<kind>]`: one rule set everywhere (the
    database, the spool, logs, API requests, deliverables)."""
    if len(text) < 8:
        return text
    lower = text.lower()
    # Each distinct trigger is looked for once: the patterns name 103 triggers, 43 distinct
    # ("ghp_" serves two kinds), and each absent one is a scan of the whole text (a 1.7 KB
    # tool output: 190 -> 96 us, the largest part of a tool use's ingest). A trigger whose
    # guard (a shorter literal inside it) is absent is absent too, and not searched for.
    present = triggers_present(lower)
    for kind, lazy, group, triggers in _triggered_patterns():
        # A pattern without triggers always runs; the others when one of theirs occurs.
        if triggers and present.isdisjoint(triggers):
            continue
        text = _sub(lazy.get(), text, kind, group)
    if not present.isdisjoint(_ASSIGNMENT_TRIGGERS):
        text = _ASSIGNMENT_RE.sub(_redact_assignment, text)
    return text


# Literals no pattern names, searched for only as guards: each stands for several triggers
# that contain it (the GitHub token prefixes, Stripe's k_live_/k_test_, passw/passp/sshpass).
_GUARDS = ("gh", "k_", "pass")


def triggers_present(lower: str) -> set[str]:
    """The trigger literals (and guards) that occur in the lower-cased text."""
    present: set[str] = set()
    for literal, guard in _trigger_plan():
        if (not guard or guard in present) and literal in lower:
            present.add(literal)
    return present


@lru_cache(maxsize=1)
def _trigger_plan() -> tuple[tuple[str, str], ...]:
    """Every literal to search for once, as (literal, guard): shortest first, so a guard
    (the longest shorter literal it contains, or "") is decided before what it guards.
    Exact: a literal that contains an absent one cannot occur either."""
    literals = {t for *_, triggers in _triggered_patterns() for t in triggers}
    order = sorted(literals | set(_ASSIGNMENT_TRIGGERS) | set(_GUARDS), key=lambda t: (len(t), t))
    plan = []
    for literal in order:
        inside = [g for g in order if len(g) < len(literal) and g in literal]
        plan.append((literal, max(inside, key=len) if inside else ""))
    return tuple(plan)


def _sub(pattern: re.Pattern[str], text: str, kind: str, group: int) -> str:
    def replace(match: re.Match[str]) -> str:
        g = group
        if g < 0:
            g = 1 if match.lastindex and match.start(1) > match.start() else 0
        start, end = match.span(g)
        if start < 0:
            return match.group(0)
        if "[REDACTED:" in match.group(g):
            return match.group(0)
        whole_start = match.start()
        s = match.group(0)
        return s[: start - whole_start] + f"[REDACTED:{kind}]" + s[end - whole_start :]

    return pattern.sub(replace, text)


def cap_text(text: str, cap: int) -> str:
    """Head and tail of `text`, with a marker saying how much was cut."""
    if cap <= 0 or len(text) <= cap:
        return text
    head = cap * 2 // 3
    tail = cap - head
    return f"{text[:head]}\n…[cmem: {len(text) - cap:,} of {len(text):,} characters cut]…\n{text[-tail:]}"


_CUT_MARGIN = 1024
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _join_cut(head: str, tail: str, cap: int, already_cut: int) -> str:
    keep_head = cap * 2 // 3
    keep_tail = cap - keep_head
    total_cut = already_cut + max(0, len(head) - keep_head) + max(0, len(tail) - keep_tail)
    original = already_cut + len(head) + len(tail)
    return f"{head[:keep_head]}\n…[cmem: {total_cut:,} of {original:,} characters cut]…\n{tail[-keep_tail:]}"


def _clean_string(text: str) -> str:
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from "\ud800" escapes: not storable as UTF-8
        text = _SURROGATE_RE.sub("\ufffd", text)
    return text


class Sanitizer:
    """One pass of tag stripping, redaction and capping over a JSON value, recursively."""

    def __init__(
        self,
        *,
        redact: bool | None = None,
        cap: int | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        settings = settings if settings is not None else config.load()
        self.redact = config.redact_secrets(settings) if redact is None else redact
        self.cap = config.field_cap(settings) if cap is None else cap

    def text(self, text: str, *, cap: bool = True) -> str:
        text = strip_tags(_clean_string(text))
        if cap and self.cap > 0 and len(text) > self.cap + 2 * _CUT_MARGIN:
            # Redacting megabytes only to throw most away is slow: cut first, keeping a margin
            # on each side of the cut that the final cap removes, so a secret straddling the
            # first cut is redacted (or dropped) and never survives as a fragment.
            head = self.cap * 2 // 3 + _CUT_MARGIN
            tail = self.cap - self.cap * 2 // 3 + _CUT_MARGIN
            cut = len(text) - head - tail
            head_text, tail_text = text[:head], text[-tail:]
            if self.redact:
                head_text = redact_text(head_text)
                tail_text = redact_text(tail_text)
            return _join_cut(head_text, tail_text, self.cap, cut)
        if self.redact:
            text = redact_text(text)
        return cap_text(text, self.cap) if cap else text

    def value(self, value: Any, *, key: str = "") -> Any:
        if isinstance(value, str):
            if (
                self.redact
                and key
                and _SECRET_KEY_RE.search(key)
                and len(value) >= 4
                and not value.startswith("[REDACTED")
            ):
                return f"[REDACTED:{_slug(key)}]"
            return self.text(value)
        if isinstance(value, dict):
            return {_clean_string(str(k)): self.value(v, key=str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, key=key) for v in value]
        return value

    def field(self, value: Any) -> Any:
        """A whole tool input or output: each string capped, and the whole capped at 4× the
        field cap (a list of ten thousand short strings is as big as one long one)."""
        cleaned = self.value(value)
        if self.cap > 0:
            serialized = json.dumps(cleaned, ensure_ascii=False)
            if len(serialized) > 4 * self.cap:
                return cap_text(serialized, 4 * self.cap)
        return cleaned


def sanitize(value: Any) -> Any:
    return Sanitizer().value(value)
