"""Embeddings: the bundled static model, vectors stored next to their rows, nearest-row scans."""
