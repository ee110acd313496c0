"""``seq2seq serve``: a local page and JSON API to compare trained runs side by side: ``runs``
loads them (and a ``compare`` results file) once, ``engine`` answers a request, ``app`` serves
FastAPI routes with uvicorn, ``static/`` holds the page."""


class ServeError(ValueError):
    """A problem with what ``seq2seq serve`` was started with (one line)."""
