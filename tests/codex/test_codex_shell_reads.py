from __future__ import annotations

import pytest

from memory.agents.codex_shell_reads import shell_read_paths


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ("cat file.txt", ["file.txt"]),
        ("cat -n src/a.py src/b.py", ["src/a.py", "src/b.py"]),
        ("cat -- -odd-name", ["-odd-name"]),
        ('cat "with space.txt"', ["with space.txt"]),
        ("/bin/cat notes.md", ["notes.md"]),
        ("head -n 40 app.py", ["app.py"]),
        ("head -40 app.py", ["app.py"]),
        ("tail -n +100 app.py", ["app.py"]),
        ("sed -n 1,80p app.py", ["app.py"]),
        ("sed -n '120,$p' app.py", ["app.py"]),
        ("sed -n -e '5p;10,12p' app.py", ["app.py"]),
        ("nl -ba app.py", ["app.py"]),
        ("less README.md", ["README.md"]),
    ],
)
def test_plain_reads_name_their_files(command: str, paths: list[str]) -> None:
    assert shell_read_paths(command) == paths


@pytest.mark.parametrize(
    "command",
    [
        "",
        "cat",  # stdin
        "cat -",
        "cat a | grep x",
        "cat a && rm a",
        "cat a; exit 3",
        "cat a > b",
        "cat < a",
        "cat $FILE",
        "cat `ls`",
        "cat $(ls)",
        "cat *.py",
        "cat ~/.ssh/id_rsa",
        "cat a b c d e",  # more than a few files
        'cat "unbalanced',
        "tail -f log.txt",
        "sed -i s/a/b/ app.py",
        "sed s/a/b/ app.py",  # no -n: a transform, not a print
        "sed -n 's/a/b/p' app.py",
        "head -n lots app.py",
        "nl -x app.py",
        "FOO=1 cat a",
        "rg TODO",
        "python3 -c 'print(1)'",
        "cat a\ncat b",
    ],
)
def test_anything_else_passes_untouched(command: str) -> None:
    assert shell_read_paths(command) == []
