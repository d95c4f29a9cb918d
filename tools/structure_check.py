#!/usr/bin/env python3
"""Structure check: the five counts of issue 25's Targets, with the offenders.

    python tools/structure_check.py

1. import cycles among cfgmask modules: strongly connected components (more
   than one module) of the import graph.  Every import counts, also those
   inside functions; ``.pyx``/``.pxd`` files add their ``cimport`` edges (a
   ``.pyx`` and its ``.pxd`` are one module).
2. cfgmask modules (``.py``/``.pyx``) over ``MAX_LINES`` lines.
3. uses of another cfgmask module's ``_private`` names: ``from x import _y``
   with ``x`` another cfgmask module, ``m._y`` with ``m`` bound to another
   cfgmask module, and ``obj._y`` (``obj`` not ``self``/``cls``) where ``_y``
   is defined only in other cfgmask modules (e.g. ``vocab._flat()`` outside
   vocab.py).  Private *modules* (``_fast``) are the package's layout, not a
   reach-in.
4. ``sys.path.insert``/``append`` outside ``conftest.py`` (every project
   ``.py`` file outside cfgmask: tests/, benchmarks/, tools/, scripts/, ...).
5. references to the design brief that lives outside the repository (its
   file name, or its name followed by a section sign), in any file git
   tracks or would track.
6. imports against the layers (:data:`LAYERS`, docs/architecture.md "The
   map"): a module may import its own layer and the layers below it that
   :data:`MAY_IMPORT` lists, nothing above.  Imports inside functions count.

It is a report, not a gate: it always exits 0.  docs/architecture.md
("Structure check") records the counts and what they should become.
"""

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
from collections import defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PKG = "cfgmask"
MAX_LINES = 1000
CODE_DIRS = ("tests", "benchmarks", "tools", "scripts")
# Built from pieces so that this file does not count itself.
_BRIEF = re.compile(r"\b" + "DES" + r"IGN(?:\.md\b|\s*§)")


# (module prefix, layer), the longest matching prefix wins; "cfgmask" alone is
# the package's __init__, which imports the base eagerly and the rest lazily
LAYERS = [
    ("cfgmask.errors", "base"), ("cfgmask.cache", "base"), ("cfgmask.gc_pause", "base"),
    ("cfgmask.compiled_python", "base"),
    ("cfgmask.automata", "automata"),
    ("cfgmask.grammar", "ir"),
    ("cfgmask.frontends", "frontends"),
    ("cfgmask._fast", "runtime"),
    # the regex pipeline's compile-time kernels: C, but not the run time
    ("cfgmask._fast._thompson", "kernels"), ("cfgmask._fast._automata", "kernels"),
    ("cfgmask._fast._minimal", "kernels"),
    ("cfgmask._fast._reparse", "kernels"), ("cfgmask._fast._larklex", "kernels"),
    # inline C functions and typedefs (cimported, compiled into each user): the base of both
    ("cfgmask._fast._hash", "base"), ("cfgmask._fast._mem", "base"), ("cfgmask._fast._types", "base"),
    ("cfgmask.engine", "engine"),
    ("cfgmask.kernels", "integrations"), ("cfgmask.hf", "integrations"),
    ("cfgmask.generate", "integrations"), ("cfgmask.vllm", "integrations"),
    ("cfgmask.models", "integrations"),
    ("cfgmask.app", "app"), ("cfgmask.__main__", "app"),
    ("cfgmask", "package"),
]
MAY_IMPORT = {
    "base": {"base"},
    # automata/kernels.py (and automata/reparse.py, the regex parser) import the
    # compile-time kernels, which import nothing from cfgmask; nothing else imports them
    "kernels": {"base"},     # in practice _fast/_hash.pxd and _mem.pxd, compiled in: nothing at import time
    "automata": {"base", "kernels"},
    # the IR's alternate constructors (Grammar.from_lark, .builtin, ...) hand
    # over to the front ends, which build the IR through the class they are given
    "ir": {"base", "frontends"},
    # lark_parse reads .lark text with the compiled scanner (_fast/_larklex)
    "frontends": {"base", "automata", "kernels"},
    "runtime": {"base"},
    "engine": {"base", "automata", "ir", "runtime"},
    "integrations": {"base", "automata", "ir", "frontends", "runtime", "engine"},
    "app": {"base", "automata", "ir", "frontends", "runtime", "engine", "integrations", "package"},
    "package": {"base"},
}


def layer_of(mod):
    best = max((p for p, _ in LAYERS if mod == p or mod.startswith(p + ".")), key=len, default=None)
    return dict(LAYERS)[best] if best else None


def layer_violations(infos):
    out = []
    for mod in sorted(infos):
        mine = layer_of(mod)
        for target in sorted(infos[mod].imports):
            theirs = layer_of(target)
            if theirs != mine and theirs not in MAY_IMPORT.get(mine, ()):
                out.append(f"{mod} ({mine}) imports {target} ({theirs})")
    return out


def _is_private(name):
    return name.startswith("_") and name != "_" and not (name.startswith("__") and name.endswith("__"))


