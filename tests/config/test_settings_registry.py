"""One settings registry (memory/config/registry.py): every setting and internal switch has one
record, and config, the settings page, `cmem settings_table`, the reference page and the hook
client's own defaults all agree with it."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from django.core.management import call_command

from memory import config
from memory.config import reference, registry
from memory.hookclient import client as hookclient
from memory.hookclient import entry as hook_entry
from memory.hookclient import remote as hookclient_remote
from memory.hookclient import slow_path as hookclient_slow_path
from tests.support import REPO
from tests.support.settings_reference import PAGE, README, basic_table, readme_with_table, render

CODE = ("memory", "cmem_site", "deliverables")
# Dev-only and on its way to tests/bench/: its switches are the benchmarks' own.
NOT_THE_APP = ("tests/bench/",)


def _sources() -> dict[str, str]:
    found = {}
    for package in CODE:
        for path in sorted((REPO / package).rglob("*")):
            rel = path.relative_to(REPO).as_posix()
            if path.suffix not in {".py", ".js"} or rel.startswith(NOT_THE_APP):
                continue
            found[rel] = path.read_text()
    return found


# --- the generated page -------------------------------------------------------------------


def test_the_reference_page_is_current() -> None:
    assert PAGE.read_text() == render(), "docs/reference/settings.md is stale: run `make reference`"


def test_the_readme_table_is_the_registry_s_basic_settings() -> None:
    readme = README.read_text()
    assert readme_with_table(readme) == readme, "README's settings table is stale: `make reference`"
    table = basic_table()
    basic = [r for r in registry.REGISTRY if r.basic]
    assert len(basic) == 10 and all(f"| `{r.key}` |" in table for r in basic)
    assert table in readme


def test_the_readme_generator_rewrites_a_stale_table(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    stale = README.read_text().replace("`CLAUDE_MEM_READ_GATE`", "`CLAUDE_MEM_OLD_NAME`")
    readme.write_text(stale)
    assert "rewritten" in _generate("--readme", str(readme))
    assert readme.read_text() == README.read_text()


def test_the_page_names_every_setting_and_switch() -> None:
    page = render()
    for record in (*registry.REGISTRY, *registry.INTERNAL_SWITCHES):
        assert f"`{record.key}`" in page, record.key
    assert "## Internal switches" in page
    internal = page.split("## Internal switches", 1)[1]
    assert all(f"`{r.key}`" in internal for r in registry.INTERNAL_SWITCHES)
    assert not [r.key for r in registry.REGISTRY if f"| `{r.key}` |" in internal]


def test_a_new_setting_makes_the_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    before = render()
    extra = registry.Setting(
        "CLAUDE_MEM_BRAND_NEW", "", "str", "Brand new", registry.OTHER, "Brand new."
    )
    monkeypatch.setattr(reference, "REGISTRY", (*registry.REGISTRY, extra))
    after = render()
    assert after != before and "`CLAUDE_MEM_BRAND_NEW`" in after
    assert "CLAUDE_MEM_BRAND_NEW" not in PAGE.read_text()


def _generate(*args: str) -> str:
    """Run the generator as `make reference` does; its stdout."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.settings_reference", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_generator_writes_the_page(tmp_path: Path) -> None:
    page = tmp_path / "settings.md"
    page.write_text("placeholder\n")
    assert "rewritten" in _generate("--write", str(page))
    assert page.read_text() == PAGE.read_text()


