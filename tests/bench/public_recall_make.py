"""Make tests/bench/data/public_recall.json.gz from a checkout of emorynlp/FriendsQA.

    python -m tests.bench.public_recall_make GIT_DIR_OR_FOLDER [OUT]

GIT_DIR_OR_FOLDER is either a git directory (read with `git show HEAD:dat/...`, as the
`fetch` mirror gives it) or a folder holding `dat/friendsqa_dev.json` and
`dat/friendsqa_tst.json`. Only those two splits are used (the training split is left out:
it is the one models are trained on, and the haystack is large enough without it).

What it derives (see data/public_recall.NOTICE.md):
- one unit a scene utterance: `speaker` (the scene's names; `#NOTE#`, the transcript's
  stage directions, becomes "Scene note", `#ALL#` "Everyone") and `text`, the utterance with
  the corpus' Penn-Treebank tokenisation undone (`do n't` -> `don't`, `gon na` -> `gonna`,
  no space before punctuation), so the text reads as a person wrote it;
- one query a question (the same detokenisation), `group` its question word (what, who,
  when, where, why, how: FriendsQA's own six types), `paraphrased` whether FriendsQA marks it
  as the paraphrased variant, `relevant` the utterances its answer spans lie in (an answer
  that is the speaker of an utterance points at that utterance).
Nothing is chosen by hand and nothing is dropped but questions without an answer.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

SPLITS = ("dev", "tst")
OUT = Path(__file__).parent / "data" / "public_recall.json.gz"
SPEAKERS = {"#NOTE#": "Scene note", "#ALL#": "Everyone"}
GROUPS = ("what", "who", "when", "where", "why", "how")

_CONTRACTIONS = re.compile(r" (n't|'s|'re|'ve|'ll|'d|'m|'S|'RE|'VE|'LL|'D|'M|N'T)\b")
_JOINED = re.compile(r"\b(gon|wan|got) (na|ta)\b", re.IGNORECASE)
_BEFORE = re.compile(r" ([.,!?;:%)\]}]|\.\.\.)")
_AFTER = re.compile(r"([(\[{$]) ")


def detokenize(text: str) -> str:
    """Undo the corpus' PTB tokenisation, the common cases only (it is text to search, not
    to typeset)."""
    text = " ".join(text.split())
    text = _CONTRACTIONS.sub(r"\1", text)
    text = _JOINED.sub(r"\1\2", text)
    text = _BEFORE.sub(r"\1", text)
    text = _AFTER.sub(r"\1", text)
    return text.replace("`` ", '"').replace(" ''", '"').strip()


def read_split(source: Path, split: str) -> dict[str, Any]:
    path = f"dat/friendsqa_{split}.json"
    if (source / path).is_file():
        return json.loads((source / path).read_text(encoding="utf-8"))
    shown = subprocess.run(
        ["git", "--git-dir", str(source), "show", f"HEAD:{path}"],
        capture_output=True,
        check=True,
    )
    return json.loads(shown.stdout)


def commit_of(source: Path) -> str:
    if (source / "dat").is_dir():
        return "unknown (a folder, not a git directory)"
    return subprocess.run(
        ["git", "--git-dir", str(source), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def derive(source: Path) -> dict[str, Any]:
    units: list[dict[str, str]] = []
    queries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for split in SPLITS:
        for scene in read_split(source, split)["data"]:
            conversation = scene["title"]
            (paragraph,) = scene["paragraphs"]
            # The corpus spells the key with a trailing colon.
            utterances = paragraph["utterances:"]
            keys = {}
            for u in utterances:
                key = f"{conversation}:u{u['uid']:02d}"
                keys[u["uid"]] = key
                speaker = ", ".join(SPEAKERS.get(s, s) for s in u["speakers"]) or "Unknown"
                units.append(
                    {
                        "key": key,
                        "conversation": conversation,
                        "speaker": speaker,
                        "text": detokenize(u["utterance"]) or "…",
                    }
                )
            for qa in paragraph["qas"]:
                if qa["id"] in seen:
                    raise ValueError(f"question id {qa['id']} twice")
                seen.add(qa["id"])
                relevant = sorted({keys[a["utterance_id"]] for a in qa["answers"]})
                if not relevant:
                    continue
                kind = qa["id"].split("_")[3].lower()
                if kind not in GROUPS:
                    raise ValueError(f"question {qa['id']}: unknown type {kind!r}")
                queries.append(
                    {
                        "id": qa["id"],
                        "conversation": conversation,
                        "text": detokenize(qa["question"]),
                        "group": kind,
                        "paraphrased": qa["id"].endswith("_Paraphrased"),
                        "relevant": relevant,
                    }
                )
    return {
        "source": "https://github.com/emorynlp/FriendsQA (dat/friendsqa_dev.json, dat/friendsqa_tst.json)",
        "commit": commit_of(source),
        "license": "Apache-2.0 (Copyright 2019, 2020 Emory University)",
        "units": units,
        "queries": queries,
    }


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write(__doc__ or "")
        return 2
    out = Path(argv[1]) if len(argv) > 1 else OUT
    data = derive(Path(argv[0]))
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    # No name, mtime 0: the same input makes the same bytes.
    with open(out, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as f:
        f.write(body)
    print(f"{out}: {len(data['units'])} units, {len(data['queries'])} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
