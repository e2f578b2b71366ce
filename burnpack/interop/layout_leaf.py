"""Leaf modules: one tensor at a time (burn-store's ``PyTorchToBurnAdapter`` and Hugging Face's
``Conv1D``).

* ``Linear``: the 2-D ``weight`` transposed, ``[out, in]`` (torch) ↔ ``[in, out]`` (Burn's
  ``Linear``, ``crates/burn-nn/src/modules/linear.rs``: "Matrix of shape ``[d_input, d_output]``").
* ``Conv1D`` (Hugging Face, GPT-2 family): already ``[in, out]``, so Burn's ``Linear`` takes it as
  it is — never transposed.
* ``BatchNorm``, ``LayerNorm``, ``GroupNorm``, ``RmsNorm``: ``weight``/``bias`` ↔ ``gamma``/``beta``.
* ``Embedding``, the convolutions, ``InstanceNorm``, ``PRelu``, ``DeformConv2d``: same layout in
  both (burn-store leaves ``InstanceNorm`` and ``PRelu`` as they are, and so do we).
"""

from __future__ import annotations

import re
from typing import ClassVar

from .tensors import Entry
from .layout_base import BurnConfig, Direction, Group, ModuleKind, Recognition, View, transpose

__all__ = ["LEAF_KINDS"]

_TORCH_NORM = {"weight": "gamma", "bias": "beta"}
_BURN_NORM = {v: k for k, v in _TORCH_NORM.items()}


def _only(view: View, *params: str) -> bool:
    """``view`` holds no child modules and no tensors but ``params``."""
    return not view.children and set(view.params) <= set(params)


def _hinted(view: View, pattern: str) -> bool:
    return re.search(pattern, view.path.rpartition(".")[2], re.IGNORECASE) is not None


class Linear(ModuleKind):
    name = "Linear"
    torch_classes = ("Linear", "LazyLinear", "NonDynamicallyQuantizableLinear")

    def convert_entry(self, entry: Entry, direction: Direction) -> Entry:
        if entry.param == "weight" and entry.rank == 2:
            return transpose(entry)
        return entry

    def recognise(self, view: View, side: str) -> Recognition | None:
        w, b = view.shape("weight"), view.shape("bias")
        if not _only(view, "weight", "bias") or w is None or len(w) != 2:
            return None
        if b is None:
            return Recognition("a 2-D weight without bias: a Linear without bias or an Embedding", self, exact=False, score=1)
        out_dim = w[0] if side == "torch" else w[1]
        if b != (out_dim,):
            return None
        if side == "burn":
            return Recognition("a 2-D weight [in, out] and a bias of its second dim", self)
        if w[0] != w[1]:
            return Recognition("a 2-D weight [out, in] and a bias of its first dim", self)
        return Recognition(f"a square weight {list(w)} with bias: torch's Linear ([out, in]) or Hugging Face's Conv1D ([in, out])",
                           self, exact=False, score=1)  # fmt: skip

    def config(self, burn: Group) -> BurnConfig | None:
        weight = burn.entries.get("weight")
        if weight is None or weight.rank != 2:
            return None
        d_in, d_out = weight.shape
        return BurnConfig(f"LinearConfig::new({d_in}, {d_out})" + ("" if "bias" in burn.entries else ".with_bias(false)"))


