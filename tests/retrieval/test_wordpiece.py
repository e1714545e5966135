"""cmem's WordPiece tokenizer reads text exactly as Hugging Face's `tokenizers` does for the
bundled model (the reference implementation, a dev dependency only), and stays linear on
hostile text."""

from __future__ import annotations

import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.retrieval.embeddings import transformer
from memory.retrieval.embeddings.wordpiece import WordPiece

tokenizers = pytest.importorskip("tokenizers")  # the dev extra has it; CI installs it

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pair() -> tuple[object, WordPiece]:
    reference = tokenizers.Tokenizer.from_file(str(transformer.TOKENIZER))
    reference.no_padding()
    reference.enable_truncation(transformer.MAX_TOKENS)
    return reference, WordPiece.from_tokenizer_json(transformer.TOKENIZER, transformer.MAX_TOKENS)


SAMPLES = [
    "Café naïve résumé ÅNGSTRÖM",
    "日本語のテキスト and 中文 mixed",
    "emoji 🎉🎉 test\u200b zero-width",
    "tabs\tand\nnewlines\r\n",
    "$HOME/foo_bar-baz.py:12 -> memory/retrieval/search/hybrid.py",
    "x" * 150 + " ok",
    "İstanbul ǅ ß ﬁ",
    "\x00null\ufffd",
    "",
    "   ",
    "Refunds reuse compute_total() so partial refunds match checkout",
]


def test_it_reads_the_docs_and_odd_text_as_the_reference_does(
    pair: tuple[object, WordPiece],
) -> None:
    reference, ours = pair
    texts = list(SAMPLES)
    for path in sorted((REPO / "docs").rglob("*.md"))[:40]:
        text = path.read_text(encoding="utf-8")
        texts += [text[i : i + 700] for i in range(0, min(len(text), 7000), 700)]
    mismatched = [t for t in texts if reference.encode(t).ids != ours.encode(t)]  # type: ignore[attr-defined]
    assert not mismatched, mismatched[:3]


# The reference's Unicode tables are older than Python's: about 500 code points assigned
# since (new scripts' marks and punctuation) split differently, so generated text keeps
# to characters Unicode 3.2 already had (and to unassigned ones, which both keep as [UNK]).
_STABLE = st.characters(
    codec="utf-8",
    exclude_categories=("Cs",),
).filter(lambda c: unicodedata.ucd_3_2_0.category(c) != "Cn" or unicodedata.category(c) == "Cn")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_STABLE, max_size=300))
def test_any_text_is_read_as_the_reference_reads_it(text: str) -> None:
    reference = tokenizers.Tokenizer.from_file(str(transformer.TOKENIZER))
    reference.no_padding()
    reference.enable_truncation(transformer.MAX_TOKENS)
    ours = WordPiece.from_tokenizer_json(transformer.TOKENIZER, transformer.MAX_TOKENS)
    # A literal control token typed in the text is read as characters by cmem (on purpose).
    if any(t in text.upper() for t in ("[CLS]", "[SEP]", "[UNK]", "[PAD]", "[MASK]")):
        return
    assert ours.encode(text) == reference.encode(text).ids


def test_a_typed_control_token_is_only_characters(pair: tuple[object, WordPiece]) -> None:
    _, ours = pair
    ids = ours.encode("stop [SEP] here")
    assert ids.count(ours.sep) == 1 and ids[-1] == ours.sep


def test_hostile_text_costs_what_its_window_costs(pair: tuple[object, WordPiece]) -> None:
    _, ours = pair
    for hostile in ("a" * 5_000_000, "é" * 2_000_000, "日" * 2_000_000, ". " * 2_000_000):
        began = time.perf_counter()
        ids = ours.encode(hostile)
        assert len(ids) <= transformer.MAX_TOKENS
        assert time.perf_counter() - began < 2.0
