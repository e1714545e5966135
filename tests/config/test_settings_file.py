"""One settings.json grammar: memory.config and the hook client read the same files alike.

Both go through memory.protocol.settings_file; these tests feed the same files (garbage, a FIFO and
a directory included) to both entry points and compare, and hold the json-free scan the
hook client's fast path relies on to what `json` reads.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import config
from memory.hookclient import client as hookclient
from memory.protocol import settings_file

TIMEOUT = "CLAUDE_MEM_HOOK_TIMEOUT_MS"

FILES: dict[str, bytes] = {
    "valid strings": json.dumps({TIMEOUT: "750", "CLAUDE_MEM_WORKER_URL": ""}, indent=2).encode(),
    "number values": json.dumps({TIMEOUT: 750, "CLAUDE_MEM_WORKER_PORT": 40001}).encode(),
    "number values, cmem's layout": json.dumps({TIMEOUT: 750, "X": -3, "Y": 0}, indent=2).encode(),
    "a float": b'{\n  "CLAUDE_MEM_HOOK_TIMEOUT_MS": 7.5e2\n}\n',
    "booleans": json.dumps({"CLAUDE_MEM_REDACT_SECRETS": False, "B": True}, indent=2).encode(),
    "a BOM": "\ufeff".encode() + json.dumps({TIMEOUT: "900"}, indent=2).encode(),
    "nested env": json.dumps({"env": {TIMEOUT: 650, "CLAUDE_MEM_API_TOKEN": "t"}}).encode(),
    "an escaped value": json.dumps({"CLAUDE_MEM_API_TOKEN": 'a"b\\c', TIMEOUT: "800"}).encode(),
    "non-ASCII": json.dumps({"CLAUDE_MEM_MODEL": "modèle"}, indent=2, ensure_ascii=False).encode(),
    "wrong value types": json.dumps({TIMEOUT: None, "A": [1], "B": {"c": 1}, "C": "ok"}).encode(),
    "not an object": b"[1, 2]",
    "garbage bytes": bytes(range(256)) * 4,
    "invalid UTF-8": b'{"CLAUDE_MEM_HOOK_TIMEOUT_MS": "\xff\xfe"}',
    "a trailing comma": b'{\n  "CLAUDE_MEM_HOOK_TIMEOUT_MS": "750",\n}\n',
    "a leading zero": b'{\n  "CLAUDE_MEM_HOOK_TIMEOUT_MS": 0750\n}\n',
    "empty": b"",
    "cmem's own defaults": (
        json.dumps({k: d for k, (d, _) in config.SETTINGS.items()}, indent=2) + "\n"
    ).encode(),
}


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A reader that blocks (a FIFO opened without O_NONBLOCK) fails the test instead."""

    def _raise(*_: object) -> None:
        raise TimeoutError("the settings reader blocked")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, 5)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def _both_readers() -> tuple[dict[str, str], dict[str, str]]:
    hookclient.forget_settings()
    try:
        return config.read_file(), hookclient.file_settings()
    finally:
        hookclient.forget_settings()


@pytest.mark.parametrize("name", sorted(FILES))
def test_config_and_the_hook_client_read_the_same_values(
    data_dir: Path, name: str, no_hang: None
) -> None:
    (data_dir / "settings.json").write_bytes(FILES[name])
    from_config, from_hook = _both_readers()
    assert from_config == from_hook
    expected, problems = settings_file.parse(FILES[name])
    assert from_config == expected
    assert bool(config.problems()) == bool(problems)


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_path_that_is_not_a_file_is_refused_without_blocking(
    data_dir: Path, kind: str, no_hang: None
) -> None:
    path = data_dir / "settings.json"
    if kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    assert _both_readers() == ({}, {})
    assert "cannot read (not a regular file)" in config.problems()[0]
    assert hookclient.timeout_s() == hookclient.DEFAULT_TIMEOUT_MS / 1000


