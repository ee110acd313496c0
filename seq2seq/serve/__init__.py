"""``seq2seq serve``: a local page and JSON API to compare trained runs side by side.

``runs`` loads the runs once at start, ``engine`` turns a request into every model's greedy and
beam translations with their attention maps, ``study`` reads a ``seq2seq compare`` results file,
``app`` puts them behind FastAPI routes and runs uvicorn, and ``static/`` holds the page.
"""


class ServeError(ValueError):
    """A problem with what ``seq2seq serve`` was started with (one line)."""
