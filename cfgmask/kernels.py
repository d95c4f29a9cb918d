"""Device mask kernels: apply an int32 token bitmask to a batch of logits, in place.

The bitmask is ``[B, ceil(V/32)]`` int32, bit ``t & 31`` of word ``t >> 5`` set
when token ``t`` is allowed (the llguidance/XGrammar layout that
:meth:`cfgmask.Matcher.fill_bitmask` writes).  :func:`apply_token_bitmask_`
checks its arguments and picks a kernel: a vectorised torch kernel (any
device; the default on CUDA), a numpy kernel (the default on the CPU, ~3x
faster there) or, opt-in, a Triton kernel on CUDA.  All of them write exactly
the same values.  :func:`apply_torch`, :func:`apply_numpy` and
:func:`apply_triton` are the kernels themselves (2-D tensors of matching rows,
no checks).

Used by the integrations: ``cfgmask.hf`` (the Hugging Face logits processor),
``cfgmask.generate`` and ``cfgmask.vllm``.  Imports torch (and Triton on first
use of its kernel); nothing else of cfgmask but its errors.
"""

import numpy as np
import torch

from cfgmask.errors import ConfigurationError

__all__ = ["apply_token_bitmask_", "unpack_bitmask", "triton_available", "apply_torch", "apply_numpy",
           "apply_triton", "rowwise"]

_BIT_TABLES = {}


def _bit_table(device):
    """``int32 [32]`` with entry ``i`` = ``1 << i`` (entry 31 is ``INT32_MIN``), cached per device."""
    key = str(device)
    t = _BIT_TABLES.get(key)
    if t is None:
        vals = [1 << i for i in range(31)] + [-(1 << 31)]
        t = torch.tensor(vals, dtype=torch.int32, device=device)
        _BIT_TABLES[key] = t
    return t


def _blocked(bitmask, width):
    """Bool ``[B, min(width, 32 W)]``: True where the bit is clear (token not allowed)."""
    B, W = bitmask.shape
    blocked = torch.bitwise_and(bitmask.unsqueeze(-1), _bit_table(bitmask.device)).eq(0).view(B, W * 32)
    return blocked[:, :width]


def unpack_bitmask(bitmask, width):
    """Bool tensor ``[B, width]``: True where the token is allowed.

    ``bitmask`` is int32 ``[B, W]`` (or ``[W]``); bits past ``32 * W`` are False.
    """
    if not isinstance(bitmask, torch.Tensor):
        raise ConfigurationError(f"bitmask must be an int32 torch tensor, got {type(bitmask).__name__}")
    squeeze = bitmask.dim() == 1
    bm = bitmask.unsqueeze(0) if squeeze else bitmask
    allowed = torch.zeros((bm.shape[0], width), dtype=torch.bool, device=bm.device)
    b = _blocked(bm, width)
    allowed[:, : b.shape[1]] = b.logical_not()
    return allowed[0] if squeeze else allowed


def apply_torch(logits, bitmask):
    """The torch kernel, any device: ``logits [B, V]`` masked in place by ``bitmask [B, W]``."""
    V = logits.shape[-1]
    blocked = _blocked(bitmask, V)
    n = blocked.shape[1]
    if n == V:
        logits.masked_fill_(blocked, float("-inf"))
    else:  # the bitmask is narrower than the logits: the tail is never allowed
        logits[:, :n].masked_fill_(blocked, float("-inf"))
        logits[:, n:] = float("-inf")


_TRITON = {}


def triton_available():
    """True when Triton imports and a CUDA device is present (the Triton kernel can run)."""
    if not torch.cuda.is_available():
        return False
    try:
        import triton  # noqa: F401
    except Exception:
        return False
    return True


