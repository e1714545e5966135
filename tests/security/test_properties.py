"""Property tests (hypothesis): the hook payload parsers, the model-reply XML parser and the
redaction hold their contracts for any input, not only for the samples we thought of."""

from __future__ import annotations

import contextlib
import json
import string
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memory.agents import claude_code, codex
from memory.compression.parse import ParseError, parse_observations, parse_summary
from memory.compression.prompts import TYPES
from memory.hooks.dispatch import HookInputError, decode_body
from memory.privacy import redaction
from memory.privacy.spool_scrub import spool_scrub

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=25,
)
HOOK_KEYS = [
    "session_id", "cwd", "transcript_path", "hook_event_name", "prompt", "prompt_id", "source",
    "tool_name", "tool_input", "tool_response", "tool_use_id", "error", "is_interrupt",
    "stop_hook_active", "last_assistant_message", "agent_id", "agent_type", "cmem_file_facts",
    "cmem_project", "turn_id", "model", "duration_ms",
]  # fmt: skip
hook_payloads = st.dictionaries(
    st.sampled_from(HOOK_KEYS) | st.text(max_size=10), json_values, max_size=12
)


# -- hook payload parsers -----------------------------------------------------------------------


@FAST
@given(raw=st.binary(max_size=400))
def test_decode_body_returns_a_dict_or_refuses_cleanly(raw: bytes) -> None:
    try:
        data = decode_body(raw)
    except HookInputError:
        return
    assert isinstance(data, dict)
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # storable: no lone surrogates


@FAST
@given(data=hook_payloads, event=st.sampled_from(sorted(claude_code.EVENTS)))
def test_claude_code_parse_returns_an_event_or_refuses_cleanly(
    data: dict[str, Any], event: str
) -> None:
    try:
        parsed = claude_code.parse(event, data)
    except HookInputError:
        return
    assert parsed.session_id and isinstance(parsed.session_id, str)
    assert isinstance(parsed.tool_input, dict)
    assert isinstance(parsed.cwd, str) and isinstance(parsed.prompt, str)


@FAST
@given(data=hook_payloads, event=st.sampled_from(sorted(codex.EVENTS)))
def test_codex_parse_returns_an_event_or_refuses_cleanly(data: dict[str, Any], event: str) -> None:
    try:
        parsed = codex.parse(event, data)
    except HookInputError:
        return
    assert isinstance(parsed.session_id, str) and isinstance(parsed.tool_input, dict)


@FAST
@given(data=hook_payloads)
def test_the_spool_copy_is_always_json_and_keeps_identity_fields(data: dict[str, Any]) -> None:
    out = spool_scrub(json.dumps(data).encode())
    assert out is not None
    again = json.loads(out)
    assert set(again) == {str(k) for k in data}
    for key in ("session_id", "tool_use_id", "hook_event_name"):
        if isinstance(data.get(key), str) and len(data[key]) < 8:
            assert again[key] == data[key]


# -- the model-reply XML parser -------------------------------------------------------------------

xml_text = st.text(alphabet=string.printable + "äß€<>/&\"'", max_size=300)
tags = st.sampled_from(
    ["observation", "summary", "skip_summary", "type", "title", "facts", "fact", "narrative",
     "concepts", "concept", "files_read", "file", "request", "learned", "completed", "next_steps"]
)  # fmt: skip


@st.composite
def xmlish(draw: Any) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        tag = draw(tags)
        kind = draw(st.sampled_from(["open", "close", "text", "pair", "attr"]))
        if kind == "open":
            parts.append(f"<{tag}>")
        elif kind == "close":
            parts.append(f"</{tag}>")
        elif kind == "attr":
            parts.append(f'<{tag} uses="{draw(st.text(max_size=8))}">')
        elif kind == "pair":
            parts.append(f"<{tag}>{draw(xml_text)}</{tag}>")
        else:
            parts.append(draw(xml_text))
    return "".join(parts)


@FAST
@given(text=st.one_of(xml_text, xmlish()))
def test_parse_observations_returns_valid_rows_or_a_parse_error(text: str) -> None:
    try:
        rows = parse_observations(text)
    except ParseError:
        return
    for row in rows:
        assert row.type in TYPES
        assert row.title and len(row.title) <= 300
        assert all(isinstance(n, int) for n in row.uses)


@FAST
@given(text=st.one_of(xml_text, xmlish()))
def test_parse_summary_returns_a_summary_none_or_a_parse_error(text: str) -> None:
    try:
        summary = parse_summary(text)
    except ParseError:
        return
    if summary is not None:
        assert any(
            [
                summary.request,
                summary.investigated,
                summary.learned,
                summary.completed,
                summary.next_steps,
            ]
        )