class Conv1D(ModuleKind):
    """Hugging Face's ``transformers.pytorch_utils.Conv1D`` (GPT-2's attention and MLP): a linear
    map stored ``[in, out]`` — Burn's ``Linear`` layout already, so nothing is transposed; back,
    the same."""

    name = "Conv1D"
    torch_classes = ("Conv1D",)

    def recognise(self, view: View, side: str) -> Recognition | None:
        w, b = view.shape("weight"), view.shape("bias")
        if side != "torch" or not _only(view, "weight", "bias") or w is None or len(w) != 2 or b != (w[1],):
            return None
        if w[0] != w[1]:
            return Recognition("a 2-D weight [in, out] and a bias of its second dim: Hugging Face's Conv1D", self)
        return Recognition(f"a square weight {list(w)} with bias", self, exact=False, score=0)

    def convert_entry(self, entry: Entry, direction: Direction) -> Entry:
        changes: dict[str, str] = {"module_type": "Struct:Linear"} if direction is Direction.TO_BURN else {}
        if entry.param == "weight" and entry.rank == 2:
            changes["step"] = "kept [in, out]: Conv1D's layout is Burn's Linear's"
        return entry.replace(**changes) if changes else entry

    def config(self, burn: Group) -> BurnConfig | None:
        return Linear().config(burn)


class _Norm(ModuleKind):
    """``weight``/``bias`` → ``gamma``/``beta`` (Burn's norms' field names)."""

    renamed: ClassVar[bool] = True
    config_code: ClassVar[str | None] = None
    """The config's constructor, ``{n}`` for the features (None: no config line)."""
    config_yours: ClassVar[tuple[str, ...]] = ("epsilon",)

    def convert_entry(self, entry: Entry, direction: Direction) -> Entry:
        table = _TORCH_NORM if direction is Direction.TO_BURN else _BURN_NORM
        new = table.get(entry.param) if self.renamed else None
        if new is None:
            return entry
        head = entry.module_path
        return entry.replace(name=f"{head}.{new}" if head else new, step=f"renamed {entry.param} -> {new}")

    def alternative_name(self, param: str, direction: Direction) -> str | None:
        if not self.renamed:
            return None
        return (_BURN_NORM if direction is Direction.TO_BURN else _TORCH_NORM).get(param)

    def config(self, burn: Group) -> BurnConfig | None:
        gamma = burn.entries.get("gamma", burn.entries.get("running_mean"))
        if self.config_code is None or gamma is None or gamma.rank != 1:
            return None
        return BurnConfig(self.config_code.format(n=gamma.shape[0]) + self._suffix(burn), list(self.config_yours))

    def _suffix(self, burn: Group) -> str:
        return ""


class BatchNorm(_Norm):
    name = "BatchNorm"
    config_code = "BatchNormConfig::new({n})"
    config_yours = ("epsilon and momentum",)
    torch_classes = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d")

    def recognise(self, view: View, side: str) -> Recognition | None:
        if not view.children and {"running_mean", "running_var"} <= set(view.params):
            return Recognition("running_mean and running_var", self)
        return None



class LayerNorm(_Norm):
    name = "LayerNorm"
    config_code = "LayerNormConfig::new({n})"
    torch_classes = ("LayerNorm",)

    def recognise(self, view: View, side: str) -> Recognition | None:
        if view.children:
            return None
        names = set(view.params)
        if side == "burn" and "gamma" in names and names <= {"gamma", "beta"}:
            return Recognition("gamma (Burn's name for a norm's scale)", self)
        w, b = view.shape("weight"), view.shape("bias")
        if side == "torch" and names == {"weight", "bias"} and w is not None and len(w) == 1 and b == w:
            return Recognition("1-D weight and bias of one length (GroupNorm's are the same, and map the same)", self)
        if side == "torch" and names == {"weight"} and w is not None and len(w) == 1:
            return Recognition("a lone 1-D weight: a LayerNorm without bias, an RmsNorm or a PReLU", self, exact=False, score=1)
        return None

    def _suffix(self, burn: Group) -> str:
        return "" if "beta" in burn.entries else ".with_bias(false)"


class GroupNorm(_Norm):
    name = "GroupNorm"
    config_code = "GroupNormConfig::new(num_groups, {n})"
    config_yours = ("num_groups", "epsilon")
    torch_classes = ("GroupNorm",)



