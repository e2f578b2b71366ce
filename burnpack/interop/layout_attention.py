"""``nn.MultiheadAttention`` ↔ Burn's ``MultiHeadAttention`` / ``CrossAttention``.

torch fuses the three input projections: ``in_proj_weight`` ``[3·E, E]`` (query, key, value rows,
in that order) and ``in_proj_bias`` ``[3·E]``; when ``kdim`` or ``vdim`` differ from ``E`` it keeps
``q_proj_weight`` ``[E, E]``, ``k_proj_weight`` ``[E, kdim]``, ``v_proj_weight`` ``[E, vdim]`` and
still one fused ``in_proj_bias``. The output projection is ``out_proj`` (a ``Linear``).

Burn's ``MultiHeadAttention`` (``crates/burn-nn/src/modules/attention/mha.rs``, commit 2c06be35)
has four ``Linear``s, ``query``, ``key``, ``value``, ``output``, all ``d_model`` × ``d_model``
(``MultiHeadAttentionConfig::init``); ``attention_linear`` splits heads by reshaping each
projection's output ``[batch, seq, n_heads, d_k]`` — head ``h`` is columns ``h·d_k…`` — which is
how torch splits them, so the rows go across unchanged and each weight is transposed. Burn's MHA
cannot hold ``kdim ≠ E``; its ``CrossAttention`` (``cross_attention.rs``) can, with one
``d_context`` for keys and values, so ``kdim = vdim ≠ E`` becomes a ``CrossAttention`` and
``kdim ≠ vdim`` is refused. Also refused: ``add_bias_kv`` (``bias_k``/``bias_v``: no Burn field) and
``add_zero_attn`` (no Burn counterpart), and back to torch, biases on some projections only.
"""

from __future__ import annotations

from typing import Any

from .tensors import Entry
from .layout_base import BurnConfig, Direction, Group, ModuleKind, Recognition, Setting, View, concat, rename, slice_rows

__all__ = ["ATTENTION_KINDS", "MultiHeadAttention"]

_PROJ = ("query", "key", "value")
_TORCH_SEPARATE = {"query": "q_proj_weight", "key": "k_proj_weight", "value": "v_proj_weight"}
_TORCH_PARAMS = {"in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v"}
_LINEAR = "Struct:Linear"


def _linear() -> ModuleKind:
    from .layout_leaf import LEAF_KINDS

    return next(k for k in LEAF_KINDS if k.name == "Linear")


def _is_linear(view: View | None) -> bool:
    return view is not None and not view.children and "weight" in view.params and set(view.params) <= {"weight", "bias"}


