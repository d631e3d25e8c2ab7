"""Counts of the code's shape: what issue 42 asks to report before and after.

    python scripts/house_counts.py            # the summary
    python scripts/house_counts.py --list     # every offender named

Read from the source alone (nothing is imported or run): modules over 600
lines, functions over 100 lines, import cycles between the project's modules
(function-level imports included), references to private names in tests.
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("model", "sim", "calibrate", "reports", "kvperf", "native", "cli", "runio")
MODULE_LINES = 600
FUNCTION_LINES = 100


def project_modules() -> dict[str, Path]:
    """Dotted name -> path of every project source module (tests excluded)."""
    out = {}
    for pkg in PACKAGES:
        base = ROOT / pkg
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def long_modules(mods):
    return sorted(((n, _lines(p)) for n, p in mods.items() if _lines(p) > MODULE_LINES),
                  key=lambda t: -t[1])


def long_functions(mods):
    out = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    out.append((f"{name}.{node.name}", n))
    return sorted(out, key=lambda t: -t[1])


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _compiled_submodule(package: str, name: str) -> bool:
    """``from native import _core``: a compiled extension beside the package's sources."""
    folder = ROOT.joinpath(*package.split("."))
    return folder.is_dir() and any(folder.glob(f"{name}.*.so")) or \
        (folder / f"{name}.pyi").exists()


def import_graph(mods):
    """Module -> project modules it imports anywhere in its body."""
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node)
                # "from pkg import sub" ties to the submodule, not to pkg's __init__
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names
                           if not _compiled_submodule(base, a.name)]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan).

    A package's __init__ that only re-exports its children is left out of the
    graph's edges into it, or every child importing a sibling through the
    package would count as a cycle with the package."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def package_cycles(graph):
    pg = {}
    for a, bs in graph.items():
        pa = a.split(".")[0]
        for b in bs:
            pb = b.split(".")[0]
            if pa != pb:
                pg.setdefault(pa, set()).add(pb)
    for p in list(pg):
        for q in list(pg[p]):
            pg.setdefault(q, set())
    return cycles(pg)


def private_references(mods):
    """Uses in tests of a project module's private name (from m import _x, m._x)."""
    refs = []
    top = {n.split(".")[0] for n in mods}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] in top:
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        refs.append((str(path.relative_to(ROOT)), f"{node.module}.{a.name}"))
                    else:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in top:
                        aliases[(a.asname or a.name).split(".")[0] if not a.asname else a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in aliases:
                    refs.append((str(path.relative_to(ROOT)), f"{ast.unparse(node)}"))
    return refs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="name every offender")
    args = ap.parse_args(argv)
    mods = project_modules()
    graph = import_graph(mods)
    lm, lf, cy, pc = long_modules(mods), long_functions(mods), cycles(graph), package_cycles(graph)
    pr = private_references(mods)
    print(f"modules: {len(mods)}, {sum(_lines(p) for p in mods.values())} lines")
    print(f"modules over {MODULE_LINES} lines: {len(lm)}")
    print(f"functions over {FUNCTION_LINES} lines: {len(lf)}")
    print(f"import cycles between modules: {len(cy)}")
    print(f"import cycles between packages: {len(pc)}")
    print(f"private-name references in tests: {len(pr)} in {len({f for f, _ in pr})} files")
    if args.list:
        for n, k in lm:
            print(f"  module {n}: {k} lines")
        for n, k in lf:
            print(f"  function {n}: {k} lines")
        for c in cy:
            print(f"  cycle: {' <-> '.join(c)}")
        for c in pc:
            print(f"  package cycle: {' <-> '.join(c)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
