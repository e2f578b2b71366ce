"""``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` (and their stacks) ↔ Burn's.

Burn's layers (``crates/burn-nn/src/modules/transformer/encoder.rs`` and ``decoder.rs``, commit
2c06be35) hold ``mha`` (decoder: ``self_attn`` and ``cross_attn``), ``pwff.linear_inner`` /
``pwff.linear_outer`` (``pwff.rs``) and ``norm_1``, ``norm_2`` (decoder: ``norm_3``). Which norm
is applied where is not torch's, and it differs between pre- and post-norm; from their
``forward`` functions:

* encoder, post-norm: ``x = norm_1(x + mha(x))``, ``x = norm_2(x + pwff(x))`` — torch's
  ``norm1`` and ``norm2``; pre-norm: ``x += mha(norm_2(x))``, ``x += pwff(norm_1(x))`` — so
  torch's ``norm1`` (before attention) is Burn's ``norm_2`` and ``norm2`` is ``norm_1``;
* decoder, post-norm: ``norm_1``, ``norm_2``, ``norm_3`` after self-attention, cross-attention and
  the feed-forward, as torch's ``norm1..3``; pre-norm: ``norm_3`` before self-attention,
  ``norm_1`` before cross-attention, ``norm_2`` before the feed-forward — torch's ``norm1``,
  ``norm2``, ``norm3`` become ``norm_3``, ``norm_1``, ``norm_2``.

So the layout depends on ``norm_first``, which the weights cannot tell: it comes from the live
module, the type spelling (``TransformerEncoderLayer(norm_first=true)``, also given once for a
stack) or, when asked, a best guess (torch's default, post-norm) that the report names. Refused:
a layer without biases (torch's ``bias=False``: Burn's ``TransformerEncoderConfig`` always builds
them). A torch stack's final ``norm`` has no place in Burn's ``TransformerEncoder``: it stays a
``LayerNorm`` of its own.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .tensors import Entry
from .layout_attention import MultiHeadAttention
from .layout_base import BurnConfig, Direction, Group, ModuleKind, Recognition, Setting, View, rename

__all__ = ["TRANSFORMER_KINDS"]

_LINEAR, _LAYER_NORM = "Struct:Linear", "Struct:LayerNorm"
_BURN_DEFAULTS = {"dropout": 0.1, "layer_norm_eps": 1e-5}


def _leaf(name: str) -> ModuleKind:
    from .layout_leaf import LEAF_KINDS

    return next(k for k in LEAF_KINDS if k.name == name)


def _activation(function: Any) -> str:
    """torch's activation of a layer as Burn's ``ActivationConfig`` variant name, or its own name."""
    import torch

    if function is torch.nn.functional.relu or isinstance(function, torch.nn.ReLU):
        return "relu"
    if function is torch.nn.functional.gelu:
        return "gelu"
    if isinstance(function, torch.nn.GELU):
        return "gelu_tanh" if function.approximate == "tanh" else "gelu"
    return getattr(function, "__name__", type(function).__name__)


_ACTIVATIONS = {"relu": "ActivationConfig::Relu", "gelu": "ActivationConfig::Gelu", "gelu_tanh": "ActivationConfig::GeluApproximate"}


class _Layer(ModuleKind):
    structural = True
    subtree = True
    settings = {"norm_first": "pre-norm (true) or post-norm (false)", "n_heads": "attention heads", "activation": "relu, gelu or gelu_tanh",
                "dropout": "dropout rate", "layer_norm_eps": "the norms' epsilon", "batch_first": "input [batch, seq, d_model]"}  # fmt: skip
    attentions: ClassVar[tuple[tuple[str, str], ...]]
    """(torch child, Burn child) of each attention, in Burn's struct order."""
    norms_post: ClassVar[dict[str, str]]
    norms_pre: ClassVar[dict[str, str]]
    stack: ClassVar[str]

    def settings_of(self, module: Any) -> dict[str, Setting]:
        return {"norm_first": bool(module.norm_first), "n_heads": int(module.self_attn.num_heads),
                "activation": _activation(module.activation), "dropout": float(module.dropout.p),
                "layer_norm_eps": float(module.norm1.eps), "batch_first": bool(module.self_attn.batch_first)}  # fmt: skip

    # -- recognising -------------------------------------------------------------------------
    def _torch_children(self) -> set[str]:
        return {t for t, _ in self.attentions} | {"linear1", "linear2"} | set(self.norms_post)

    def _burn_children(self) -> set[str]:
        return {b for _, b in self.attentions} | {"pwff"} | set(self.norms_post.values())

    def recognise(self, view: View, side: str) -> Recognition | None:
        mha = MultiHeadAttention()
        if view.params:
            return None
        if side == "torch" and set(view.children) == self._torch_children():
            if all(mha.recognise(view.children[t], side) for t, _ in self.attentions):
                return Recognition(f"children named as torch's nn.{self.torch_classes[0]}'s ({', '.join(sorted(view.children))})", self)
        if side == "burn" and set(view.children) == self._burn_children():
            pwff = view.children["pwff"]
            if set(pwff.children) == {"linear_inner", "linear_outer"} and all(mha.recognise(view.children[b], side) for _, b in self.attentions):
                return Recognition(f"Burn's {self.name} fields ({', '.join(sorted(view.children))})", self)
        return None

    # -- both ways ---------------------------------------------------------------------------
    def _children(self, norm_first: bool) -> list[tuple[str, str, ModuleKind]]:
        """(torch child, Burn child, kind) in Burn's struct order."""
        norms = self.norms_pre if norm_first else self.norms_post
        out: list[tuple[str, str, ModuleKind]] = [(t, b, MultiHeadAttention()) for t, b in self.attentions]
        out += [("linear1", "pwff.linear_inner", _leaf("Linear")), ("linear2", "pwff.linear_outer", _leaf("Linear"))]
        out += [(t, b, _leaf("LayerNorm")) for t, b in sorted(norms.items(), key=lambda item: item[1])]
        return out

    def convert(self, group: Group, direction: Direction) -> list[Entry]:
        norm_first = group.setting("norm_first")
        if norm_first is None:
            if not group.best_guess:
                spelled = f"{self.name}(norm_first=true)"
                return group.refuse(
                    f"pre- or post-norm cannot be told from the weights, and Burn places its norms differently for each: give "
                    f"module_types={{'{group.path}': '{spelled}'}} (or norm_first=false), the live module, or best_guess=True"
                )
            norm_first = group.guess("norm_first", False, "torch's default, post-norm")
        children = self._children(bool(norm_first))
        if direction is Direction.TO_TORCH:
            children = sorted(children, key=lambda c: self._torch_order(c[0]))
        src_of = (lambda t, b: t) if direction is Direction.TO_BURN else (lambda t, b: b)
        dst_of = (lambda t, b: b) if direction is Direction.TO_BURN else (lambda t, b: t)
        known = {src_of(t, b) for t, b, _ in children}
        extra = sorted(rel for rel in group.entries if not any(rel.startswith(k + ".") for k in known))
        if extra:
            return group.refuse(f"tensors {self.name} does not name: {', '.join(map(group.full, extra))}")
        absent = [group.full(src_of(t, b)) for t, b, _ in children if not group.under(src_of(t, b))]
        if absent:
            return group.refuse(f"no {', '.join(absent)}")
        unbiased = [group.full(src_of(t, b)) for t, b, _ in children
                    if not any(rel.rpartition(".")[2] in ("bias", "beta", "in_proj_bias") for rel in group.under(src_of(t, b)))]  # fmt: skip
        if unbiased:
            return group.refuse(f"no biases in {', '.join(unbiased)}: Burn's {self.stack}Config builds every Linear and LayerNorm with one")
        out: list[Entry] = []
        for torch_child, burn_child, kind in children:
            src, dst = src_of(torch_child, burn_child), dst_of(torch_child, burn_child)
            entries = group.under(src)
            if kind.structural:
                out += kind.convert(Group(group.full(dst), entries, {}, group.type_from, group.refusals), direction)
                continue
            for rel, entry in entries.items():
                moved = rename(entry, group.full(f"{dst}.{rel}"), kind.container)
                out.append(kind.convert_entry(moved, direction))
        return out

    def _torch_order(self, torch_child: str) -> int:
        order = [t for t, _ in self.attentions] + ["linear1", "linear2", *sorted(self.norms_post)]
        return order.index(torch_child)

    # -- the Burn config ---------------------------------------------------------------------
    def dims(self, burn: Group) -> tuple[int, int] | None:
        inner = burn.entries.get("pwff.linear_inner.weight")
        return None if inner is None or inner.rank != 2 else (inner.shape[0], inner.shape[1])

    def stack_config(self, burn: Group, d_model: int, d_ff: int, n_layers: int) -> BurnConfig:
        yours: list[str] = []
        heads = burn.setting("n_heads")
        if heads is None:
            heads = "n_heads"
            yours.append("n_heads (the weights cannot tell how the heads split d_model)")
        code = f"{self.stack}Config::new({d_model}, {d_ff}, {heads}, {n_layers})"
        if burn.setting("norm_first"):
            code += ".with_norm_first(true)"
        activation = burn.setting("activation")
        if activation is None:
            yours.append("activation (Burn's default Gelu; torch's default relu: .with_activation(ActivationConfig::Relu))")
        elif activation in _ACTIVATIONS:
            code += "" if activation == "gelu" else f".with_activation({_ACTIVATIONS[str(activation)]})"
        else:
            yours.append(f"activation: torch's is {activation}, which Burn's ActivationConfig may not have")
        for key, default in _BURN_DEFAULTS.items():
            value = burn.setting(key)
            if value is None:
                yours.append(f"{key} (Burn's default {default})")
            elif value != default:
                code += f".with_{key}({float(value)!r})"  # type: ignore[arg-type]
        if burn.setting("batch_first") is not True:
            yours.append("input layout: Burn's transformer takes [batch, seq, d_model] (torch's batch_first=False takes [seq, batch, d_model])")
        return BurnConfig(code, yours)

    def config(self, burn: Group) -> BurnConfig | None:
        dims = self.dims(burn)
        if dims is None:
            return None
        config = self.stack_config(burn, *dims, 1)
        config.code = f"{self.name}::new(&{config.code}, &device)"
        return config


