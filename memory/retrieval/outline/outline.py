"""smart_outline: a source file's structure (classes, functions, signatures, a few words of
doc) for a fraction of its tokens, from the grammar wheels installed alongside cmem (nothing
is downloaded at run time)."""

from __future__ import annotations

from pathlib import Path

from memory.retrieval.outline.languages import EXTENSIONS, language_for
from memory.retrieval.outline.model import Outline, OutlineError
from memory.retrieval.outline.parse import MAX_FILE_BYTES, check_file, outline_source, read_source


def smart_outline(
    path: Path, *, display: str | None = None, max_bytes: int = MAX_FILE_BYTES
) -> Outline:
    """The outline of one file; raises OutlineError for files cmem cannot outline."""
    check_file(path, max_bytes)
    language = language_for(path)
    if language is None:
        supported = ", ".join(sorted(set(EXTENSIONS)))
        raise OutlineError(
            f"{path}: no grammar for '{path.suffix or path.name}' files (outlines cover {supported}); read the file instead"
        )
    source = read_source(path, max_bytes)
    return outline_source(source, language=language, path=display or str(path))