def test_the_cli_table_is_the_registry_s() -> None:
    out = io.StringIO()
    call_command("settings_table", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines == reference.settings_table()
    assert lines[:2] == ["| key | default | meaning |", "|---|---|---|"]
    assert len(lines) == 2 + len(config.SETTINGS)
    assert "| `CLAUDE_MEM_WORKER_PORT` | `37700 + uid % 100` |" in "\n".join(lines)


# --- the records --------------------------------------------------------------------------


def test_every_record_is_whole() -> None:
    keys = [r.key for r in (*registry.REGISTRY, *registry.INTERNAL_SWITCHES)]
    assert len(keys) == len(set(keys))
    assert list(config.SETTINGS) == [r.key for r in registry.REGISTRY]
    for record in registry.REGISTRY:
        assert not record.internal and record.key.startswith("CLAUDE_MEM_"), record.key
        assert record.label and record.help.strip(), record.key
        assert record.section in registry.SECTION_ORDER, record.key
        if record.kind == "int":
            low, high = record.bounds or (0, None)
            assert low <= int(record.default) and (high is None or int(record.default) <= high)
        else:
            assert record.bounds is None, record.key
        if record.kind == "bool":
            assert record.default in {"true", "false"}, record.key
        if record.kind == "choice":
            assert record.default in record.choices, record.key
        else:
            assert not record.choices, record.key
    for record in registry.INTERNAL_SWITCHES:
        assert record.internal and record.section == registry.INTERNAL, record.key
        assert record.key not in config.SETTINGS and record.help.strip(), record.key
    assert sum(r.basic for r in registry.REGISTRY) == 10  # the settings people change


def test_internal_switches_have_no_defaults_among_the_settings(data_dir: Path) -> None:
    values = config.load()
    assert not [r.key for r in registry.INTERNAL_SWITCHES if r.key in values]


def test_every_internal_switch_the_code_reads_is_listed() -> None:
    """Every CMEM_* name in the app's code is a listed switch, and every listed one is used."""
    pattern = re.compile(r"(?<![A-Z_])CMEM_[A-Z0-9_]*[A-Z0-9](?!_)")
    named = {m for text in _sources().values() for m in pattern.findall(text)}
    listed = {r.key for r in registry.INTERNAL_SWITCHES if r.key.startswith("CMEM_")}
    assert named - listed == set(), "list these in memory/config/switches.py INTERNAL_SWITCHES"
    assert listed - named == set(), "these switches are no longer read"


def test_the_code_s_inline_switch_defaults_are_the_registry_s() -> None:
    """`os.environ.get("CMEM_X", "d")` (or `envint("CMEM_X", "d")`): d is the listed default."""
    checked, wrong = [], []
    for rel, text in _sources().items():
        if not rel.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(text)):
            if not (isinstance(node, ast.Call) and len(node.args) == 2):
                continue
            first, second = node.args
            if not (
                isinstance(first, ast.Constant)
                and isinstance(second, ast.Constant)
                and str(first.value).startswith("CMEM_")
            ):
                continue
            key, default = str(first.value), str(second.value)
            checked.append(key)
            if default != registry.setting(key).default:
                wrong.append(f"{rel}:{node.lineno} {key} defaults to {default!r}")
    assert wrong == []
    assert {"CMEM_WORKER_CONSUMER", "CMEM_SERVER", "CMEM_HUEY_NAME"} <= set(checked)


def test_every_claude_mem_name_in_the_code_is_registered() -> None:
    """A CLAUDE_MEM_* name is a setting, an internal switch, or a prefix that builds one."""
    pattern = re.compile(r"\bCLAUDE_MEM_[A-Z0-9_]*[A-Z0-9]\b")
    named = {m for text in _sources().values() for m in pattern.findall(text)}
    unknown = {
        name
        for name in named
        if name not in registry.BY_KEY
        and not any(k.startswith(name + "_") for k in registry.BY_KEY)
    }
    assert unknown == set()


_READERS = {"get": None, "get_int": "int", "get_bool": "bool", "get_list": "list"}


def test_string_key_reads_name_registered_settings_of_their_kind() -> None:
    """`config.get_int("CLAUDE_MEM_X")` and the like: X is a setting, read as its kind."""
    wrong = []
    for rel, text in _sources().items():
        if not rel.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(text)):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "config"
                and node.func.attr in _READERS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).startswith("CLAUDE_MEM_")
            ):
                continue
            key, kind = str(node.args[0].value), _READERS[node.func.attr]
            record = config.registry.BY_KEY.get(key)
            if record is None or record.internal or kind not in {None, record.kind}:
                wrong.append(f"{rel}:{node.lineno} config.{node.func.attr}({key!r})")
    assert wrong == []


