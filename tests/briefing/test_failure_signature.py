"""Failure signatures: which line names the error, what normalising strips, when a recorded
note holds the same error (memory/briefing/failure_signature.py). Pure functions, no database."""

from __future__ import annotations

import json
import time

import pytest

from memory.briefing.failure_signature import (
    HEAD_CHARS,
    TAIL_CHARS,
    bounded,
    error_line,
    exit_code,
    failure_text,
    matches,
    normalise,
    program_of,
    signature,
)
from tests.support.paths import CLAUDE_FIXTURES, FIXTURES

PYTEST_OUT = """Exit code 1
============================= FAILURES =============================
____________________________ test_total ____________________________

    def test_total():
>       assert total([1, 2]) == 4
E       assert 3 == 4
E        +  where 3 = total([1, 2])

/home/ana/shop/tests/test_cart.py:12: AssertionError
===================== short test summary info ======================
FAILED tests/test_cart.py::test_total - assert 3 == 4
1 failed in 0.05s"""


def test_the_real_bash_failure_payload_gives_the_exception_line() -> None:
    payload = json.loads((CLAUDE_FIXTURES / "PostToolUseFailure.bash.json").read_text())
    found = signature(payload["error"], tool_input=payload["tool_input"])
    assert found is not None
    assert found.line == "ModuleNotFoundError: No module named 'nosuchmod_xyz'"
    assert found.quoted == ("nosuchmod_xyz",)
    assert "modulenotfounderror" in found.terms and "nosuchmod_xyz" in found.terms
    assert found.program == "python3"


def test_two_runs_of_one_failure_have_one_key_whatever_differs_between_them() -> None:
    first = (
        "2026-11-30T10:55:48Z worker 4312: Traceback (most recent call last):\n"
        '  File "/tmp/pytest-of-ana/pytest-12/test_a0/app/db.py", line 88, in connect\n'
        "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432) at 0x7f3a2b1c "
        "request 3f2a9c1e-1111-2222-3333-444455556666"
    )
    second = (
        "2026-12-01T08:01:02Z worker 977: Traceback (most recent call last):\n"
        '  File "/home/bo/src/app/db.py", line 91, in connect\n'
        "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432) at 0x55aa01 "
        "request 0b1e2d3c-9999-8888-7777-666655554444"
    )
    a, b = signature(first), signature(second)
    assert a is not None and b is not None
    assert a.key == b.key and a.line == b.line
    assert "0x?" in a.line and "3f2a9c1e" not in a.line


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/home/ana/shop/src/cart.py:12:5: E501 line too long", "cart.py: E501 line too long"),
        ("src/app/models.py line 42: bad field", "models.py line: bad field"),
        ("\x1b[31merror\x1b[0m: could not compile `shop`", "error: could not compile `shop`"),
        ("took 12.53s; 123456 rows", "took N; N rows"),
        ("commit 9fceb02d0ae598e95dc970b74767f19372d61af8 missing", "commit missing"),
    ],
)
def test_normalise_strips_folders_numbers_colours_and_ids(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


def test_a_failed_test_summary_names_the_test_and_why() -> None:
    found = signature(PYTEST_OUT, tool_input={"command": "cd shop && DEBUG=1 pytest -q"})
    assert found is not None
    assert found.line == "FAILED test_cart.py::test_total - assert 3 == 4"
    assert found.file == "test_cart.py" and found.program == "pytest"


def test_a_compilers_first_error_is_the_cause() -> None:
    out = "Exit code 1\nsrc/a.c:3:1: error: unknown type name 'uint'\nsrc/a.c:9:2: error: expected ';'"
    assert error_line(out, known_failure=True) == "src/a.c:3:1: error: unknown type name 'uint'"


def test_too_little_to_recognise_is_no_signature() -> None:
    assert signature("Exit code 137\nKilled") is None
    assert signature("Exit code 1\n") is None
    assert signature("") is None


def test_output_the_agent_did_not_call_a_failure_must_say_so_itself() -> None:
    # Codex: every command ends in PostToolUse, the output only.
    assert signature("2 warnings, error count: 0\nall good", known_failure=False) is None
    assert (
        signature("Exit code: 0\nWall time: 0 seconds\nOutput:\nno errors", known_failure=False)
        is None
    )
    raised = "Traceback (most recent call last):\nKeyError: 'price'"
    assert signature(raised, known_failure=False) is not None
    coded = "Exit code: 2\nWall time: 0 seconds\nOutput:\nmake: *** No rule to make target 'dist'"
    found = signature(coded, known_failure=False)
    assert found is not None and "No rule to make target" in found.line
    assert exit_code(coded) == 2


def test_a_recorded_note_matches_when_it_holds_the_quoted_name_and_most_words() -> None:
    found = signature("ModuleNotFoundError: No module named 'stripe_sdk'")
    assert found is not None
    fix = "Fixed ModuleNotFoundError: no module named stripe_sdk; installed it in the venv"
    assert matches(found, fix) == 1.0
    # The right words around another module is another error.
    assert matches(found, "ModuleNotFoundError: No module named 'requests' fixed") == 0.0
    # The module alone, without the error, is not the error either.
    assert matches(found, "stripe_sdk wraps the payments API") == 0.0


def test_the_program_past_cd_env_and_wrappers() -> None:
    assert program_of({"command": "cd /x && FOO=1 uv run pytest -q"}) == "run"
    assert program_of({"command": "cd /x && FOO=1 pytest -q"}) == "pytest"
    assert program_of({"command": "/usr/bin/python3 -m build"}) == "python3"
    assert program_of({"file_path": "/a"}) == ""


def test_failure_text_reads_each_agents_shape() -> None:
    assert failure_text(error="boom", tool_response=None) == "boom"
    assert failure_text(error="", tool_response="out") == "out"
    assert failure_text(error="", tool_response={"stdout": "o", "stderr": "e"}) == "e\no"
    codex = json.loads((FIXTURES / "codex-0.171.0" / "PostToolUse.failed_command.json").read_text())
    text = failure_text(error="", tool_response=codex["tool_response"])
    assert "No such file or directory" in text


def test_a_huge_output_is_read_only_at_its_ends_in_linear_time() -> None:
    noise = "x" * 5_000_000 + "\n" + "a/" * 200_000 + "\n" + "'" * 100_000
    out = noise + "\nTypeError: unsupported operand type(s) for +: 'int' and 'str'"
    assert len(bounded(out)) <= HEAD_CHARS + TAIL_CHARS + 1
    started = time.perf_counter()
    found = signature(out)
    assert time.perf_counter() - started < 0.5
    assert found is not None and found.line.startswith("TypeError: unsupported operand")
    # Adversarial lines for each pattern, as long as the bounded window allows.
    for hostile in ("/" * TAIL_CHARS, "0x" * 3000, "E " * 3000, "1:" * 3000, "'a" * 3000):
        started = time.perf_counter()
        signature(hostile + "\nValueError: bad")
        assert time.perf_counter() - started < 0.5, hostile[:10]