def _rel(path):
    return os.path.relpath(path, ROOT)


# ---------------------------------------------------------------- modules

def package_files():
    """{module name: [paths]} for cfgmask/**/*.py, .pyx, .pxd."""
    mods = defaultdict(list)
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PKG)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            stem, ext = os.path.splitext(fn)
            if ext not in (".py", ".pyx", ".pxd"):
                continue
            parts = _rel(os.path.join(dirpath, stem)).split(os.sep)
            if stem == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)].append(os.path.join(dirpath, fn))
    return dict(mods)


def _package_of(mod, path):
    return mod if os.path.basename(path).startswith("__init__.") else mod.rpartition(".")[0]


def _resolve(mod, path, level, name):
    """Absolute name of ``from <level dots><name> import ...`` in ``mod``."""
    if not level:
        return name or ""
    base = _package_of(mod, path).split(".")
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def _owning_module(name, modules):
    """The longest prefix of dotted ``name`` that is a cfgmask module, or None."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        cand = ".".join(parts[:i])
        if cand in modules:
            return cand
    return None


class ModuleInfo:
    def __init__(self):
        self.imports = set()          # cfgmask modules imported
        self.aliases = {}             # local name -> cfgmask module it is bound to
        self.defined = set()          # private names this module defines
        self.from_private = []        # (line, source module, name)
        self.attr_uses = []           # (line, base text, base module or None, attr)


# ----------------------------------------------------------------- .py (ast)

def _scan_py(mod, path, modules, info):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = _owning_module(a.name, modules)
                if target:
                    info.imports.add(target)
                    if a.asname:
                        info.aliases[a.asname] = target
                    elif a.name.split(".")[0] == PKG:
                        info.aliases[PKG] = PKG
        elif isinstance(node, ast.ImportFrom):
            _from_import(mod, path, node.lineno, node.level, node.module,
                         [(a.name, a.asname) for a in node.names], modules, info)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if _is_private(node.name):
                info.defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if _is_private(node.id):
                info.defined.add(node.id)
        elif isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Store) and _is_private(node.attr):
                info.defined.add(node.attr)
            elif isinstance(node.ctx, ast.Load) and _is_private(node.attr):
                info.attr_uses.append((node.lineno, _base_text(node.value), node.attr))
        elif isinstance(node, ast.Assign):
            # __slots__ = ("_a", "_b") defines those attributes
            if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
                for c in ast.walk(node.value):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and _is_private(c.value):
                        info.defined.add(c.value)


def _base_text(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _from_import(mod, path, line, level, name, names, modules, info):
    source = _resolve(mod, path, level, name)
    for n, asname in names:
        if n == "*":
            target = _owning_module(source, modules)
            if target:
                info.imports.add(target)
            continue
        full = f"{source}.{n}" if source else n
        if full in modules:                       # a submodule
            info.imports.add(full)
            info.aliases[asname or n] = full
            continue
        target = _owning_module(source, modules)
        if not target:
            continue
        info.imports.add(target)
        if _is_private(n) and target != mod:
            info.from_private.append((line, target, n))


# ------------------------------------------------- .pyx / .pxd (tokenize)

def _scan_cython(mod, path, modules, info):
    """Cython is not Python, so ``ast`` cannot read it; its token stream can.
    Statements are the token runs between NEWLINE tokens (brackets joined)."""
    with open(path, encoding="utf-8") as f:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(f.read()).readline)
                if t.type not in (tokenize.COMMENT, tokenize.NL)]
    stmt = []
    for t in toks + [None]:
        if t is None or t.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            if stmt:
                _cython_statement(mod, path, stmt, modules, info)
            stmt = []
        else:
            stmt.append(t)


def _cython_statement(mod, path, stmt, modules, info):
    s = [t.string for t in stmt]
    line = stmt[0].start[0]
    if s[0] == "from" and ("import" in s or "cimport" in s):
        k = s.index("import") if "import" in s else s.index("cimport")
        head = "".join(s[1:k])
        level = len(head) - len(head.lstrip("."))
        names, i, body = [], 0, [x for x in s[k + 1:] if x not in "()"]
        while i < len(body):
            if body[i] == ",":
                i += 1
                continue
            asname = body[i + 2] if i + 2 < len(body) and body[i + 1] == "as" else None
            names.append((body[i], asname))
            i += 3 if asname else 1
        if head.lstrip(".").startswith("libc") or head.lstrip(".").startswith("cpython"):
            return
        _from_import(mod, path, line, level, head.lstrip(".") or None, names, modules, info)
        return
    if s[0] in ("import", "cimport"):
        body = [x for x in s[1:] if x != ","]
        i = 0
        while i < len(body):
            name = body[i]
            while i + 2 < len(body) and body[i + 1] == ".":
                name += "." + body[i + 2]
                i += 2
            asname = body[i + 2] if i + 2 < len(body) and body[i + 1] == "as" else None
            target = _owning_module(name, modules)
            if target:
                info.imports.add(target)
                if asname:
                    info.aliases[asname] = target
            i += 3 if asname else 1
        return
    for j, t in enumerate(stmt):
        if t.type != tokenize.NAME or not _is_private(t.string):
            continue
        after_dot = j > 0 and s[j - 1] == "."
        if not after_dot:
            info.defined.add(t.string)          # declared or used bare: this module's
        elif j + 1 < len(s) and s[j + 1] == "=" and (j + 2 >= len(s) or s[j + 2] != "="):
            info.defined.add(t.string)          # obj._x = ...
        else:
            k = j - 1
            base = []
            while k > 0 and stmt[k - 1].type == tokenize.NAME:
                base.append(s[k - 1])
                if k - 2 >= 0 and s[k - 2] == ".":
                    k -= 2
                else:
                    break
            info.attr_uses.append((line, ".".join(reversed(base)) or None, t.string))


# ----------------------------------------------------------------- checks

def scan_package():
    files = package_files()
    modules = set(files)
    infos = {}
    for mod, paths in sorted(files.items()):
        info = infos[mod] = ModuleInfo()
        for p in paths:
            (_scan_py if p.endswith(".py") else _scan_cython)(mod, p, modules, info)
        info.imports.discard(mod)
    return files, infos


def import_cycles(infos):
    """Tarjan's strongly connected components; those with two or more modules."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(infos[v].imports):
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
                comps.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(infos):
        if v not in index:
            visit(v)
    return sorted(comps, key=lambda c: (-len(c), c))


