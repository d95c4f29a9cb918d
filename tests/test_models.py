"""The converted-model cache: one copy per GGUF file's content, not per install.

A GGUF copy in a new virtual environment has a new mtime.  The old key
(size and mtime) gave each venv its own 517 MB conversion of the default
model; these tests pin the content key, its memo and the removal of copies
in the old layout.  No model is converted here: the files are stand-ins.
"""

import hashlib
import json
import os

import pytest

from cfgmask import models


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CFGMASK_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _gguf(path, data, mtime_ns=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def test_same_bytes_in_two_installs_share_one_copy(cache, tmp_path):
    a = _gguf(tmp_path / "venv-a" / "m.gguf", b"GGUF" + bytes(range(256)) * 40, 1_000_000_000_000_000_000)
    b = _gguf(tmp_path / "venv-b" / "m.gguf", b"GGUF" + bytes(range(256)) * 40, 2_000_000_000_000_000_000)
    assert models.converted_dir(a) == models.converted_dir(b)
    want = hashlib.sha256(a.read_bytes()).hexdigest()[:16]
    assert models.converted_dir(a).name == f"m-{a.stat().st_size}-{want}"


def test_other_bytes_of_the_same_size_get_another_copy(cache, tmp_path):
    a = _gguf(tmp_path / "a" / "m.gguf", b"GGUF" + b"x" * 100, 1_000_000_000_000_000_000)
    b = _gguf(tmp_path / "b" / "m.gguf", b"GGUF" + b"y" * 100, 1_000_000_000_000_000_000)
    assert models.converted_dir(a) != models.converted_dir(b)


def test_the_memo_follows_a_rewritten_file(cache, tmp_path):
    f = _gguf(tmp_path / "m.gguf", b"GGUF" + b"x" * 100, 1_000_000_000_000_000_000)
    first = models.converted_dir(f)
    memo = json.loads((cache / "models" / "digests.json").read_text())
    assert list(memo.values()) == [first.name.rsplit("-", 1)[1]]
    _gguf(f, b"GGUF" + b"z" * 100, 1_000_000_000_000_000_001)    # same size, new bytes and mtime
    second = models.converted_dir(f)
    assert second != first
    assert second.name.endswith(hashlib.sha256(f.read_bytes()).hexdigest()[:16])


def test_the_memo_is_used_and_a_damaged_memo_is_ignored(cache, tmp_path, monkeypatch):
    f = _gguf(tmp_path / "m.gguf", b"GGUF" + b"x" * 100)
    first = models.converted_dir(f)
    calls = []
    real = models._file_sha256
    monkeypatch.setattr(models, "_file_sha256", lambda p: calls.append(p) or real(p))
    assert models.converted_dir(f) == first and calls == []      # memoised: no rehash
    (cache / "models" / "digests.json").write_text("{not json")
    assert models.converted_dir(f) == first and len(calls) == 1  # damaged: rehashed, same answer


def test_the_memo_forgets_files_that_are_gone(cache, tmp_path):
    gone = _gguf(tmp_path / "gone.gguf", b"GGUF1")
    models.converted_dir(gone)
    gone.unlink()
    models.converted_dir(_gguf(tmp_path / "kept.gguf", b"GGUF2"))
    memo = json.loads((cache / "models" / "digests.json").read_text())
    assert [k.rsplit("|", 2)[0] for k in memo] == [str((tmp_path / "kept.gguf").resolve())]


def test_only_complete_copies_of_this_model_in_the_old_layout_are_removed(cache, tmp_path):
    f = _gguf(tmp_path / "m.gguf", b"GGUF" + b"x" * 100)
    size = f.stat().st_size
    root = cache / "models"

    def copy(name, complete=True):
        d = root / name
        d.mkdir(parents=True)
        if complete:
            (d / models._SOURCE_FILE).write_text("{}")
        return d

    old = copy(f"m-{size}-1796540482592109849")
    unfinished = copy(f"m-{size}-1796544002156319062", complete=False)
    other_model = copy(f"n-{size}-1796540482592109849")
    other_size = copy(f"m-{size + 1}-1796540482592109849")
    current = copy(models.converted_dir(f).name)
    digits_only = copy(f"m-{size}-1234567890123456")   # a content key may be all digits
    assert models.remove_legacy_copies(f) == [old]
    assert not old.exists()
    assert all(d.exists() for d in (unfinished, other_model, other_size, current, digits_only))


def test_an_existing_copy_is_reused_without_converting(cache, tmp_path):
    pytest.importorskip("transformers")
    f = _gguf(tmp_path / "m.gguf", b"GGUF" + b"x" * 100)
    target = models.converted_dir(f)
    target.mkdir(parents=True)
    (target / models._SOURCE_FILE).write_text("{}")
    assert models.convert_gguf(f, progress=None) == target
