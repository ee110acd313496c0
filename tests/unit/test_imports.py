"""Import rules: validating a config needs no torch; the package has no import circle, not even
one closed by an import inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.toys import REPO


def test_config_module_imports_without_torch():
    """Validating a config (the model sections come from seq2seq/models/configs.py) needs no torch:
    ``seq2seq.config`` and the ``seq2seq.models`` package import none."""
    code = (
        "import sys, seq2seq.config as c; "
        "c.validate_config({'model': {'name': 'transformer'}}); "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _modules(root: Path) -> dict[str, Path]:
    """Every module of the ``seq2seq`` package under ``root``, by dotted name (a package by its
    own name, for its ``__init__.py``)."""
    mods = {}
    for path in (root / "seq2seq").rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the ``seq2seq`` modules it imports, wherever the import stands (module level or
    inside a function; ``if TYPE_CHECKING:`` blocks excepted, they never run). ``from a.b import
    c`` imports the module ``a.b.c`` if there is one, else ``a.b``; importing a module also runs
    the ``__init__.py`` of each package above it that the importer is not itself inside."""
    mods = _modules(root)

    def imported(importer: str, name: str) -> set[str]:
        found = {name} if name in mods else set()
        parts = name.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            if package in mods and not importer.startswith(package + "."):
                found.add(package)
        return found

    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for n in ast.walk(block)
        }
        edges: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    edges |= imported(mod, alias.name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    edges |= imported(mod, sub if sub in mods else node.module)
        graph[mod] = {m for m in edges if m.startswith("seq2seq") and m != mod}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (``[a, b, ..., a]``), or None when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(mod: str) -> list[str] | None:
        state[mod] = 1
        path.append(mod)
        for nxt in sorted(graph.get(mod, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (circle := visit(nxt)):
                return circle
        path.pop()
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if mod not in state and (circle := visit(mod)):
            return circle
    return None


def test_package_has_no_import_circle():
    """No module of ``seq2seq`` imports, directly or through others, back to itself: an import
    moved into a function to dodge a circle still counts (training/precision.py once imported
    ``setup.build_optimizer`` inside ``probe_speeds`` while setup.py imported precision)."""
    circle = find_circle(import_graph(REPO))
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_function_level_import_circle_is_found(tmp_path):
    """The check above sees an import inside a function, and ignores ``if TYPE_CHECKING:``."""
    pkg = tmp_path / "seq2seq"
    (pkg / "training").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "training" / "__init__.py").write_text("")
    (pkg / "training" / "setup.py").write_text("from seq2seq.training.precision import probe\n")
    precision = pkg / "training" / "precision.py"
    precision.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from seq2seq.training import setup\n"
        "def probe():\n    return 1\n"
    )
    assert find_circle(import_graph(tmp_path)) is None
    precision.write_text(
        "def probe():\n    from seq2seq.training.setup import build_optimizer\n    return 1\n"
    )
    assert find_circle(import_graph(tmp_path)) == [
        "seq2seq.training.precision",
        "seq2seq.training.setup",
        "seq2seq.training.precision",
    ]
