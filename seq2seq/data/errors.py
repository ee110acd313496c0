"""The data error every reader raises (re-exported by ``data.text``)."""

from __future__ import annotations


class DataError(ValueError):
    """Unusable input data; the message names the file, the line and what to do."""