def _triton_kernel():
    """Build (once) the Triton apply kernel.  Importing triton is deferred to first use."""
    if "kernel" in _TRITON:
        return _TRITON["kernel"]
    import triton
    import triton.language as tl

    @triton.jit
    def _apply_bitmask_kernel(logits_ptr, mask_ptr, n_cols, n_mask_bits, logits_stride, mask_stride,
                              BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        in_row = offs < n_cols
        words = tl.load(mask_ptr + row * mask_stride + (offs >> 5),
                        mask=in_row & (offs < n_mask_bits), other=0)
        allowed = ((words >> (offs & 31)) & 1) != 0
        neg = tl.full((BLOCK,), float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
        tl.store(logits_ptr + row * logits_stride + offs, neg, mask=in_row & (allowed == 0))

    _TRITON["kernel"] = (_apply_bitmask_kernel, triton.cdiv)
    return _TRITON["kernel"]


def apply_triton(logits, bitmask, block=2048):
    """The Triton kernel (CUDA, or Triton's interpreter): as :func:`apply_torch`; the
    logits' rows and the bitmask contiguous."""
    kernel, cdiv = _triton_kernel()
    B, V = logits.shape
    grid = (B, cdiv(V, block))
    kernel[grid](logits, bitmask, V, bitmask.shape[1] * 32, logits.stride(0), bitmask.stride(0),
                 BLOCK=block)


_NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64)


def apply_numpy(logits, bitmask):
    """The numpy kernel (CPU float16/32/64 logits, contiguous bitmask): as :func:`apply_torch`."""
    # CPU only: unpack the *inverted* bytes, so set bits are the blocked tokens, and
    # write -inf through a boolean view.  Single-threaded and about 3x faster than
    # the torch kernel on a CPU; no OpenMP region, so no stalls on a busy machine.
    V = logits.shape[-1]
    lg = logits.numpy()
    inv = np.invert(bitmask.numpy().view(np.uint8))
    blocked = np.unpackbits(inv, axis=1, bitorder="little").view(np.bool_)
    n = min(V, blocked.shape[1])
    np.copyto(lg[:, :n], -np.inf, where=blocked[:, :n])
    if n < V:
        lg[:, n:] = -np.inf


def _choose_kernel(kernel, logits):
    if kernel != "auto":
        return kernel
    if logits.device.type == "cpu":
        if logits.dtype in _NUMPY_DTYPES and logits.stride(-1) == 1 and not logits.requires_grad:
            return "numpy"
        return "torch"
    return "torch"


def apply_token_bitmask_(logits, bitmask, kernel="auto"):
    """Set ``logits[b, t] = -inf`` wherever bit ``t`` of row ``b`` of ``bitmask`` is clear, in place.

    ``logits`` is a float tensor ``[B, V]`` (or ``[V]``); ``bitmask`` an int32
    tensor ``[B, W]`` (or ``[W]``) on the same device.  Tokens ``t >= 32 * W``
    are masked.  ``kernel``: ``"torch"`` (any device: ``bitwise_and`` against
    ``1 << arange(32)``, then ``masked_fill_``), ``"numpy"`` (CPU float16/32/64
    only), ``"triton"`` (CUDA only) or ``"auto"`` (numpy on the CPU when it
    can, torch otherwise).  All of them write exactly the same values.
    Returns ``logits``.
    """
    if not isinstance(logits, torch.Tensor) or not isinstance(bitmask, torch.Tensor):
        raise ConfigurationError(f"logits and bitmask must be torch tensors, got {type(logits).__name__} "
                                 f"and {type(bitmask).__name__}")
    if bitmask.dtype != torch.int32:
        raise ConfigurationError(f"bitmask must be int32, got {bitmask.dtype}")
    if bitmask.device != logits.device:
        raise ConfigurationError(f"bitmask is on {bitmask.device} but logits are on {logits.device}")
    if not logits.is_floating_point():
        raise ConfigurationError(f"logits must be a float tensor, got {logits.dtype}")
    lg, bm = logits, bitmask
    if lg.dim() == 1:
        lg, bm = lg.unsqueeze(0), bm.reshape(1, -1)
    if lg.dim() != 2 or bm.dim() != 2 or bm.shape[0] != lg.shape[0]:
        raise ConfigurationError(f"shapes do not match: logits {tuple(logits.shape)}, bitmask {tuple(bitmask.shape)}")
    kernel = _choose_kernel(kernel, lg)
    if kernel == "triton":
        if lg.device.type != "cuda":
            raise ConfigurationError("the Triton kernel needs CUDA tensors")
        if lg.stride(-1) != 1 or not bm.is_contiguous():
            apply_torch(lg, bm)
        else:
            apply_triton(lg, bm)
    elif kernel == "torch":
        apply_torch(lg, bm)
    elif kernel == "numpy":
        if lg.device.type != "cpu" or lg.dtype not in _NUMPY_DTYPES:
            raise ConfigurationError("the numpy kernel needs CPU float16/float32/float64 logits")
        apply_numpy(lg, bm.contiguous())
    else:
        raise ConfigurationError(f"kernel must be 'auto', 'torch', 'numpy' or 'triton', got {kernel!r}")
    return logits


def rowwise(scores, op):
    """Row max (``op="max"``) or argmax (any other ``op``) of ``scores [B, V]``.  On the CPU
    through numpy: torch's parallel reductions can stall for milliseconds on an
    oversubscribed machine (measured: 16 ms for one 49k row)."""
    if scores.device.type == "cpu" and scores.dtype in _NUMPY_DTYPES and not scores.requires_grad:
        a = scores.numpy()
        return a.max(axis=-1) if op == "max" else a.argmax(axis=-1)
    return scores.amax(dim=-1) if op == "max" else scores.argmax(dim=-1)
