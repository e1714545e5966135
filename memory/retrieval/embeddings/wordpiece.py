"""BERT's uncased WordPiece tokenizer, in Python: what the bundled transformer reads.

Hugging Face's `tokenizers` does this in Rust, but it brings 36 MB with it (huggingface_hub,
hf_xet, fsspec, PyYAML), a quarter of what the embeddings extra may add to an install
(docs/guide/search.md). This is the same algorithm for the model's own configuration
(`BertNormalizer` lowercasing and stripping accents, `BertPreTokenizer`, `WordPiece` with
the `##` prefix, `[CLS] … [SEP]`), checked against `tokenizers` on varied text by
tests/retrieval/test_wordpiece.py. One difference, on purpose: a literal `[SEP]` or
`[CLS]` written in recorded text is read as the characters it is, never as a control token.

Cost is linear in the text: each word is looked up once per process (`lru_cache`), and a
word longer than 100 characters is one `[UNK]`, as in BERT.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from pathlib import Path

MAX_WORD_CHARS = 100
# What the reference drops as control characters: its Unicode tables know no unassigned
# code points (Cn), so those stay, and become [UNK].
_CONTROL = frozenset({"Cc", "Cf", "Co", "Cs"})


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT counts every non-alphanumeric ASCII character as punctuation ($, ^, ` too).
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B920 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


def _normalize(text: str) -> str:
    """BertNormalizer: control characters dropped, whitespace made spaces, CJK ideographs
    spaced out, accents stripped, lowercased."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD:
            continue
        if char in "\t\n\r" or unicodedata.category(char) == "Zs":
            out.append(" ")
        elif unicodedata.category(char) in _CONTROL:
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()


def _words(text: str) -> list[str]:
    """BertPreTokenizer: split on whitespace, each punctuation character a word of its own."""
    words: list[str] = []
    for chunk in text.split():
        start = 0
        for i, char in enumerate(chunk):
            if _is_punctuation(char):
                if start < i:
                    words.append(chunk[start:i])
                words.append(char)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPiece:
    """`encode(text)`: token ids with `[CLS]` and `[SEP]`, at most `max_tokens` of them."""

    def __init__(self, vocab: dict[str, int], max_tokens: int) -> None:
        self.vocab = vocab
        self.max_tokens = max_tokens
        self.unk, self.cls, self.sep = vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]
        self.word_ids = functools.lru_cache(maxsize=65536)(self._word_ids)

    @classmethod
    def from_tokenizer_json(cls, path: Path, max_tokens: int) -> WordPiece:
        """The vocabulary of a Hugging Face `tokenizer.json` of the WordPiece kind."""
        model = json.loads(path.read_text(encoding="utf-8"))["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"{path}: not a WordPiece tokenizer")
        return cls(model["vocab"], max_tokens)

    def _word_ids(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD_CHARS:
            return (self.unk,)
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return (self.unk,)
            start = end
        return tuple(ids)

    def encode(self, text: str) -> list[int]:
        room = self.max_tokens - 2
        ids: list[int] = [self.cls]
        # Only as much text as can fill the window is normalised: a megabyte of tool
        # output costs what its first few thousand characters do.
        for word in _words(_normalize(text[: room * 40])):
            ids.extend(self.word_ids(word))
            if len(ids) > room:
                break
        del ids[room + 1 :]
        ids.append(self.sep)
        return ids