class RmsNorm(_Norm):
    name = "RmsNorm"
    config_code = "RmsNormConfig::new({n})"
    torch_classes = ("RMSNorm",)

    def recognise(self, view: View, side: str) -> Recognition | None:
        w = view.shape("weight")
        if side == "torch" and _only(view, "weight") and w is not None and len(w) == 1:
            return Recognition("a lone 1-D weight", self, exact=False, score=2 if _hinted(view, "rms") else 0)
        return None



class InstanceNorm(_Norm):
    name = "InstanceNorm"
    torch_classes = ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d")
    renamed = False  # burn-store's adapter leaves InstanceNorm's weight/bias as they are


class PRelu(ModuleKind):
    name = "PRelu"
    torch_classes = ("PReLU",)

    def recognise(self, view: View, side: str) -> Recognition | None:
        w = view.shape("weight")
        if side == "torch" and _only(view, "weight") and w is not None and len(w) == 1:
            return Recognition("a lone 1-D weight", self, exact=False, score=2 if _hinted(view, "prelu|act") else -1)
        return None


class Embedding(ModuleKind):
    name = "Embedding"
    torch_classes = ("Embedding",)

    def recognise(self, view: View, side: str) -> Recognition | None:
        w = view.shape("weight")
        if _only(view, "weight") and w is not None and len(w) == 2:
            hinted = _hinted(view, r"emb|wte|wpe|tok|pos|vocab")
            return Recognition("a 2-D weight without bias", self, exact=False, score=2 if hinted else 0)
        return None

    def config(self, burn: Group) -> BurnConfig | None:
        weight = burn.entries.get("weight")
        return None if weight is None or weight.rank != 2 else BurnConfig(f"EmbeddingConfig::new({weight.shape[0]}, {weight.shape[1]})")


class _Conv(ModuleKind):
    rank: ClassVar[int]
    transposed: ClassVar[bool] = False

    def recognise(self, view: View, side: str) -> Recognition | None:
        w = view.shape("weight")
        if self.transposed or not _only(view, "weight", "bias") or w is None or len(w) != self.rank + 2:
            return None
        return Recognition(f"a {self.rank + 2}-D weight (a transposed convolution's is laid out the same)", self)

    def config(self, burn: Group) -> BurnConfig | None:
        """``Conv1dConfig::new(in, out, k)``; the others take ``[in, out]`` and the kernel as an
        array (``crates/burn-nn/src/modules/conv/*.rs``). torch stores a convolution's weight
        ``[out, in / groups, k...]`` and a transposed one's ``[in, out / groups, k...]``, as Burn."""
        weight = burn.entries.get("weight")
        if weight is None or weight.rank != self.rank + 2:
            return None
        a, b, *kernel = weight.shape
        c_in, c_out = (a, b) if self.transposed else (b, a)
        kernel_text = str(kernel[0]) if self.rank == 1 else str(kernel)
        channels = f"{c_in}, {c_out}" if self.name == "Conv1d" else f"[{c_in}, {c_out}]"
        code = f"{self.name}Config::new({channels}, {kernel_text})" + ("" if "bias" in burn.entries else ".with_bias(false)")
        return BurnConfig(code, ["stride, padding, dilation and groups (with groups > 1, the channels above are per group)"])


def _conv(dims: int, transposed: bool) -> type[_Conv]:
    name = f"ConvTranspose{dims}d" if transposed else f"Conv{dims}d"
    torch = (name, f"Lazy{name}")
    return type(name, (_Conv,), {"name": name, "torch_classes": torch, "rank": dims, "transposed": transposed})


class DeformConv2d(ModuleKind):
    name = "DeformConv2d"
    torch_classes = ("DeformConv2d",)


LEAF_KINDS: tuple[ModuleKind, ...] = (
    Linear(), Conv1D(), BatchNorm(), LayerNorm(), GroupNorm(), RmsNorm(), InstanceNorm(), PRelu(), Embedding(),
    *(_conv(d, t)() for t in (False, True) for d in (1, 2, 3)), DeformConv2d(),
)  # fmt: skip
