"""The Markdown form of the memory (issue 34): export, import into an empty memory and
export again gives the same bytes; merges by global id (new, unchanged, later wins, earlier
kept in history, hand edits as a person's correction, tombstones); bad files are refused
whole, naming the file, with nothing written."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from deliverables.models import Deliverable
from memory import projects
from memory.curation.corrections import observation_edit, observation_mark
from memory.housekeeping.forget import ForgetRequest, observations_forget
from memory.importers.demo import demo_load
from memory.importers.json_io import memory_export, memory_import
from memory.importers.report import ImportReport
from memory.models import (
    ExcludedProject,
    Observation,
    ObservationFile,
    ObservationRevision,
    Prompt,
    Session,
    Summary,
    Tombstone,
)
from memory.team.scope import viewer_scope
from memory.travel import bodies
from memory.travel.frontmatter import MarkdownImportError, time_text
from memory.travel.markdown import Document, documents, export_markdown, write_tree
from memory.travel.merge import import_files, import_markdown
from tests.support import CMEM, free_port, make_worker_env

pytestmark = pytest.mark.django_db


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _empty_memory() -> None:
    Session.objects.all().delete()
    Tombstone.objects.all().delete()


def _counts() -> tuple[int, ...]:
    return tuple(
        m.objects.count()
        for m in (
            Session,
            Prompt,
            Observation,
            ObservationFile,
            Summary,
            ObservationRevision,
            Tombstone,
        )
    )


def _file_of(root: Path, row: Observation) -> Path:
    (path,) = root.rglob(f"*-{row.gid}.md")
    return path


def test_demo_round_trip_gives_identical_bytes(tmp_path: Path, data_dir: Path) -> None:
    demo_load()
    first, second = tmp_path / "one", tmp_path / "two"
    assert export_markdown(first) > 10
    before = _counts()
    _empty_memory()
    report = import_markdown(first)
    assert report.created > 0 and report.conflicts == 0, report.describe()
    assert _counts() == before
    export_markdown(second)
    a, b = _tree(first), _tree(second)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    # Idempotent: the same tree again changes nothing.
    again = import_markdown(second)
    assert again.created == again.updated == again.corrected == again.conflicts == 0
    assert again.unchanged > 0 and _counts() == before
    # Export writes nothing when nothing changed.
    assert export_markdown(second) == 0


def _one_row(project: str = "shop") -> Observation:
    session = Session.objects.create(session_id="s1", project=project, cwd="/tmp/shop")
    Prompt.objects.create(session=session, number=1, text="fix the total")
    row = Observation.objects.create(
        session=session,
        project=project,
        title="Total is computed in total.py",
        narrative="The total adds tax after the discount.",
        facts=["tax after discount"],
    )
    ObservationFile.objects.create(observation=row, project=project, path="total.py", role="read")
    return row


def test_hand_edit_becomes_a_persons_correction_with_history(tmp_path: Path) -> None:
    row = _one_row()
    export_markdown(tmp_path)
    path = _file_of(tmp_path, row)
    text = path.read_text()
    path.write_text(
        text.replace(
            "The total adds tax after the discount.", "Tax comes first, then the discount."
        )
    )
    report = import_markdown(tmp_path)
    assert report.corrected == 1, report.describe()
    row.refresh_from_db()
    assert row.narrative == "Tax comes first, then the discount."
    assert row.person_edited and row.edited is not None
    (revision,) = ObservationRevision.objects.filter(observation=row)
    assert (revision.action, revision.actor) == ("edit", "user")
    assert revision.before["narrative"] == "The total adds tax after the discount."
    # Importing the same file again is no change: the row holds that text now.
    assert import_markdown(tmp_path).corrected == 0
    assert ObservationRevision.objects.filter(observation=row).count() == 1


def test_the_later_edit_wins_and_the_earlier_stays_in_history(tmp_path: Path) -> None:
    row = _one_row()
    Observation.objects.filter(pk=row.pk).update(created=timezone.now() - timedelta(hours=2))
    export_markdown(tmp_path)
    path = _file_of(tmp_path, row)
    later = timezone.now() - timedelta(hours=1)  # after the row's version, before a new edit
    text = path.read_text().replace("edited: null", f"edited: '{time_text(later)}'")
    path.write_text(text.replace("# Total is computed in total.py", "# Total lives in total.py"))
    report = import_markdown(tmp_path)
    assert report.updated == 1, report.describe()
    row.refresh_from_db()
    assert row.title == "Total lives in total.py" and row.edited == later
    revision = ObservationRevision.objects.get(observation=row)
    assert revision.action == "sync-update"
    assert revision.before["title"] == "Total is computed in total.py"

    # Now the row changes here, later than the file: the file's version goes to history.
    observation_edit(row.pk, changes={"title": "Total: see total.py"}, actor="user")
    report = import_markdown(tmp_path)
    assert report.conflicts == 1, report.describe()
    row.refresh_from_db()
    assert row.title == "Total: see total.py"
    conflict = ObservationRevision.objects.get(observation=row, action="sync-conflict")
    assert conflict.after["title"] == "Total lives in total.py" and conflict.before == {}
    # Recorded once, however often the same file comes back.
    assert import_markdown(tmp_path).conflicts == 0
    assert ObservationRevision.objects.filter(action="sync-conflict").count() == 1


def test_a_correction_counts_as_a_change_and_is_exported_but_not_replayed(tmp_path: Path) -> None:
    row = _one_row()
    start = timezone.now()
    assert [d.kind for d in documents(changed_since=start)] == []
    observation_mark(row.pk, action="pin", actor="user")
    changed = list(documents(changed_since=start))
    assert {d.kind for d in changed} == {"observation", "correction"}
    assert [d.kind for d in documents(changed_since=start, for_sync=True)] == ["observation"]
    export_markdown(tmp_path)
    (correction,) = (tmp_path / "shop" / "history").rglob("*.md")
    assert "kind: correction" in correction.read_text()
    _empty_memory()
    report = import_markdown(tmp_path)
    assert report.skipped == 1 + 1  # the correction, the file note
    assert Observation.objects.get().pinned and not ObservationRevision.objects.exists()


def test_sync_documents_leave_out_excluded_projects_and_redact(tmp_path: Path) -> None:
    row = _one_row(project="secret-project")
    row.narrative = "key sk-ant-" + "a" * 40
    row.title = "pasted sk-ant-" + "c" * 40
    row.save()
    assert any(d.project == "secret-project" for d in documents(for_sync=True))
    synced = next(d for d in documents(for_sync=True) if d.kind == "observation")
    assert "sk-ant-aaaa" not in synced.text and "REDACTED" in synced.text
    assert "cccc" not in synced.path and "cccc" not in synced.text
    ExcludedProject.objects.create(glob="secret-project")
    projects.excluded_globs_invalidate()
    assert not [d for d in documents(for_sync=True) if d.project == "secret-project"]


def test_a_tombstone_forgets_the_row_here_too(tmp_path: Path) -> None:
    row = _one_row()
    kept = Observation.objects.create(session=row.session, project="shop", title="kept")
    first, second = tmp_path / "one", tmp_path / "two"
    export_markdown(first)
    observations_forget(request=ForgetRequest(ids=(row.pk,), dry_run=False))
    export_markdown(second)
    assert (second / "shop" / "forgotten" / f"{row.gid}.md").is_file()
    _empty_memory()
    import_markdown(first)
    assert Observation.objects.filter(gid=row.gid).exists()
    report = import_markdown(second / "shop" / "forgotten")
    assert report.forgotten == 1, report.describe()
    assert not Observation.objects.filter(gid=row.gid).exists()
    assert Observation.objects.filter(gid=kept.gid).exists()
    assert Tombstone.objects.filter(gid=row.gid, kind="observation").exists()
    # The old tree does not bring it back.
    import_markdown(first)
    assert not Observation.objects.filter(gid=row.gid).exists()


def test_text_from_a_file_is_redacted_and_private_parts_stripped(tmp_path: Path) -> None:
    row = _one_row()
    export_markdown(tmp_path)
    path = _file_of(tmp_path, row)
    secret = "sk-ant-" + "b" * 40
    path.write_text(
        path.read_text().replace(
            "The total adds tax after the discount.",
            f"Uses {secret} <private>my home address</private> here.",
        )
    )
    import_markdown(tmp_path)
    row.refresh_from_db()
    assert secret not in row.narrative and "home address" not in row.narrative
    assert "REDACTED" in row.narrative


# --- bad input: refused whole, naming the file --------------------------------------------


def _valid_tree(tmp_path: Path) -> list[tuple[str, bytes]]:
    _one_row()
    export_markdown(tmp_path / "tree")
    _empty_memory()
    return sorted(_tree(tmp_path / "tree").items())


GOOD_GID = "01JABCDEFGHJKMNPQRSTVWXYZ0"
OTHER_GID = "01JABCDEFGHJKMNPQRSTVWXYZ1"


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("shop/broken.md", b"---\ngid: [unclosed\n---\n\n# x\n", "not valid YAML"),
        ("shop/open.md", b"---\ngid: x\n# never closed\n", "not closed"),
        ("shop/list.md", b"---\n- a\n- b\n---\n\n# x\n", "not a set of fields"),
        (
            "shop/tag.md",
            b"---\nkind: !!python/object/apply:os.system [id]\n---\n",
            "not valid YAML",
        ),
        ("shop/deep.md", b"---\nkind: " + b"[" * 5000 + b"]" * 5000 + b"\n---\n", "not valid YAML"),
        ("shop/badgid.md", b"---\nkind: observation\ngid: ../../etc/passwd\n---\n\n# x\n", "'gid'"),
        ("shop/kind.md", f"---\nkind: virus\ngid: {GOOD_GID}\n---\n".encode(), "unknown kind"),
        (
            "shop/nocreated.md",
            (
                f"---\nkind: observation\ngid: {GOOD_GID}\nproject: shop\nsession:\n  gid: {GOOD_GID}\n"
                "  platform: claude-code\n  id: s\n  started: '2026-01-01T00:00:00Z'\n---\n\n# t\n"
            ).encode(),
            "'created'",
        ),
        ("shop/latin1.md", b"---\nkind: observation\n---\n\n# caf\xe9\n", "not UTF-8"),
        ("../escape.md", b"---\n---\n", "inside the folder"),
        ("/etc/abs.md", b"---\n---\n", "inside the folder"),
        ("shop/nul\x00.md", b"---\n---\n", "not a usable file name"),
        ("shop/big.md", b"x" * (1024 * 1024 + 1), "more than a memory file may hold"),
    ],
)
def test_a_bad_file_is_refused_whole_and_named(
    tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    files = _valid_tree(tmp_path)
    before = _counts()
    with pytest.raises(MarkdownImportError) as caught:
        import_files([*files, (name, content)], source="test")
    message = str(caught.value)
    assert says in message and (name in message or repr(name) in message), message
    assert _counts() == before == (0, 0, 0, 0, 0, 0, 0)


def test_a_huge_file_is_refused_from_its_size_and_a_symlink_never_followed(tmp_path: Path) -> None:
    _valid_tree(tmp_path)
    root = tmp_path / "tree"
    huge = root / "shop" / "huge.md"
    with huge.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: 50 MB by stat, nothing to read
    with pytest.raises(MarkdownImportError, match="shop/huge.md: 52428800 bytes"):
        import_markdown(root)
    huge.unlink()
    outside = tmp_path / "outside.md"
    outside.write_text("---\nkind: observation\n---\n")
    os.symlink(outside, root / "shop" / "link.md")
    with pytest.raises(MarkdownImportError, match="shop/link.md: a symlink"):
        import_markdown(root)
    (root / "shop" / "link.md").unlink()
    os.symlink(tmp_path, root / "shop" / "dirlink")
    with pytest.raises(MarkdownImportError, match="shop/dirlink: a symlink"):
        import_markdown(root)
    assert _counts() == (0, 0, 0, 0, 0, 0, 0)


def test_the_command_exits_2_naming_the_file(tmp_path: Path) -> None:
    _valid_tree(tmp_path)
    (tmp_path / "tree" / "shop" / "bad.md").write_bytes(b"---\nkind: [\n---\n")
    with pytest.raises(CommandError) as caught:
        call_command("import", "markdown", str(tmp_path / "tree"))
    assert caught.value.returncode == 2 and "shop/bad.md" in str(caught.value)
    assert _counts() == (0, 0, 0, 0, 0, 0, 0)


def test_team_mode_refuses_another_users_rows_and_authors(tmp_path: Path) -> None:
    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    row = _one_row()
    Session.objects.update(owner=alice)
    with viewer_scope(user_id=alice.pk, staff=False):
        export_markdown(tmp_path / "alice")
    text = _file_of(tmp_path / "alice", row).read_text()
    assert "author: alice" in text
    before = _counts()
    # Bob imports Alice's tree: her author name and her rows are refused, nothing written.
    with viewer_scope(user_id=bob.pk, staff=False), pytest.raises(MarkdownImportError) as caught:
        import_markdown(tmp_path / "alice")
    assert "alice" in str(caught.value) and ".md" in str(caught.value)
    # Without the author line the gid still names Alice's row.
    path = _file_of(tmp_path / "alice", row)
    path.write_text(
        text.replace("author: alice\n", "author: ''\n").replace("Total is", "Bob says total is")
    )
    files = [(path.relative_to(tmp_path / "alice").as_posix(), path.read_bytes())]
    # A new row of Bob's ahead of it in the same import is not written either.
    fresh = path.read_text().replace(row.gid, GOOD_GID).replace(row.session.gid, OTHER_GID)
    fresh = fresh.replace("id: s1", "id: bobs-session")
    files.insert(0, ("shop/new.md", fresh.encode()))
    with (
        viewer_scope(user_id=bob.pk, staff=False),
        pytest.raises(MarkdownImportError, match="belongs to another user"),
    ):
        import_files(files, source="test")
    assert _counts() == before
    row.refresh_from_db()
    assert row.title == "Total is computed in total.py"


@pytest.mark.parametrize(
    "fields",
    [
        {"title": "plain", "subtitle": "", "facts": [], "narrative": ""},
        {
            "title": "a title\nover two lines",
            "subtitle": "one\n\nthree",
            "facts": ["multi\nline fact", "  padded  ", "- looks like a list"],
            "narrative": "## Facts\n\n- not a fact\n\n## Narrative\n\ntext\n%% cmem: the links below are made on export; an import ignores them %%",
        },
        {"title": "# hash title", "subtitle": "> quoted", "facts": ["x"], "narrative": "> quote"},
    ],
)
def test_the_body_format_reads_back_what_it_writes(fields: dict[str, object]) -> None:
    once = bodies.observation_read(bodies.with_links(bodies.observation_body(fields), ["x"]))
    twice = bodies.observation_read(bodies.observation_body(once))
    assert once == twice
    assert once["facts"][:1] == [str(f).strip() for f in fields["facts"]][:1]  # type: ignore[attr-defined]


def test_write_tree_refuses_a_path_out_of_the_folder(tmp_path: Path) -> None:
    bad = Document("01JABCDEFGHJKMNPQRSTVWXYZ0", "observation", "p", "../evil.md", "x", "")
    with pytest.raises(MarkdownImportError, match="inside the folder"):
        write_tree(tmp_path / "tree", [bad])
    assert not (tmp_path / "evil.md").exists()


def test_a_deliverable_record_may_not_point_out_of_the_deliverables_folder(tmp_path: Path) -> None:
    demo_load()
    export_markdown(tmp_path)
    (path,) = tmp_path.rglob("file-*.md")
    text = path.read_text()
    path.write_text(text.replace("stored_path: acme-shop/", "stored_path: ../../../etc/"))
    _empty_memory()
    with pytest.raises(MarkdownImportError, match="stored_path"):
        import_markdown(tmp_path)


def test_documents_carried_in_any_order_rebuild_the_same_tree(tmp_path: Path) -> None:
    """What sync does: documents() on one machine, import_files() of them on another, the
    rows before their session's file."""
    demo_load()
    docs = list(documents())
    export_markdown(tmp_path / "one")
    _empty_memory()
    # (A deliverable comes with its session: its link to a prompt needs the prompt there.)
    later = ("session", "deliverable")
    import_files([(d.path, d.text.encode()) for d in docs if d.kind not in later], source="a")
    import_files([(d.path, d.text.encode()) for d in docs if d.kind in later], source="a")
    export_markdown(tmp_path / "two")
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")