def test_typed_readers_check_their_key_and_kind() -> None:
    from memory.config import typed

    with pytest.raises(KeyError):
        typed._int("CLAUDE_MEM_NO_SUCH_SETTING")
    with pytest.raises(TypeError):
        typed._int("CLAUDE_MEM_REDACT_SECRETS")
    with pytest.raises(TypeError):
        typed._word("CMEM_SERVER")  # an internal switch is no setting


def test_typed_readers_answer_as_the_string_readers(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_READ_GATE", " Deny ")
    monkeypatch.setenv("CLAUDE_MEM_READ_GATE_LIMIT", "0")
    monkeypatch.setenv("CLAUDE_MEM_SKIP_TOOLS", "A, B")
    settings = config.load()
    assert config.read_gate() == config.read_gate(settings) == "deny"
    assert config.read_gate_limit(settings) == config.get_int("CLAUDE_MEM_READ_GATE_LIMIT") == 1
    assert config.skip_tools(settings) == ["A", "B"]
    assert config.redact_secrets(settings) is True
    assert config.worker_host(settings) == "127.0.0.1"


# --- the hook client reads settings without the registry: its defaults must be the same ---


def _setting_calls(module: ModuleType) -> list[tuple[str, str]]:
    """(key, default) of every `setting("CLAUDE_MEM_X", default)` call in `module`."""
    found = []
    for node in ast.walk(ast.parse(Path(str(module.__file__)).read_text())):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setting"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
        ):
            continue
        default = node.args[1]
        if isinstance(default, ast.Constant):
            value = str(default.value)
        elif (
            isinstance(default, ast.Call)
            and isinstance(default.func, ast.Name)
            and default.func.id == "str"
            and isinstance(default.args[0], ast.Name)
        ):
            value = str(getattr(module, default.args[0].id))
        else:
            raise AssertionError(f"{module.__name__}: cannot read the default of {ast.dump(node)}")
        found.append((str(node.args[0].value), value))
    return found


def test_the_hook_client_defaults_are_the_registry_s(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = (hookclient, hookclient_remote, hook_entry, hookclient_slow_path)
    calls = [c for m in modules for c in _setting_calls(m)]
    assert len(calls) >= 3
    for key, default in calls:
        assert default == registry.setting(key).default, key
    timeout = registry.setting("CLAUDE_MEM_HOOK_TIMEOUT_MS")
    assert int(timeout.default) == hookclient.DEFAULT_TIMEOUT_MS
    assert int(registry.setting("CMEM_MAX_REQUEST_BYTES").default) == hookclient.MAX_REQUEST_BYTES
    monkeypatch.delenv("CMEM_MAX_REQUEST_BYTES", raising=False)
    assert hookclient.max_request_bytes() == int(registry.setting("CMEM_MAX_REQUEST_BYTES").default)
    # The hook client's floor on its timeout is the registry's lower bound.
    assert timeout.bounds is not None
    monkeypatch.setenv("CLAUDE_MEM_HOOK_TIMEOUT_MS", "1")
    hookclient.forget_settings()
    try:
        assert hookclient.timeout_s() == timeout.bounds[0] / 1000
    finally:
        hookclient.forget_settings()
    monkeypatch.delenv("CLAUDE_MEM_DATA_DIR")
    monkeypatch.setenv("HOME", "/home/someone")
    assert hookclient.data_dir() == "/home/someone/" + registry.setting(
        "CLAUDE_MEM_DATA_DIR"
    ).default.removeprefix("~/")


def test_the_worker_s_internal_defaults_are_the_registry_s() -> None:
    from memory.worker import server, supervisor

    assert str(server.SERVER_THREADS) == registry.setting("CMEM_SERVER_THREADS").default
    assert str(supervisor.LIVENESS_EVERY_S) == registry.setting("CMEM_LIVENESS_EVERY_S").default