class TransformerEncoderLayer(_Layer):
    name = "TransformerEncoderLayer"
    torch_classes = ("TransformerEncoderLayer",)
    inherits_from = ("TransformerEncoder",)
    within = ("TransformerEncoder",)
    attentions = (("self_attn", "mha"),)
    norms_post = {"norm1": "norm_1", "norm2": "norm_2"}
    norms_pre = {"norm1": "norm_2", "norm2": "norm_1"}
    stack = "TransformerEncoder"


class TransformerDecoderLayer(_Layer):
    name = "TransformerDecoderLayer"
    torch_classes = ("TransformerDecoderLayer",)
    inherits_from = ("TransformerDecoder",)
    within = ("TransformerDecoder",)
    attentions = (("multihead_attn", "cross_attn"), ("self_attn", "self_attn"))
    norms_post = {"norm1": "norm_1", "norm2": "norm_2", "norm3": "norm_3"}
    norms_pre = {"norm1": "norm_3", "norm2": "norm_1", "norm3": "norm_2"}
    stack = "TransformerDecoder"

    def _torch_order(self, torch_child: str) -> int:
        return ["self_attn", "multihead_attn", "linear1", "linear2", "norm1", "norm2", "norm3"].index(torch_child)


class _Stack(ModuleKind):
    """A torch ``nn.TransformerEncoder`` / ``Decoder``: ``layers.{i}`` (Burn's ``layers`` ``Vec``,
    the same names) and an optional final ``norm``. Its layers convert as themselves; the stack
    gives them the settings spelled on it, and its config line stands for theirs."""

    layer: ClassVar[_Layer]
    settings = _Layer.settings
    subtree = True

    def settings_of(self, module: Any) -> dict[str, Setting]:
        return self.layer.settings_of(module.layers[0]) if len(module.layers) else {}

    def recognise(self, view: View, side: str) -> Recognition | None:
        layers = view.child("layers")
        allowed = {"layers", "norm"} if side == "torch" else {"layers"}
        if view.params or layers is None or not set(view.children) <= allowed:
            return None
        items = layers.digits()
        if items and all(self.layer.recognise(item, side) for item in items):
            return Recognition(f"layers.0..{len(items) - 1}, each a {self.layer.name}", self)
        return None

    def config(self, burn: Group) -> BurnConfig | None:
        indices = {rel.split(".")[1] for rel in burn.entries if rel.startswith("layers.") and rel.split(".")[1].isdigit()}
        if not indices:
            return None
        first = Group(burn.full("layers.0"), burn.under("layers.0"), burn.settings, burn.type_from, burn.refusals)
        dims = self.layer.dims(first)
        if dims is None:
            return None
        config = self.layer.stack_config(burn, *dims, len(indices))
        norm = burn.under("norm")
        if norm:
            width = next(iter(norm.values())).shape[0]
            config.yours.append(f"norm: Burn's {self.name} has no final norm; it is a LayerNorm of its own (LayerNormConfig::new({width}))")
        return config


class TransformerEncoder(_Stack):
    name = "TransformerEncoder"
    torch_classes = ("TransformerEncoder",)
    layer = TransformerEncoderLayer()


class TransformerDecoder(_Stack):
    name = "TransformerDecoder"
    torch_classes = ("TransformerDecoder",)
    layer = TransformerDecoderLayer()


TRANSFORMER_KINDS: tuple[ModuleKind, ...] = (TransformerEncoder(), TransformerDecoder(), TransformerEncoderLayer(), TransformerDecoderLayer())
