"""What a renderer wrote, as the tests read it."""
from __future__ import annotations


class Written(dict):
    """{path: text} of every write(path, text): a text may come as chunks (a large export, written as it is made),
    joined here as the store's writer joins them on disk."""

    def __setitem__(self, path, text):
        super().__setitem__(path, text if isinstance(text, str) else "".join(text))
