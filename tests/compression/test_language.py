"""CLAUDE_MEM_LANGUAGE (and claude-mem's CLAUDE_MEM_MODE=code--<lang>): the model is asked to
write in the language, the offline compressor writes its own sentences in it (zh ships),
identifiers and paths stay verbatim. Golden texts for zh."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.compression.language import language
from memory.compression.prompts import SYSTEM_PROMPT, system_prompt
from memory.compression.tasks import session_events_process_task
from memory.models import Observation, Summary
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload, edit_payload, read_payload, write_payload
from tests.fakes.anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.django_db


def make_session(
    root: Path, *, prompt: str = "Make the gate rank rows by specificity", project: str = "demo"
):
    return SessionFactory(root=root, project=project, prompt=prompt)


ZH_OBS = (
    '<observation uses="1"><type>change</type><title>gate_rows() 按精确路径优先排序</title>'
    "<subtitle>修改了 memory/gate.py 的排序</subtitle><facts><fact>memory/gate.py 中 gate_rows() "
    ' 现在使用 order_by("-exact", "-created")</fact></facts><narrative>排序更精确。</narrative>'
    "<concepts><concept>what-changed</concept></concepts></observation>"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "gate.py").write_text(
        'def gate_rows():\n    return rows.order_by("-created")\n'
    )
    return root


def test_language_setting_and_claude_mem_mode_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    assert language() == "en"
    monkeypatch.setenv("CLAUDE_MEM_MODE", "code--zh")
    assert language() == "zh"
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "ja")  # the explicit key wins
    assert language() == "ja"


def test_english_prompt_is_byte_identical() -> None:
    assert system_prompt() == SYSTEM_PROMPT


def test_zh_model_prompt_golden_and_answer_stored(
    monkeypatch: pytest.MonkeyPatch, project: Path
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "zh")
    prompt = system_prompt()
    assert "- Write in Simplified Chinese (简体中文), in the past tense" in prompt
    assert prompt.endswith(
        "\n# Language\n\nWrite every title, subtitle, fact, narrative and summary field in "
        "Simplified Chinese (简体中文). Keep code identifiers, file paths, commands, settings names, "
        "error messages quoted from the output, and the XML tags, type ids, certainty ids and "
        "concept ids exactly as they are, untranslated.\n"
    )
    assert system_prompt() == prompt  # the cached prefix stays identical between requests
    with FakeAnthropic() as fake:
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-zh-test-abcdefgh")
        fake.script(Reply(text=ZH_OBS))
        session = make_session(project)
        add_event(
            session,
            edit_payload(
                project / "memory" / "gate.py", project, '"-created"', '"-exact", "-created"'
            ),
        )
        session_events_process_task(session.pk)
        assert fake.requests[0].body["system"][0]["text"] == prompt
    obs = Observation.objects.get()
    assert obs.title == "gate_rows() 按精确路径优先排序"
    assert obs.files_modified == ["memory/gate.py"]


def test_zh_offline_golden(monkeypatch: pytest.MonkeyPatch, project: Path, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "zh")
    session = make_session(
        project,
        prompt="给 gate 加排序，并在 inventory.py 里记一个 TODO，然后跑测试确认一切正常，最后把结果写进报告里面",
    )
    add_event(session, read_payload(project / "memory" / "gate.py", project))
    add_event(
        session,
        edit_payload(project / "memory" / "gate.py", project, '"-created"', '"-exact", "-created"'),
    )
    add_event(session, bash_payload('printf "# TODO\\n" >> inventory.py', project))
    add_event(session, bash_payload("pytest -q", project, stdout="3 passed in 0.1s"))
    add_event(
        session, {"hook_event_name": "Stop", "last_assistant_message": "好了"}, kind="summary"
    )
    session_events_process_task(session.pk)
    titles = list(Observation.objects.order_by("pk").values_list("title", flat=True))
    assert titles == [
        "阅读了 memory/gate.py: gate_rows",
        '编辑了 memory/gate.py："-exact", "-created"',
        "向 inventory.py 追加了内容",
        "测试通过（pytest）: 3 passed in 0.1s",
    ]
    summary = Summary.objects.get()
    assert summary.completed == (
        '编辑了 memory/gate.py："-exact", "-created"; 向 inventory.py 追加了内容; '
        "修改了 memory/gate.py, inventory.py"
    )
    assert (
        summary.investigated
        == "阅读了 memory/gate.py: gate_rows; 测试通过（pytest）: 3 passed in 0.1s; 阅读了 memory/gate.py"
    )
    assert summary.notes == "助手的最后一条消息：好了"


def test_offline_falls_back_to_english_for_unshipped_languages(
    monkeypatch: pytest.MonkeyPatch, project: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "de")
    session = make_session(project)
    add_event(session, bash_payload('printf "x\\n" >> inventory.py', project))
    session_events_process_task(session.pk)
    assert Observation.objects.get().title == "Appended to inventory.py"


def test_zh_offline_edit_gists_golden(
    monkeypatch: pytest.MonkeyPatch, project: Path, tmp_path: Path
) -> None:
    """Edit/Write/MultiEdit and Bash edits: the offline gists in zh, identifiers and paths
    verbatim."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "zh")
    gate = project / "memory" / "gate.py"
    session = make_session(project, prompt="整理 gate")
    add_event(session, edit_payload(gate, project, "def gate_rows", "def rank_rows"))
    add_event(
        session,
        edit_payload(
            gate, project, '"-created")\n', '"-created")\n\n\ndef gate_menu():\n    pass\n'
        ),
    )
    add_event(session, edit_payload(gate, project, "    pass\n", "    return MENU\n"))
    add_event(session, edit_payload(gate, project, '    return rows.order_by("-created")\n', ""))
    add_event(session, write_payload(project / "memory" / "menu.py", project, "MENU = []\n"))
    add_event(
        session,
        write_payload(project / "memory" / "rank.py", project, "def score(row):\n    return 1\n"),
    )
    multi = edit_payload(gate, project, "MENU", "GATE_MENU")
    multi["tool_name"] = "MultiEdit"
    multi["tool_input"] = {
        "file_path": str(gate),
        "edits": [{"old_string": "MENU", "new_string": "GATE_MENU"}],
    }
    add_event(session, multi)
    add_event(session, bash_payload("sed -i 's/GATE_MENU/MENU/' memory/gate.py", project))
    add_event(session, bash_payload("mv memory/menu.py memory/menus.py", project))
    add_event(session, bash_payload("black memory/rank.py", project, stdout="1 file reformatted"))
    add_event(
        session, {"hook_event_name": "Stop", "last_assistant_message": "好了"}, kind="summary"
    )
    session_events_process_task(session.pk)
    rows = list(Observation.objects.order_by("pk").values_list("title", "narrative"))
    assert [title for title, _ in rows] == [
        "编辑了 memory/gate.py：将 gate_rows() 重命名为 rank_rows()",
        "编辑了 memory/gate.py：新增了 gate_menu()",
        "编辑了 memory/gate.py：return MENU",
        '编辑了 memory/gate.py：删除了 `return rows.order_by("-created")`',
        "新建了 memory/menu.py: MENU = []",
        "新建了 memory/rank.py: 定义了 score()",
        "编辑了 memory/gate.py：GATE_MENU",
        "用 sed 编辑了 memory/gate.py",
        "将 memory/menu.py 移动到 memory/menus.py",
        "用 black 格式化了 memory/rank.py",
    ]
    assert rows[0][1] == "编辑了 memory/gate.py：将 gate_rows() 重命名为 rank_rows()。"
    assert rows[4][1] == "新建了 memory/menu.py（1 行）。"
    summary = Summary.objects.get()
    assert summary.completed.endswith(
        "修改了 memory/gate.py, memory/menu.py, memory/rank.py, memory/menus.py"
    )