def test_cmem_import_markdown_exits_2_naming_the_file(tmp_path: Path) -> None:
    """Through the real front end, which keeps an explicit 2 (it maps Django's errors to 1)."""
    tree = tmp_path / "tree" / "shop"
    tree.mkdir(parents=True)
    (tree / "bad.md").write_bytes(b"---\ngid: nope\nkind: observation\n---\n\n# t\n")
    env = make_worker_env(tmp_path / "data", free_port())
    done = subprocess.run(
        [CMEM, "import", "markdown", str(tmp_path / "tree")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "shop/bad.md" in done.stderr and "global id" in done.stderr


def test_exporting_into_the_same_folder_again_keeps_each_gid_once(tmp_path: Path) -> None:
    row = _one_row()
    gone = Observation.objects.create(session=row.session, project="shop", title="to forget")
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "x-01JABCDEFGHJKMNPQRSTVWXYZ0.md").write_text("obsidian's")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "my own note.md").write_text("a person's note")
    export_markdown(tmp_path)
    old_name = _file_of(tmp_path, row).name
    observation_edit(row.pk, changes={"title": "A new title"}, actor="user")
    observations_forget(request=ForgetRequest(ids=(gone.pk,), dry_run=False))
    export_markdown(tmp_path)
    names = {p.name for p in tmp_path.rglob("*.md")}
    assert old_name not in names and _file_of(tmp_path, row).name.startswith("a-new-title-")
    assert not list(tmp_path.rglob(f"to-forget-{gone.gid}.md"))
    assert "my own note.md" in names and "x-01JABCDEFGHJKMNPQRSTVWXYZ0.md" in names
    # No gid twice (the tombstone included); a person's own notes are left alone.
    (tmp_path / "shop" / "tagged.md").write_text("---\ntags: [x]\n---\n\n# mine\n")
    report = import_markdown(tmp_path)
    assert report.unchanged > 0 and report.created == 0, report.describe()