def test_a_huge_file_is_refused_unread(data_dir: Path) -> None:
    path = data_dir / "settings.json"
    path.write_bytes(b"{" + b" " * settings_file.MAX_BYTES + b"}")
    assert _both_readers() == ({}, {})
    assert "larger than" in config.problems()[0]


@pytest.mark.parametrize(
    ("name", "seconds"),
    [
        ("number values", 0.75),
        ("number values, cmem's layout", 0.75),
        ("nested env", 0.65),
        ("a BOM", 0.9),
    ],
)
def test_the_hook_timeout_is_honoured_whatever_the_value_type(
    data_dir: Path, name: str, seconds: float
) -> None:
    (data_dir / "settings.json").write_bytes(FILES[name])
    hookclient.forget_settings()
    try:
        assert hookclient.timeout_s() == seconds
        assert config.get_int(TIMEOUT) == int(seconds * 1000)
    finally:
        hookclient.forget_settings()


def test_cmem_s_own_layout_is_scanned_without_json() -> None:
    """The fast path: the file cmem writes (ensure_settings_file, save) never needs `json`."""
    for name in ("valid strings", "number values, cmem's layout", "booleans", "a BOM"):
        assert settings_file.scan(FILES[name]) == settings_file.parse(FILES[name])[0], name
    defaults = settings_file.scan(FILES["cmem's own defaults"])
    assert defaults == {k: d for k, (d, _) in config.SETTINGS.items()}


# Values the scan must either read exactly as json does or decline.
_values = st.one_of(
    st.text(),
    st.text(alphabet='ab "\\\t\u00a0\u2028\x7f\x00é'),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
_files = st.builds(
    lambda data, indent, ascii_only, bom: (
        ("\ufeff" if bom else "") + json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    ).encode(),
    st.dictionaries(st.one_of(st.text(), st.sampled_from(["env", TIMEOUT])), _values, max_size=6),
    st.sampled_from([None, 0, 2, "\t", " \r"]),
    st.booleans(),
    st.booleans(),
)


def _assert_scan_agrees(raw: bytes) -> None:
    scanned = settings_file.scan(raw)
    if scanned is not None:
        assert (scanned, []) == settings_file.parse(raw)


@settings(max_examples=300, deadline=None)
@given(_files)
def test_the_scan_agrees_with_json_on_generated_files(raw: bytes) -> None:
    _assert_scan_agrees(raw)


@settings(max_examples=300, deadline=None)
@given(_files, st.integers(min_value=0), st.binary(min_size=1, max_size=4))
def test_the_scan_agrees_with_json_on_damaged_files(raw: bytes, at: int, junk: bytes) -> None:
    at %= len(raw) + 1
    _assert_scan_agrees(raw[:at] + junk + raw[at:])
    _assert_scan_agrees(raw[:at] + raw[at + len(junk) :])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_the_scan_agrees_with_json_on_arbitrary_bytes(raw: bytes) -> None:
    _assert_scan_agrees(b"{\n" + raw + b"\n}")


# cmem's line layout written by hand, tricky characters left raw: what `json` refuses (control
# characters, stray quotes, bad numbers) the scan must decline too.
_tricky = st.text(alphabet='aZ09 -.,:{}"\\\t\r\x00\x0b\x0c\x1f\x7f\u00a0\u2028\ufeffé', max_size=8)
_raw_files = st.builds(
    lambda entries, bom: (
        ("\ufeff" if bom else "")
        + "{\n"
        + ",\n".join(f'  "{k}":{sep}{v}' for k, sep, v in entries)
        + "\n}\n"
    ).encode(),
    st.lists(
        st.tuples(
            _tricky,
            st.sampled_from([" ", "", "\t", "  "]),
            st.one_of(_tricky.map(lambda t: f'"{t}"'), _tricky, st.sampled_from(["true", "-0"])),
        ),
        max_size=4,
    ),
    st.booleans(),
)


@settings(max_examples=500, deadline=None)
@given(_raw_files)
def test_the_scan_agrees_with_json_on_hand_written_lines(raw: bytes) -> None:
    _assert_scan_agrees(raw)
