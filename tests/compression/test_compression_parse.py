"""The model's XML, parsed by claude-mem's rules (upstream notes §5.4)."""

from __future__ import annotations

import pytest

from memory.compression.parse import ParseError, parse_observations, parse_summary
from memory.compression.prompts import Caps, render_batch
from memory.compression.tooluse import ToolUse, elide, sanitize


def test_empty_reply_is_nothing_worth_keeping() -> None:
    assert parse_observations("") == []
    assert parse_observations("  \n ") == []
    assert parse_observations("```\n```") == []


def test_fenced_observations_with_uses_and_cleanup() -> None:
    text = """```xml
<observation uses="1 3">
  <type>Bugfix</type>
  <title> Fix  the &amp; gate </title>
  <facts><fact>one</fact><fact>   </fact><fact>two</fact></facts>
  <concepts><concept>problem-solution: why</concept><concept>bugfix</concept><concept>vibes</concept><concept>gotcha</concept></concepts>
  <files_read><file>a.py</file></files_read>
</observation>
<observation uses="2"><type>astrology</type><title>Second</title></observation>
```"""
    first, second = parse_observations(text)
    assert first.type == "bugfix" and first.title == "Fix the & gate"
    assert first.facts == ["one", "two"]
    assert first.concepts == ["problem-solution", "gotcha"]
    assert first.uses == [1, 3] and first.files_read == ["a.py"] and first.files_modified == []
    assert second.type == "discovery"  # unknown types fall back to the legend


def test_observation_without_content_is_dropped() -> None:
    assert parse_observations("<observation><type>change</type></observation>") == []


@pytest.mark.parametrize(
    "text",
    [
        "The agent edited the gate. Nothing else.",
        "Here you go:\n<observation><title>x</title></observation>",
        "<observation><title>x</title></observation> and some commentary",
        "<observation><title>x</title>",
        "<summary><request>x</request></summary>",
    ],
)
def test_prose_and_malformed_replies_are_invalid(text: str) -> None:
    with pytest.raises(ParseError):
        parse_observations(text)


def test_summary_rules() -> None:
    summary = parse_summary(
        "<summary><request>Rank rows</request><completed>done</completed><notes></notes></summary>"
    )
    assert summary is not None and summary.request == "Rank rows" and summary.completed == "done"
    assert parse_summary('<skip_summary reason="nothing happened"/>') is None
    with pytest.raises(ParseError):
        parse_summary("<summary><notes>only notes</notes></summary>")
    with pytest.raises(ParseError):
        parse_summary("All done!")
    with pytest.raises(ParseError):
        parse_summary("")


def test_elide_keeps_head_and_tail_with_marker() -> None:
    text = "".join(f"{i:04d}\n" for i in range(2000))
    out = elide(text, 1000)
    assert out.startswith("0000\n") and out.endswith("1999\n")
    assert 'original_size_chars="10000"' in out
    assert len(out) < 1100
    assert elide("short", 1000) == "short"


def test_sanitize_drops_private_blocks_and_secrets() -> None:
    text = "keep <private>drop me</private> sk-ant-api03-abcdefghijklmnopqrstuv and API_TOKEN=abcdef123456 <private>unclosed tail"
    out = sanitize(text)
    assert "drop me" not in out and "unclosed tail" not in out
    assert "sk-ant-api03-abcdefghijklmnopqrstuv" not in out and "abcdef123456" not in out
    assert out.startswith("keep")


class _Event:
    def __init__(self, pk: int, payload: dict, prompt_number: int = 1) -> None:
        self.pk, self.payload, self.prompt_number, self.tool_name, self.created = (
            pk,
            payload,
            prompt_number,
            payload["tool_name"],
            None,
        )


def test_multiedit_is_sent_as_one_diff_per_edit_and_prompts_once() -> None:
    payload = {
        "tool_name": "MultiEdit",
        "cwd": "/p",
        "tool_input": {
            "file_path": "/p/a.py",
            "edits": [
                {"old_string": "x = 1", "new_string": "x = 2"},
                {"old_string": "y = 1", "new_string": "y = 3"},
            ],
        },
        "tool_response": {"originalFile": "HUGE ORIGINAL " * 1000},
    }
    uses = [
        ToolUse.from_event(_Event(1, payload), n=1, root="/p"),
        ToolUse.from_event(_Event(2, payload), n=2, root="/p"),
    ]
    message = render_batch(
        project="p", uses=uses, prompts={1: "change x and y"}, caps=Caps(field=16000, excerpt=2000)
    )
    assert message.count("change x and y") == 1
    assert message.count("-x = 1\n+x = 2") == 2 and message.count("-y = 1\n+y = 3") == 2
    assert "HUGE ORIGINAL" not in message
    assert uses[0].modified_paths == ["a.py"]