def test_a_summary_edited_by_hand_takes_the_text_and_a_new_prompt_is_added(tmp_path: Path) -> None:
    row = _one_row()
    summary = Summary.objects.create(
        session=row.session, project="shop", request="fix it", learned="tax"
    )
    export_markdown(tmp_path)
    (path,) = tmp_path.rglob(f"summary-*-{summary.gid}.md")
    path.write_text(
        path.read_text().replace("## Learned\n\ntax\n", "## Learned\n\ntax, then discount\n")
    )
    (session_file,) = tmp_path.rglob(f"session-*-{row.session.gid}.md")
    text = session_file.read_text()
    when = time_text(timezone.now())
    session_file.write_text(
        text.replace("%% cmem:", f"### Prompt 2 · {when}\n\nand the refunds\n\n%% cmem:")
    )
    report = import_markdown(tmp_path)
    assert report.updated == 2, report.describe()
    summary.refresh_from_db()
    assert summary.learned == "tax, then discount"
    assert Prompt.objects.get(session=row.session, number=2).text == "and the refunds"


def test_a_deliverable_keeps_its_gid_through_the_json_export_too() -> None:
    demo_load()
    gids = set(Deliverable.objects.values_list("gid", flat=True))
    document = memory_export()
    _empty_memory()
    memory_import(document=dict(document), report=ImportReport())
    assert set(Deliverable.objects.values_list("gid", flat=True)) == gids and gids