class MultiHeadAttention(ModuleKind):
    name = "MultiHeadAttention"
    torch_classes = ("MultiheadAttention",)
    burn_names = ("CrossAttention",)
    structural = True
    subtree = True
    settings = {"n_heads": "the number of heads", "dropout": "on the attention scores", "batch_first": "input [batch, seq, d_model]",
                "add_zero_attn": "torch's extra zero key (refused)"}  # fmt: skip

    def settings_of(self, module: Any) -> dict[str, Setting]:
        return {"n_heads": int(module.num_heads), "dropout": float(module.dropout), "batch_first": bool(module.batch_first),
                "add_zero_attn": bool(module.add_zero_attn)}  # fmt: skip

    def recognise(self, view: View, side: str) -> Recognition | None:
        if side == "burn":
            if not view.params and set(view.children) == {*_PROJ, "output"} and all(_is_linear(c) for c in view.children.values()):
                return Recognition("Burn's attention fields (query, key, value, output)", self)
            return None
        fused = "in_proj_weight" in view.params or "q_proj_weight" in view.params
        if fused and set(view.params) <= _TORCH_PARAMS and set(view.children) == {"out_proj"} and _is_linear(view.child("out_proj")):
            return Recognition("in_proj / q_proj weights and an out_proj", self)
        return None

    # -- PyTorch -> Burn ---------------------------------------------------------------------
    def convert(self, group: Group, direction: Direction) -> list[Entry]:
        return self._to_burn(group) if direction is Direction.TO_BURN else self._to_torch(group)

    def _to_burn(self, group: Group) -> list[Entry]:
        extra = sorted(set(group.entries) - _TORCH_PARAMS - {"out_proj.weight", "out_proj.bias"})
        if extra:
            return group.refuse(f"tensors torch's nn.MultiheadAttention does not name: {', '.join(map(group.full, extra))}")
        if "bias_k" in group.entries or "bias_v" in group.entries:
            return group.refuse("add_bias_kv: Burn's MultiHeadAttention has no bias_k / bias_v")
        if group.setting("add_zero_attn"):
            return group.refuse("add_zero_attn=True: Burn's attention has no zero key")
        out_w = group.entries.get("out_proj.weight")
        if out_w is None or out_w.rank != 2 or out_w.shape[0] != out_w.shape[1]:
            return group.refuse("no square out_proj.weight")
        e = out_w.shape[0]
        weights: dict[str, Entry] = {}
        fused = group.entries.get("in_proj_weight")
        if fused is not None:
            if fused.shape != (3 * e, e) or any(n in group.entries for n in _TORCH_SEPARATE.values()):
                return group.refuse(f"in_proj_weight {list(fused.shape)}: expected [{3 * e}, {e}] and no q/k/v_proj_weight")
            for i, proj in enumerate(_PROJ):
                weights[proj] = slice_rows(fused, i * e, (i + 1) * e, group.full(f"{proj}.weight"),
                                           f"rows {i * e}:{(i + 1) * e} of {fused.name} ({proj})", _LINEAR)  # fmt: skip
        else:
            for proj, torch_name in _TORCH_SEPARATE.items():
                source = group.entries.get(torch_name)
                if source is None or source.rank != 2 or source.shape[0] != e:
                    return group.refuse(f"{group.full(torch_name)}: expected [{e}, *] beside out_proj.weight [{e}, {e}]")
                weights[proj] = rename(source, group.full(f"{proj}.weight"), _LINEAR)
            if weights["key"].shape[1] != weights["value"].shape[1]:
                return group.refuse(
                    f"kdim={weights['key'].shape[1]} and vdim={weights['value'].shape[1]} differ: Burn's MultiHeadAttention takes "
                    "d_model-wide keys and values, its CrossAttention one d_context for both"
                )
        biases: dict[str, Entry] = {}
        in_bias = group.entries.get("in_proj_bias")
        if in_bias is not None:
            if in_bias.shape != (3 * e,):
                return group.refuse(f"in_proj_bias {list(in_bias.shape)}: expected [{3 * e}]")
            for i, proj in enumerate(_PROJ):
                biases[proj] = slice_rows(in_bias, i * e, (i + 1) * e, group.full(f"{proj}.bias"),
                                          f"rows {i * e}:{(i + 1) * e} of {in_bias.name} ({proj})", _LINEAR)  # fmt: skip
        out_b = group.entries.get("out_proj.bias")
        if out_b is not None:
            biases["output"] = rename(out_b, group.full("output.bias"), _LINEAR)
        weights["output"] = rename(out_w, group.full("output.weight"), _LINEAR)
        cross = weights["key"].shape[1] != e
        if cross and len(biases) != 4:
            return group.refuse(f"kdim={weights['key'].shape[1]} without biases: Burn's CrossAttention always has them")
        linear = _linear()
        out: list[Entry] = []
        for proj in (*_PROJ, "output"):
            out.append(linear.convert_entry(weights[proj], Direction.TO_BURN))
            if proj in biases:
                out.append(biases[proj])
        return out

    # -- Burn -> PyTorch ---------------------------------------------------------------------
    def _to_torch(self, group: Group) -> list[Entry]:
        known = {f"{p}.{param}" for p in (*_PROJ, "output") for param in ("weight", "bias")}
        extra = sorted(set(group.entries) - known)
        if extra:
            return group.refuse(f"tensors Burn's MultiHeadAttention does not name: {', '.join(map(group.full, extra))}")
        linear = _linear()
        weights = {}
        for proj in (*_PROJ, "output"):
            entry = group.entries.get(f"{proj}.weight")
            if entry is None or entry.rank != 2:
                return group.refuse(f"no 2-D {group.full(proj + '.weight')}")
            weights[proj] = linear.convert_entry(entry, Direction.TO_TORCH)  # now [out, in]
        biased = {proj: f"{proj}.bias" in group.entries for proj in (*_PROJ, "output")}
        if len(set(biased.values())) > 1:
            return group.refuse(f"biases on {', '.join(p for p, b in biased.items() if b)} only: torch's bias covers all four")
        e = weights["output"].shape[0]
        out: list[Entry] = []
        if all(weights[p].shape == (e, e) for p in _PROJ):
            out.append(concat([weights[p] for p in _PROJ], group.full("in_proj_weight"), "query, key, value stacked (torch's in_proj)", self.container))
        else:
            for proj in _PROJ:
                out.append(rename(weights[proj], group.full(_TORCH_SEPARATE[proj]), self.container))
        if biased["query"]:
            parts = [group.entries[f"{p}.bias"] for p in _PROJ]
            out.append(concat(parts, group.full("in_proj_bias"), "query, key, value biases stacked (torch's in_proj_bias)", self.container))
        out.append(rename(weights["output"], group.full("out_proj.weight"), _LINEAR))
        if biased["output"]:
            out.append(rename(group.entries["output.bias"], group.full("out_proj.bias"), _LINEAR))
        return out

    # -- the Burn config ---------------------------------------------------------------------
    def config(self, burn: Group) -> BurnConfig | None:
        query, key = burn.entries.get("query.weight"), burn.entries.get("key.weight")
        if query is None or key is None or query.rank != 2 or key.rank != 2:
            return None
        d_model, d_context = query.shape[1], key.shape[0]
        yours: list[str] = []
        heads = burn.setting("n_heads")
        if heads is None:
            heads = "n_heads"
            yours.append("n_heads (the weights cannot tell how the heads split d_model)")
        dropout = burn.setting("dropout")
        if dropout is None:
            yours.append("dropout (Burn's default 0.1, torch's 0.0; it only acts in training)")
        if burn.setting("batch_first") is not True:
            yours.append("input layout: Burn's attention takes [batch, seq, features] (torch's batch_first=False takes [seq, batch, ...])")
        if d_context != d_model:
            d_head = d_model // heads if isinstance(heads, int) else f"{d_model} / n_heads"
            code = f"CrossAttentionConfig::new({d_model}, {d_context}, {heads}, {heads}, {d_head})"
            if dropout is not None:
                code += f".with_dropout({float(dropout)!r})"
            yours.append("CrossAttention::forward takes one context for keys and values, and only a padding mask")
            return BurnConfig(code, yours)
        code = f"MultiHeadAttentionConfig::new({d_model}, {heads})"
        if dropout is not None:
            code += f".with_dropout({float(dropout)!r})"
        for proj in (*_PROJ, "output"):
            if f"{proj}.bias" not in burn.entries:
                code += f".with_{proj}_bias(false)"
        return BurnConfig(code, yours)


ATTENTION_KINDS: tuple[ModuleKind, ...] = (MultiHeadAttention(),)
