"""The wheel ships every package: pyproject.toml's explicit list names each
folder under cfgmask/ that has an ``__init__.py`` (a folder left off is
silently missing from ``pip wheel .``, as cfgmask.frontends.json_schema once was), and
the declared dependencies are ranges, never exact pins."""
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        return f.read()


def _listed_packages(text):
    m = re.search(r"^packages\s*=\s*\[(.*?)\]", text, re.M | re.S)
    assert m, "pyproject.toml has no [tool.setuptools] packages list"
    return set(re.findall(r'"([^"]+)"', m.group(1)))


def test_every_package_is_listed():
    listed = _listed_packages(_pyproject())
    found = set()
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "cfgmask")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        if "__init__.py" in filenames:
            rel = os.path.relpath(dirpath, ROOT)
            found.add(rel.replace(os.sep, "."))
    missing = found - listed
    assert not missing, f"packages missing from pyproject.toml's packages list: {sorted(missing)}"


def test_every_data_folder_is_listed():
    """A folder under cfgmask/ without ``__init__.py`` (package data only, such as
    the JSON Schema format tables) is listed too: setuptools otherwise ships it
    through its parent's package-data with a "package would be ignored"
    warning, and says a later version may leave it out."""
    listed = _listed_packages(_pyproject())
    unlisted = []
    for dirpath, dirnames, _filenames in os.walk(os.path.join(ROOT, "cfgmask")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = os.path.relpath(dirpath, ROOT).replace(os.sep, ".")
        if rel not in listed:
            unlisted.append(rel)
    assert not unlisted, f"folders missing from pyproject.toml's packages list: {sorted(unlisted)}"


def test_dependencies_are_ranges():
    text = _pyproject()
    deps = re.findall(r'"([A-Za-z0-9_.\-]+(?:\[[^\]]*\])?\s*==[^"]*)"', text)
    assert not deps, f"exact pins belong in .ci/constraints.txt, not pyproject.toml: {deps}"


def test_constraints_satisfy_the_ranges():
    # the versions CI pins must be inside the ranges the library declares
    from packaging.requirements import Requirement
    from packaging.version import Version
    text = _pyproject()
    reqs = {}
    for spec in re.findall(r'^\s*"([A-Za-z][^"]*)",?\s*(?:#.*)?$', text, re.M):
        try:
            r = Requirement(spec)
        except Exception:
            continue
        reqs.setdefault(r.name.lower(), []).append(r.specifier)
    for name in ("constraints.txt", "constraints-oldest.txt"):
        with open(os.path.join(ROOT, ".ci", name), encoding="utf-8") as f:
            for line in f:
                line = line.split("#")[0].strip()
                if not line:
                    continue
                pkg, ver = line.split("==")
                for spec in reqs.get(pkg.lower(), []):
                    assert Version(ver) in spec, f"{name}: {pkg}=={ver} is outside {spec}"
