"""One obvious home for each thing. The layers stand on each other in one order, no
module imports a layer above its own, no two modules import each other (directly or round a
circle, lazily or not), and no source file grows past what a reader takes in at once."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

# bottom to top; a package may import its own modules and the packages of lower ranks only
LAYERS = {"domain": 0, "db": 1, "audio": 1, "service": 2, "actors": 3, "web": 3, "transcriber": 4}
LONGEST_FILE = 350
WEB_FRAMEWORKS = {"fastapi", "starlette", "fastapi_offline", "uvicorn"}


def _modules() -> dict[str, Path]:
    found = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The project's modules `path` imports anywhere in it (top level, functions, TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    return {t for t in targets if t.split(".")[0] in LAYERS and t in known}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(path, name, known) - {name} for name, path in known.items()}


def test_no_module_imports_a_layer_above_its_own():
    """The layers in their order: domain < db, audio < service < actors, web < transcriber; actors
    and web never import each other, nor db and audio."""
    upward = []
    for module, targets in _graph().items():
        own = module.split(".")[0]
        for target in targets:
            theirs = target.split(".")[0]
            if theirs != own and LAYERS[theirs] >= LAYERS[own]:
                upward.append(f"{module} imports {target}")
    assert not upward, "\n".join(sorted(upward))


def test_only_the_web_layer_speaks_http():
    """HTTP is the web layer's: domain, db, audio and service import no web framework, so what
    they refuse carries a code (`domain.errors`), never an HTTP status."""
    speaking = []
    for package in ("domain", "db", "audio", "service"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                speaking += [f"{path.relative_to(ROOT)} imports {name}" for name in names
                             if name.split(".")[0] in WEB_FRAMEWORKS]
    assert not speaking, "\n".join(speaking)


def test_no_import_circles_between_modules():
    """No two modules need each other, not even through a lazy import."""
    graph = _graph()
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(" <-> ".join(sorted(component)))

    for module in graph:
        if module not in index:
            visit(module)
    assert not circles, "\n".join(circles)


def test_the_walk_sees_a_planted_circle_and_an_upward_import(tmp_path, monkeypatch):
    """The checks above can fail: a lazy import inside a function is an import too."""
    path = tmp_path / "probe.py"
    path.write_text("def f():\n    from web.app import create_app\n    from . import sibling\n")
    known = {"db.probe": path, "web.app": path, "db.sibling": path}
    assert _imports(path, "db.probe", known) == {"web.app", "db.sibling"}


def test_no_source_file_is_too_long():
    """No source file over ~350 lines: a reader takes it in at once."""
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in _modules().values()
            if (n := len(path.read_text().splitlines())) > LONGEST_FILE]
    assert not long, "\n".join(long)
