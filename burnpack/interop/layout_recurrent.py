"""Recurrent modules: torch's fused ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` ↔ Burn's gate controllers.

torch keeps one tensor per layer and direction for all gates, stacked along the first dim in its
gate order: ``weight_ih_l{k}[_reverse]`` ``[gates·hidden, in]``, ``weight_hh_l{k}`` ``[gates·hidden,
hidden]``, ``bias_ih_l{k}``, ``bias_hh_l{k}``. Burn (``crates/burn-nn/src/modules/rnn/``, commit
2c06be35) keeps one ``GateController`` per gate (``gate_controller.rs``), each two ``Linear``s,
``input_transform`` (``[in, hidden]``) and ``hidden_transform`` (``[hidden, hidden]``), so each
torch tensor is split by rows in torch's gate order and every weight transposed:

* ``nn.LSTM`` (gates i, f, g, o) → ``Lstm`` (``lstm/lstm_module.rs``): ``input_gate``,
  ``forget_gate``, ``cell_gate``, ``output_gate``; ``forward_iter`` computes each gate as
  ``input_transform(x) + hidden_transform(h)``, as torch does with both biases.
* ``nn.GRU`` (gates r, z, n) → ``Gru`` (``gru.rs``): ``reset_gate``, ``update_gate``, ``new_gate``;
  Burn's default ``reset_after = true`` applies the reset gate after the hidden product, hidden
  bias included (``gate_product``), which is torch's ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.
* ``nn.RNN`` → ``Rnn`` (``basic.rs``): one ``gate``.

Bidirectional → ``BiLstm`` / ``BiGru`` / ``BiRnn`` (``forward``, ``reverse``); several layers →
one Burn module per layer, indexed as Burn's ``Vec`` is (``rnn.0``, ``rnn.1``). Refused:
``proj_size`` (``weight_hr_l{k}``: no Burn field), a tensor torch's layout does not name.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from .tensors import Entry
from .layout_base import BurnConfig, Direction, Group, ModuleKind, Recognition, Setting, View, concat, slice_rows

__all__ = ["RECURRENT_KINDS"]

_TORCH_PARAM = re.compile(r"^(?P<kind>weight_ih|weight_hh|bias_ih|bias_hh|weight_hr)_l(?P<layer>\d+)(?P<reverse>_reverse)?$")
# torch tensor → the GateController's Linear and its parameter
_PARTS = (("weight_ih", "input_transform", "weight"), ("bias_ih", "input_transform", "bias"),
          ("weight_hh", "hidden_transform", "weight"), ("bias_hh", "hidden_transform", "bias"))  # fmt: skip
_TORCH_ORDER = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")  # torch's _flat_weights_names order
_LINEAR = "Struct:Linear"


def _linear() -> ModuleKind:
    from .layout_leaf import LEAF_KINDS

    return next(k for k in LEAF_KINDS if k.name == "Linear")


class _Recurrent(ModuleKind):
    structural = True
    subtree = True
    gates: ClassVar[tuple[str, ...]]
    """Burn's gate fields in torch's gate order."""
    field_order: ClassVar[tuple[str, ...]]
    """Burn's gate fields in the struct's order (what Burn writes first)."""
    torch_gate_names: ClassVar[str]

    def settings_of(self, module: Any) -> dict[str, Setting]:
        return {"batch_first": bool(module.batch_first), "dropout": float(module.dropout)}

    # -- recognising -------------------------------------------------------------------------
    def recognise(self, view: View, side: str) -> Recognition | None:
        if side == "burn":
            return self._recognise_burn(view)
        w_hh = view.shape("weight_hh_l0")
        if view.children or view.shape("weight_ih_l0") is None or w_hh is None or len(w_hh) != 2:
            return None
        if not all(_TORCH_PARAM.match(name) for name in view.params) or w_hh[0] != len(self.gates) * w_hh[1]:
            return None
        return Recognition(f"weight_hh_l0 {list(w_hh)}: {len(self.gates)} gates ({self.torch_gate_names}) of hidden size {w_hh[1]}", self)

    def _is_cell(self, view: View | None) -> bool:
        return view is not None and not view.params and set(view.children) == set(self.gates) and all(
            set(g.children) == {"input_transform", "hidden_transform"} for g in view.children.values())  # fmt: skip

    def _recognise_burn(self, view: View) -> Recognition | None:
        if self._is_cell(view):
            return Recognition(f"Burn's {self.name} fields ({', '.join(self.field_order)})", self)
        if not view.params and set(view.children) == {"forward", "reverse"} and all(self._is_cell(c) for c in view.children.values()):
            return Recognition(f"Burn's Bi{self.name} fields (forward, reverse)", self)
        return None

    # -- PyTorch -> Burn ---------------------------------------------------------------------
    def _refusals(self, group: Group) -> str | None:
        return None

    def _torch_layers(self, group: Group) -> tuple[dict[tuple[int, bool], dict[str, Entry]], list[str]]:
        layers: dict[tuple[int, bool], dict[str, Entry]] = {}
        unknown = []
        for rel, entry in group.entries.items():
            match = _TORCH_PARAM.match(rel)
            if match is None:
                unknown.append(rel)
                continue
            layers.setdefault((int(match["layer"]), bool(match["reverse"])), {})[match["kind"]] = entry
        return layers, unknown

    def convert(self, group: Group, direction: Direction) -> list[Entry]:
        if direction is Direction.TO_TORCH:
            return self._to_torch(group)
        why = self._refusals(group)
        if why is not None:
            return group.refuse(why)
        layers, unknown = self._torch_layers(group)
        projections = sorted(group.full(rel) for rel in group.entries if rel.startswith("weight_hr"))
        if projections:
            return group.refuse(f"proj_size: Burn's {self.name} has no projection ({', '.join(projections)})")
        if unknown:
            return group.refuse(f"tensors torch's nn.{self.torch_classes[0]} does not name: {', '.join(group.full(u) for u in unknown)}")
        first = layers.get((0, False), {})
        if "weight_hh" not in first or "weight_ih" not in first:
            return group.refuse(f"no weight_ih_l0 and weight_hh_l0 among {', '.join(map(group.full, group.entries))}")
        hidden = first["weight_hh"].shape[1]
        count = len(self.gates)
        n_layers = 1 + max(k for k, _ in layers)
        bidirectional = any(reverse for _, reverse in layers)
        biased = "bias_ih" in first
        out: list[Entry] = []
        linear = _linear()
        for k in range(n_layers):
            for reverse in (False, True) if bidirectional else (False,):
                params = layers.get((k, reverse), {})
                want = {"weight_ih", "weight_hh"} | ({"bias_ih", "bias_hh"} if biased else set())
                suffix = f"_l{k}{'_reverse' if reverse else ''}"
                if set(params) != want:
                    gaps = sorted(f"{n}{suffix}" for n in want - set(params)) + sorted(f"{n}{suffix}" for n in set(params) - want)
                    return group.refuse(f"the layers do not match: {', '.join(map(group.full, gaps))}")
                for name, entry in params.items():
                    rows = count * hidden
                    if entry.shape[0] != rows or (name == "weight_hh" and entry.shape[1:] != (hidden,)):
                        return group.refuse(f"{entry.name} {list(entry.shape)}: expected {rows} rows ({count} gates × hidden {hidden})")
                head = (f"{k}." if n_layers > 1 else "") + (("reverse." if reverse else "forward.") if bidirectional else "")
                for gate in self.field_order:
                    g = self.gates.index(gate)
                    for torch_name, linear_field, param in _PARTS:
                        source = params.get(torch_name)
                        if source is None:
                            continue
                        piece = slice_rows(source, g * hidden, (g + 1) * hidden, group.full(f"{head}{gate}.{linear_field}.{param}"),
                                           f"rows {g * hidden}:{(g + 1) * hidden} of {source.name} ({gate}: torch's gate "
                                           f"{self.torch_gate_names.split(', ')[g]})", _LINEAR)  # fmt: skip
                        out.append(linear.convert_entry(piece, Direction.TO_BURN))
        return out

    # -- Burn -> PyTorch ---------------------------------------------------------------------
    def _to_torch(self, group: Group) -> list[Entry]:
        pattern = re.compile(
            rf"^(?:(?P<layer>\d+)\.)?(?:(?P<dir>forward|reverse)\.)?(?P<gate>{'|'.join(self.gates)})\."
            r"(?P<linear>input_transform|hidden_transform)\.(?P<param>weight|bias)$"
        )
        cells: dict[tuple[int, bool], dict[tuple[str, str, str], Entry]] = {}
        unknown, indexed, directed = [], set(), set()
        for rel, entry in group.entries.items():
            match = pattern.match(rel)
            if match is None:
                unknown.append(group.full(rel))
                continue
            indexed.add(match["layer"] is not None)
            directed.add(match["dir"] is not None)
            key = (int(match["layer"] or 0), match["dir"] == "reverse")
            cells.setdefault(key, {})[(match["gate"], match["linear"], match["param"])] = entry
        if unknown:
            return group.refuse(f"tensors Burn's {self.name} does not name: {', '.join(unknown)}")
        if len(indexed) > 1 or len(directed) > 1:
            return group.refuse(f"a mix of layer or direction paths: {', '.join(map(group.full, group.entries))}")
        n_layers = 1 + max(k for k, _ in cells)
        bidirectional = True in directed
        linear = _linear()
        out: list[Entry] = []
        for k in range(n_layers):
            for reverse in (False, True) if bidirectional else (False,):
                cell = cells.get((k, reverse), {})
                suffix = f"_l{k}{'_reverse' if reverse else ''}"
                for torch_name in _TORCH_ORDER:
                    linear_field, param = next((lf, p) for t, lf, p in _PARTS if t == torch_name)
                    parts = [cell.get((gate, linear_field, param)) for gate in self.gates]
                    if all(p is None for p in parts) and param == "bias":
                        continue
                    if any(p is None for p in parts):
                        missing = [f"{gate}.{linear_field}.{param}" for gate, p in zip(self.gates, parts) if p is None]
                        return group.refuse(f"layer {k}{' reverse' if reverse else ''} lacks {', '.join(missing)}")
                    torch_parts = [linear.convert_entry(p, Direction.TO_TORCH) for p in parts if p is not None]
                    what = f"gates {', '.join(self.gates)} stacked in torch's order ({self.torch_gate_names})"
                    out.append(concat(torch_parts, group.full(torch_name + suffix), what, self.container))
        return out

    # -- the Burn config ---------------------------------------------------------------------
    def _cell_config(self, d_in: int, hidden: int, bias: bool, bidirectional: bool) -> str:
        return f"{'Bi' if bidirectional else ''}{self.name}Config::new({d_in}, {hidden}, {str(bias).lower()})"

    def _extra(self, group: Group, bidirectional: bool, code: str) -> tuple[str, list[str]]:
        yours = []
        batch_first = group.setting("batch_first")
        if batch_first is None:
            yours.append(f"batch_first (Burn's default true: input [batch, seq, features]; torch's nn.{self.torch_classes[0]} defaults to false)")
        elif not batch_first:
            code += ".with_batch_first(false)"
        return code, yours

    def config(self, burn: Group) -> BurnConfig | None:
        pattern = re.compile(rf"^(?:(\d+)\.)?(?:(forward|reverse)\.)?{self.field_order[0]}\.input_transform\.weight$")
        shapes: dict[int, tuple[int, ...]] = {}
        bidirectional = False
        for rel, entry in burn.entries.items():
            match = pattern.match(rel)
            if match and entry.rank == 2:
                shapes.setdefault(int(match[1] or 0), tuple(entry.shape))
                bidirectional |= match[2] is not None
        if not shapes:
            return None
        bias = any(rel.endswith(".bias") for rel in burn.entries)
        layers = [self._cell_config(shapes[k][0], shapes[k][1], bias, bidirectional) for k in sorted(shapes)]
        if len(layers) == 1:
            code, yours = self._extra(burn, bidirectional, layers[0])
        else:
            parts = [self._extra(burn, bidirectional, text) for text in layers]
            code = f"vec![{', '.join(p[0] for p in parts)}]"
            yours = parts[0][1] + [f"a Vec of {len(layers)} layers: run them in turn, each on the previous one's output"]
            dropout = burn.setting("dropout")
            if dropout:
                yours.append(f"torch's dropout={dropout} between layers: add a Dropout between them")
        return BurnConfig(code, yours)


class Lstm(_Recurrent):
    name = "Lstm"
    torch_classes = ("LSTM",)
    burn_names = ("BiLstm",)
    settings = {"batch_first": "input [batch, seq, features]", "dropout": "between layers", "proj_size": "torch's projection (refused)"}
    gates = ("input_gate", "forget_gate", "cell_gate", "output_gate")
    field_order = ("input_gate", "forget_gate", "output_gate", "cell_gate")
    torch_gate_names = "i, f, g, o"

    def settings_of(self, module: Any) -> dict[str, Setting]:
        return {**super().settings_of(module), "proj_size": int(module.proj_size)}

    def _refusals(self, group: Group) -> str | None:
        size = group.setting("proj_size")
        return f"proj_size={size}: Burn's Lstm has no projection" if size else None


class Gru(_Recurrent):
    name = "Gru"
    torch_classes = ("GRU",)
    burn_names = ("BiGru",)
    settings = {"batch_first": "input [batch, seq, features]", "dropout": "between layers"}
    gates = ("reset_gate", "update_gate", "new_gate")
    field_order = ("update_gate", "reset_gate", "new_gate")
    torch_gate_names = "r, z, n"

    def _extra(self, group: Group, bidirectional: bool, code: str) -> tuple[str, list[str]]:
        if bidirectional:
            return super()._extra(group, bidirectional, code)
        # Burn's Gru::forward takes [batch, seq, features] only (gru.rs): no batch_first to set
        yours = [] if group.setting("batch_first") is True else ["input layout: Burn's Gru takes [batch, seq, features] only"]
        return code, yours


class Rnn(_Recurrent):
    name = "Rnn"
    torch_classes = ("RNN",)
    burn_names = ("BiRnn",)
    settings = {"batch_first": "input [batch, seq, features]", "dropout": "between layers", "nonlinearity": "tanh or relu"}
    gates = ("gate",)
    field_order = ("gate",)
    torch_gate_names = "the one gate"

    def settings_of(self, module: Any) -> dict[str, Setting]:
        return {**super().settings_of(module), "nonlinearity": str(module.nonlinearity)}

    def _refusals(self, group: Group) -> str | None:
        act = group.setting("nonlinearity")
        return None if act in (None, "tanh", "relu") else f"nonlinearity={act}: torch's RNN has tanh or relu"

    def _extra(self, group: Group, bidirectional: bool, code: str) -> tuple[str, list[str]]:
        code, yours = super()._extra(group, bidirectional, code)
        act = group.setting("nonlinearity")
        if act == "relu":
            code += ".with_hidden_activation(ActivationConfig::Relu)"
        elif act is None:
            yours.append("hidden activation (torch's nonlinearity: tanh, Burn's default, or relu: ActivationConfig::Relu)")
        return code, yours


RECURRENT_KINDS: tuple[ModuleKind, ...] = (Lstm(), Gru(), Rnn())
