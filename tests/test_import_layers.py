"""lmc's import graph, read from the source (ast): no circles, no arrow from a lower layer to a
higher one. Every import counts, those inside functions and under ``if TYPE_CHECKING:`` too,
and ``importlib.import_module("lmc....")`` / ``__import__("lmc....")`` with a literal name:
a deferred or dynamic import is still a dependency, only a later one."""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "lmc"

#: Lowest first. A package may import from its own layer's other packages (without a
#: circle) and from any layer below, never from one above. "lmc" is the package's own
#: ``__init__`` (the public API: Interpreter, Computer).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "paths", "settings", "extras"}),
    frozenset({"messages"}),
    frozenset({"harmony"}),
    frozenset({"backends", "computer"}),
    frozenset({"voice", "mcp", "workspace", "browser"}),
    frozenset({"agent"}),
    frozenset({"lmc", "config", "terminal"}),
    frozenset({"server", "acp"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)
RANK = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}


@functools.cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


#: Functions that import the module their first argument names.
DYNAMIC_IMPORTS = frozenset({"import_module", "__import__"})


def _dynamic_target(node: ast.AST) -> str | None:
    """The literal module name of ``importlib.import_module("x")``, ``import_module("x")``
    (from importlib) or ``__import__("x")``."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if name in DYNAMIC_IMPORTS and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def _targets(node: ast.AST, package: str, known: dict[str, Path]) -> Iterator[str]:
    names: list[str] = []
    if (dynamic := _dynamic_target(node)) is not None:
        names = [dynamic]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parent, *([node.module] if node.module else [])])
        names = [f"{base}.{alias.name}" for alias in node.names] or [base]
        names = [name if name in known else base for name in names]
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith("lmc"):
            yield name


@functools.cache
def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            graph[module].update(t for t in _targets(node, package, known) if t != module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lmc"


def test_every_package_has_a_layer() -> None:
    unplaced = {layer_of(module) for module in modules()} - set(RANK)
    assert not unplaced, f"put these in LAYERS: {sorted(unplaced)}"


def test_no_arrow_goes_up_a_layer() -> None:
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in import_graph().items()
        for target in targets
        if RANK.get(layer_of(target), -1) > RANK.get(layer_of(source), -1)
    )
    assert upward == []


def test_no_circle_between_packages() -> None:
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in import_graph().items():
        packages[layer_of(source)].update(
            layer_of(t) for t in targets if layer_of(t) != layer_of(source)
        )
    assert cycles(packages) == []


def test_no_circle_between_modules_at_all() -> None:
    assert cycles(import_graph()) == []


def test_the_graph_sees_deferred_and_type_checking_imports(tmp_path: Path) -> None:
    """The walk must find an import inside a function and one under TYPE_CHECKING."""
    graph = import_graph()
    assert "lmc.voice.extra" in graph["lmc.voice.audio"]  # imported inside a function
    assert "lmc.computer" in graph["lmc.agent.interpreter"]  # under TYPE_CHECKING
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]


def test_the_graph_sees_dynamic_imports() -> None:
    """``importlib.import_module`` and ``__import__`` with a literal name are arrows too."""
    known = modules()
    for source in (
        "importlib.import_module('lmc.cli.app')",
        "import_module('lmc.cli.app')",
        "__import__('lmc.cli.app')",
    ):
        [call] = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)]
        assert list(_targets(call, "lmc.backends", known)) == ["lmc.cli.app"], source
    [call] = [n for n in ast.walk(ast.parse("import_module(name)")) if isinstance(n, ast.Call)]
    assert list(_targets(call, "lmc.backends", known)) == []