@FAST
@given(
    title=st.text(
        alphabet=string.ascii_letters + string.digits + " <>&\"'", min_size=1, max_size=80
    ),
    facts=st.lists(
        st.text(alphabet=string.ascii_letters + " &<>", min_size=1, max_size=40), max_size=4
    ),
)
def test_escaped_fields_round_trip_through_the_parser(title: str, facts: list[str]) -> None:
    from html import escape

    assume(title.strip() and all(f.strip() for f in facts))
    reply = (
        f'<observation uses="1"><type>bugfix</type><title>{escape(title)}</title>'
        f"<facts>{''.join(f'<fact>{escape(f)}</fact>' for f in facts)}</facts></observation>"
    )
    [row] = parse_observations(reply)
    assert row.title == " ".join(title.split())[:300]
    assert row.facts == [" ".join(f.split()) for f in facts]


@pytest.mark.parametrize(
    "reply",
    [
        "<observation>" * 4000,
        "<observation><title>" + "<" * 20_000,
        "<summary>" + "<request>" * 3000,
        '<observation uses="' + "1," * 10_000,
    ],
)
def test_adversarial_replies_parse_in_bounded_time(reply: str) -> None:
    # A reply is bounded by max_tokens (a few thousand tokens); 20-40 kB of hostile markup must
    # not make the consumer spin (catastrophic backtracking would take minutes).
    started = time.perf_counter()
    for parse in (parse_observations, parse_summary):
        with contextlib.suppress(ParseError):
            parse(reply)
    assert time.perf_counter() - started < 5.0


# -- redaction -------------------------------------------------------------------------------------

_ALNUM = string.ascii_letters + string.digits


@st.composite
def secrets(draw: Any) -> str:
    kind = draw(
        st.sampled_from(
            ["anthropic", "openai", "aws", "github", "slack", "google", "pem", "password"]
        )
    )
    body = lambda n, alphabet=_ALNUM: draw(st.text(alphabet=alphabet, min_size=n, max_size=n))  # noqa: E731
    if kind == "anthropic":
        return "sk-ant-api03-" + body(40, _ALNUM + "-_")
    if kind == "openai":
        return "sk-proj-" + body(40)
    if kind == "aws":
        return "AKIA" + body(16, string.ascii_uppercase + string.digits)
    if kind == "github":
        return "ghp_" + body(36)
    if kind == "slack":
        return "xoxb-" + body(24, string.digits) + "-" + body(12)
    if kind == "google":
        return "AIza" + body(35)
    if kind == "pem":
        return "-----BEGIN RSA PRIVATE KEY-----\n" + body(64) + "\n-----END RSA PRIVATE KEY-----"
    return "password=" + body(12)


def _payload_part(secret: str) -> str:
    return secret.split("=", 1)[1] if secret.startswith("password=") else secret


surroundings = st.text(alphabet=string.ascii_letters + string.digits + " \n:=\"'{},.", max_size=200)


@FAST
@given(
    secret=secrets(),
    before=surroundings,
    after=surroundings,
    cap=st.sampled_from([0, 40, 200, 16000]),
)
def test_a_secret_never_survives_sanitizing_whatever_surrounds_it(
    secret: str, before: str, after: str, cap: int
) -> None:
    core = _payload_part(secret)
    fragment = core[-12:] if not secret.startswith("-----") else core.splitlines()[1][:24]
    assume(fragment not in before + after and core[:12] not in before + after)
    text = f"{before} {secret} {after}"
    out = redaction.Sanitizer(redact=True, cap=cap).text(text)
    assert core not in out
    if cap == 0:
        assert "[REDACTED:" in out
    # No long fragment of the secret either (a cap must never cut one in half and keep it).
    assert fragment not in out


@FAST
@given(
    secret=secrets(),
    key=st.sampled_from(["text", "stdout", "command", "content"]),
    depth=st.integers(0, 4),
)
def test_secrets_are_redacted_anywhere_in_a_json_value(secret: str, key: str, depth: int) -> None:
    value: Any = {key: f"use {secret} now"}
    for _ in range(depth):
        value = {"nested": [value, "x"]}
    out = json.dumps(redaction.Sanitizer(redact=True, cap=16000).field(value))
    assert _payload_part(secret) not in out
    scrubbed = spool_scrub(json.dumps({"session_id": "s", "tool_input": value}).encode())
    assert scrubbed is not None and _payload_part(secret).encode() not in scrubbed


@FAST
@given(
    before=st.text(alphabet=string.ascii_letters + " \n<>", max_size=60),
    hidden=st.text(alphabet=string.ascii_letters + string.digits, min_size=6, max_size=30),
    after=st.text(alphabet=string.ascii_letters + " \n<>", max_size=60),
    closed=st.booleans(),
)
def test_private_passages_never_survive(before: str, hidden: str, after: str, closed: bool) -> None:
    marker = f"PRIV{hidden}"
    assume(marker not in before + after)
    text = (
        f"{before}<private>{marker}</private>{after}"
        if closed
        else f"{before}<private>{marker}{after}"
    )
    assert marker not in redaction.Sanitizer(redact=True, cap=16000).text(text)
    scrubbed = spool_scrub(json.dumps({"session_id": "s", "prompt": text}).encode())
    assert scrubbed is not None and marker.encode() not in scrubbed