def long_modules(files):
    out = []
    for mod, paths in files.items():
        for p in paths:
            if p.endswith((".py", ".pyx")):
                with open(p, encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                if n > MAX_LINES:
                    out.append((n, _rel(p)))
    return sorted(out, reverse=True)


def private_uses(files, infos):
    owners = defaultdict(set)
    for mod, info in infos.items():
        for name in info.defined:
            owners[name].add(mod)
    out = []
    for mod, info in sorted(infos.items()):
        where = _rel(files[mod][0])
        for line, src, name in info.from_private:
            out.append(f"{where}:{line}: from {src} import {name}")
        for line, base, name in info.attr_uses:
            if base in (None, "self", "cls"):
                continue
            root = base.split(".")[0]
            target = None
            if base in info.aliases:
                target = info.aliases[base]
            elif root == PKG and root in info.aliases:
                target = _owning_module(base, set(infos))
            if target is not None:
                if target != mod and name not in {n for n in infos[target].aliases}:
                    out.append(f"{where}:{line}: {base}.{name} (module {target})")
                continue
            if name in info.defined or name in info.aliases:
                continue
            others = sorted(owners.get(name, ()))
            if others:
                out.append(f"{where}:{line}: {base}.{name} (defined in {', '.join(others)})")
    return sorted(set(out), key=_line_key)


def _line_key(s):
    path, line, rest = s.split(":", 2)
    return path, int(line), rest


def project_files():
    """Files git tracks, plus untracked files it does not ignore."""
    try:
        r = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True)
        names = [n for n in r.stdout.decode("utf-8", "replace").split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            dirnames[:] = [d for d in dirnames
                           if not d.startswith(".") and d not in ("build", "dist", "__pycache__")
                           and not d.endswith(".egg-info")]
            names += [_rel(os.path.join(dirpath, f)) for f in filenames]
    return sorted(n for n in names if os.path.isfile(os.path.join(ROOT, n)))


def sys_path_edits(names):
    out = []
    for n in names:
        if not n.endswith(".py") or os.path.basename(n) == "conftest.py" or n.startswith(PKG + "/"):
            continue
        try:
            with open(os.path.join(ROOT, n), encoding="utf-8") as f:
                tree = ast.parse(f.read(), n)
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("insert", "append")
                    and _base_text(node.func.value) == "sys.path"):
                out.append(f"{n}:{node.lineno}: {_base_text(node.func.value)}.{node.func.attr}")
    return out


def brief_references(names):
    out = []
    for n in names:
        try:
            with open(os.path.join(ROOT, n), encoding="utf-8") as f:
                for i, text in enumerate(f, 1):
                    if _BRIEF.search(text):
                        out.append(f"{n}:{i}: {text.strip()[:100]}")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def main():
    files, infos = scan_package()
    names = project_files()
    cycles = import_cycles(infos)
    sections = [
        ("import cycles among cfgmask modules",
         [f"{len(c)} modules: " + " ".join(c) for c in cycles]),
        (f"cfgmask modules over {MAX_LINES:,} lines",
         [f"{p}: {n:,} lines" for n, p in long_modules(files)]),
        ("uses of another cfgmask module's _private names", private_uses(files, infos)),
        ("sys.path.insert/append outside conftest.py", sys_path_edits(names)),
        ("references to the design brief outside the repository", brief_references(names)),
        ("imports against the layers", layer_violations(infos)),
    ]
    for title, offenders in sections:
        print(f"{title}: {len(offenders)}")
        for o in offenders:
            print(f"    {o}")
    print("counts: " + " ".join(str(len(o)) for _, o in sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
