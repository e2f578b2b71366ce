"""PyTorch modules that Burn lays out differently, converted and proven by the forward pass.

Each module is built in torch with random weights and converted to Burn's layout (from the live
module, and where names and shapes allow, from its saved state dict through the CLI); torch's own
``forward`` must agree, within float32 tolerance, with the numpy forward that follows Burn's code
(``tests/interop/burn_nn.py``, which names the Burn file and function of each) run on the
converted tensors. Converting back to torch gives the state dict bit for bit. Ambiguous layouts
are refused, naming the tensors and what settles them, or taken as named best guesses.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.errors import ConversionError
from burnpack.interop.converter import convert
from burnpack.interop.loader import load_into
from burnpack.interop.registry import read_tensors
from tests.interop import burn_nn

torch = pytest.importorskip("torch", reason="needs torch (pip install -e '.[torch]')")
nn = torch.nn
ATOL = 2e-5  # float32 round-off of torch's forward against float64 numpy


def seeded(module_factory):
    torch.manual_seed(7)
    return module_factory().eval()


def to_burn(module, tmp_path: Path, **options) -> tuple[dict[str, np.ndarray], object]:
    """The module converted to a .bpk (PyTorch -> Burn), read back as float64 arrays."""
    out = tmp_path / "burn.bpk"
    report = convert(module, out, adapter="pytorch", overwrite=True, **options)
    with burnpack.load(out) as pack:
        return {name: np.array(pack[name].numpy(), dtype=np.float64) for name in pack}, report


def assert_round_trip(module, tmp_path: Path, **options) -> None:
    """Burn -> PyTorch with the live module's types gives its state dict bit for bit, in order."""
    back = tmp_path / "back.pt"
    convert(tmp_path / "burn.bpk", back, adapter="to-pytorch", module=module, overwrite=True, **options)
    restored, original = torch.load(back, weights_only=True), module.state_dict()
    assert list(restored) == list(original)
    for name, tensor in original.items():
        assert restored[name].dtype == tensor.dtype and torch.equal(restored[name], tensor), name


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def close(ours: np.ndarray, theirs) -> None:
    np.testing.assert_allclose(ours, theirs.detach().numpy().astype(np.float64), atol=ATOL, rtol=1e-4)


def x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def burn_root(p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A module converted at the root has no path: its names start at its fields; ``m.`` gives it one."""
    return {f"m.{k}": v for k, v in p.items()}


# -- LSTM ------------------------------------------------------------------------------------
def torch_state_to_burn(h0: torch.Tensor, layer: int, directions: int):
    """torch's ``[num_layers * directions, batch, hidden]`` initial state → one layer's Burn state."""
    part = h0[layer * directions : (layer + 1) * directions].numpy().astype(np.float64)
    return part[0] if directions == 1 else part


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("initial_state", [False, True])
def test_lstm_forward_matches_burns_lstm(tmp_path, bidirectional, layers, initial_state):
    lstm = seeded(lambda: nn.LSTM(5, 3, num_layers=layers, bidirectional=bidirectional, batch_first=True))
    p, report = to_burn(lstm, tmp_path)
    dirs = 2 if bidirectional else 1
    inp = x(2, 4, 5)
    state = (x(layers * dirs, 2, 3), x(layers * dirs, 2, 3)) if initial_state else None
    out, (h_n, c_n) = lstm(inp, state)
    y = inp.numpy().astype(np.float64)
    hs, cs = [], []
    for k in range(layers):  # a bare nn.LSTM is the root module: Burn's Vec of layers is indexed from it
        layer_state = None if state is None else (torch_state_to_burn(state[1], k, dirs), torch_state_to_burn(state[0], k, dirs))
        run = burn_nn.bilstm if bidirectional else burn_nn.lstm
        y, (c, h) = run(burn_root(p), f"m.{k}" if layers > 1 else "m", y, layer_state)
        cs.append(c if bidirectional else c[None])
        hs.append(h if bidirectional else h[None])
    close(y, out)
    close(np.concatenate(hs), h_n)
    close(np.concatenate(cs), c_n)
    kind = "BiLstmConfig" if bidirectional else "LstmConfig"
    want = f"{kind}::new(5, 3, true)" if layers == 1 else f"vec![{kind}::new(5, 3, true), {kind}::new({3 * dirs}, 3, true)]"
    assert report.modules[""]["config"] == want and report.modules[""]["type_from"] == "live module"
    assert_round_trip(lstm, tmp_path)


def test_lstm_without_bias_seq_first_and_its_config(tmp_path):
    model = seeded(lambda: nn.Sequential(nn.LSTM(4, 6, bias=False)))
    p, report = to_burn(model, tmp_path)
    assert not any(name.endswith(".bias") for name in p)
    inp = x(3, 2, 4)  # [seq, batch, features]: torch's default layout
    out, _ = model(inp)
    y, _ = burn_nn.lstm(p, "0", inp.numpy().transpose(1, 0, 2).astype(np.float64))
    close(y.transpose(1, 0, 2), out)
    assert report.modules["0"]["config"] == "LstmConfig::new(4, 6, false).with_batch_first(false)"
    assert_round_trip(model, tmp_path)


def test_lstm_gate_split_follows_torchs_gate_order(tmp_path):
    lstm = seeded(lambda: nn.LSTM(2, 3))
    p, report = to_burn(lstm, tmp_path)
    w = lstm.weight_ih_l0.detach().numpy()
    for i, gate in enumerate(("input_gate", "forget_gate", "cell_gate", "output_gate")):  # torch's i, f, g, o
        np.testing.assert_array_equal(p[f"{gate}.input_transform.weight"], w[3 * i : 3 * (i + 1)].T)
    rule = report.rules["cell_gate.input_transform.weight"]
    assert rule == {"module": "", "type": "Lstm", "type_from": "live module",
                    "rule": "rows 6:9 of weight_ih_l0 (cell_gate: torch's gate g), transposed [3, 2] -> [2, 3]"}  # fmt: skip


def test_lstm_state_dict_through_the_cli_with_inferred_types(tmp_path, capsys):
    model = seeded(lambda: nn.Sequential(nn.Linear(3, 5), nn.LSTM(5, 4, num_layers=2, batch_first=True)))
    torch.save(model.state_dict(), tmp_path / "model.pt")
    code, out, err = cli(capsys, "convert", tmp_path / "model.pt", tmp_path / "burn.bpk", "--burn-import", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["modules"]["1"]["type_from"].startswith("inferred: weight_hh_l0 [16, 4]: 4 gates")
    assert report["modules"]["1"]["config"] == "vec![LstmConfig::new(5, 4, true), LstmConfig::new(4, 4, true)]"
    assert any("batch_first" in item for item in report["modules"]["1"]["yours"])
    with burnpack.load(tmp_path / "burn.bpk") as pack:
        p = {name: np.array(pack[name].numpy(), dtype=np.float64) for name in pack}
    inp = x(2, 3, 3)
    y = burn_nn.linear(p, "0", inp.numpy().astype(np.float64))
    for k in range(2):
        y, _ = burn_nn.lstm(p, f"1.{k}", y)
    close(y, model(inp)[0])
    code, _, err = cli(capsys, "convert", tmp_path / "burn.bpk", tmp_path / "back.pt", "--adapter", "to-pytorch",
                       "--module-type", "0=Linear", "--module-type", "1=LSTM")  # fmt: skip
    assert code == 0, err
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    assert list(back) == list(model.state_dict()) and all(torch.equal(back[k], v) for k, v in model.state_dict().items())


def test_lstm_projection_is_refused_naming_it(tmp_path):
    with pytest.raises(ConversionError, match=r"proj_size=2: Burn's Lstm has no projection"):
        to_burn(seeded(lambda: nn.LSTM(4, 3, proj_size=2)), tmp_path)
    sd = seeded(lambda: nn.LSTM(4, 3, proj_size=2)).state_dict()
    with pytest.raises(ConversionError, match=r"proj_size: Burn's Lstm has no projection \(rnn\.weight_hr_l0\)"):
        convert({f"rnn.{k}": v for k, v in sd.items()}, tmp_path / "o.bpk", adapter="pytorch", module_types={"rnn": "LSTM"})
    assert not (tmp_path / "o.bpk").exists()


# -- GRU, RNN --------------------------------------------------------------------------------
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("initial_state", [False, True])
def test_gru_forward_matches_burns_gru_with_reset_after(tmp_path, bidirectional, initial_state):
    model = seeded(lambda: nn.Sequential(nn.GRU(4, 3, bidirectional=bidirectional, batch_first=True)))
    p, report = to_burn(model, tmp_path)
    inp = x(2, 5, 4)
    h0 = x(2 if bidirectional else 1, 2, 3) if initial_state else None
    out, h_n = model[0](inp, h0)
    y = inp.numpy().astype(np.float64)
    if bidirectional:
        ours, h = burn_nn.bigru(p, "0", y, None if h0 is None else h0.numpy().astype(np.float64))
    else:
        ours, h = burn_nn.gru(p, "0", y, None if h0 is None else h0[0].numpy().astype(np.float64))
        h = h[None]
    close(ours, out)
    close(h, h_n)
    assert report.modules["0"]["config"] == ("BiGruConfig::new(4, 3, true)" if bidirectional else "GruConfig::new(4, 3, true)")
    assert_round_trip(model, tmp_path)


@pytest.mark.parametrize(("nonlinearity", "bidirectional"), [("tanh", False), ("relu", True)])
def test_rnn_forward_matches_burns_rnn(tmp_path, nonlinearity, bidirectional):
    model = seeded(lambda: nn.Sequential(nn.RNN(4, 3, nonlinearity=nonlinearity, bidirectional=bidirectional, batch_first=True)))
    p, report = to_burn(model, tmp_path)
    inp = x(2, 5, 4)
    out, _ = model[0](inp)
    y = inp.numpy().astype(np.float64)
    ours = burn_nn.birnn(p, "0", y, activation=nonlinearity)[0] if bidirectional else burn_nn.rnn(p, "0", y, activation=nonlinearity)[0]
    close(ours, out)
    relu = ".with_hidden_activation(ActivationConfig::Relu)" if nonlinearity == "relu" else ""
    assert report.modules["0"]["config"] == f"{'BiRnn' if bidirectional else 'Rnn'}Config::new(4, 3, true){relu}"
    assert_round_trip(model, tmp_path)


def test_rnn_nonlinearity_from_a_state_dict_is_the_users_to_set(tmp_path):
    sd = seeded(lambda: nn.RNN(4, 3)).state_dict()
    report = convert({f"rnn.{k}": v for k, v in sd.items()}, tmp_path / "o.bpk", adapter="pytorch", infer_types=True)
    assert report.modules["rnn"]["config"] == "RnnConfig::new(4, 3, true)"
    assert any(item.startswith("hidden activation") for item in report.modules["rnn"]["yours"])


# -- attention -------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("masks", [False, True])
def test_multihead_attention_forward_matches_burns(tmp_path, bias, masks):
    attn = seeded(lambda: nn.MultiheadAttention(8, 2, bias=bias, batch_first=True))
    p, report = to_burn(attn, tmp_path)
    q, k, v = x(2, 3, 8), x(2, 4, 8), x(2, 4, 8)
    pad = torch.tensor([[False, False, False, True], [False, True, False, False]]) if masks else None
    causal = torch.triu(torch.ones(3, 4, dtype=torch.bool), diagonal=1) if masks else None
    out, _ = attn(q, k, v, key_padding_mask=pad, attn_mask=causal)
    f64 = lambda t: t.numpy().astype(np.float64)  # noqa: E731
    ours = burn_nn.mha(burn_root(p), "m", *map(f64, (q, k, v)), n_heads=2, mask_pad=None if pad is None else pad.numpy(),
                       mask_attn=None if causal is None else np.broadcast_to(causal.numpy(), (2, 3, 4)))  # fmt: skip
    close(ours, out)
    no_bias = "" if bias else ".with_query_bias(false).with_key_bias(false).with_value_bias(false).with_output_bias(false)"
    assert report.modules[""]["config"] == f"MultiHeadAttentionConfig::new(8, 2).with_dropout(0.0){no_bias}"
    assert_round_trip(attn, tmp_path)


def test_attention_with_kdim_becomes_burns_cross_attention(tmp_path):
    attn = seeded(lambda: nn.MultiheadAttention(8, 2, kdim=5, vdim=5, batch_first=True))
    p, report = to_burn(attn, tmp_path)
    assert p["key.weight"].shape == (5, 8) and p["query.weight"].shape == (8, 8)
    q, ctx = x(2, 3, 8), x(2, 4, 5)
    pad = torch.tensor([[False, False, True, True], [False, False, False, False]])
    out, _ = attn(q, ctx, ctx, key_padding_mask=pad)
    ours = burn_nn.cross_attention(burn_root(p), "m", q.numpy().astype(np.float64), ctx.numpy().astype(np.float64), 2, pad.numpy())
    close(ours, out)
    assert report.modules[""]["config"] == "CrossAttentionConfig::new(8, 5, 2, 2, 4).with_dropout(0.0)"
    assert_round_trip(attn, tmp_path)


@pytest.mark.parametrize(("make", "why"), [
    (lambda: nn.MultiheadAttention(8, 2, kdim=5, vdim=3), r"kdim=5 and vdim=3 differ"),
    (lambda: nn.MultiheadAttention(8, 2, add_bias_kv=True), r"add_bias_kv: Burn's MultiHeadAttention has no bias_k / bias_v"),
    (lambda: nn.MultiheadAttention(8, 2, add_zero_attn=True), r"add_zero_attn=True"),
])  # fmt: skip
def test_attention_burn_cannot_hold_is_refused(tmp_path, make, why):
    with pytest.raises(ConversionError, match=why):
        to_burn(seeded(make), tmp_path)


# -- transformer layers ----------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_forward_matches_burns_for_pre_and_post_norm(tmp_path, norm_first, activation):
    layer = seeded(lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation, norm_first=norm_first, batch_first=True))
    p, report = to_burn(layer, tmp_path)
    src = x(2, 4, 8)
    pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    out = layer(src, src_mask=causal, src_key_padding_mask=pad)
    ours = burn_nn.encoder_layer(burn_root(p), "m", src.numpy().astype(np.float64), n_heads=2, norm_first=norm_first, activation=activation,
                                 mask_pad=pad.numpy(), mask_attn=np.broadcast_to(causal.numpy(), (2, 4, 4)))  # fmt: skip
    close(ours, out)
    # the norms: pre-norm swaps them (Burn's norm_2 runs before attention), post-norm keeps them
    want = "norm_2" if norm_first else "norm_1"
    assert report.renamed["norm1.weight"] == f"{want}.gamma"
    config = "TransformerEncoderConfig::new(8, 16, 2, 1)" + (".with_norm_first(true)" if norm_first else "")
    config += ".with_activation(ActivationConfig::Relu)" if activation == "relu" else ""
    assert report.modules[""]["config"] == f"TransformerEncoderLayer::new(&{config}.with_dropout(0.0), &device)"
    assert_round_trip(layer, tmp_path)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_forward_matches_burns_for_pre_and_post_norm(tmp_path, norm_first):
    layer = seeded(lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first, batch_first=True))
    p, _ = to_burn(layer, tmp_path)
    tgt, memory = x(2, 3, 8), x(2, 5, 8)
    causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
    memory_pad = torch.tensor([[False] * 4 + [True], [False] * 5])
    out = layer(tgt, memory, tgt_mask=causal, memory_key_padding_mask=memory_pad)
    f64 = lambda t: t.numpy().astype(np.float64)  # noqa: E731
    ours = burn_nn.decoder_layer(burn_root(p), "m", f64(tgt), f64(memory), n_heads=2, norm_first=norm_first, activation="relu",
                                 target_mask_attn=np.broadcast_to(causal.numpy(), (2, 3, 3)), memory_mask_pad=memory_pad.numpy())  # fmt: skip
    close(ours, out)
    assert_round_trip(layer, tmp_path)


class Seq2Seq(nn.Module):
    """A torch encoder and decoder stack, the final norms included, in the layout torch's
    ``nn.Transformer`` uses (seq-first)."""

    def __init__(self, norm_first: bool) -> None:
        super().__init__()
        make_enc = lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first)  # noqa: E731
        make_dec = lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first)  # noqa: E731
        self.encoder = nn.TransformerEncoder(make_enc(), 2, norm=nn.LayerNorm(8), enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(make_dec(), 2, norm=nn.LayerNorm(8))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks_match_burns(tmp_path, norm_first):
    model = seeded(lambda: Seq2Seq(norm_first))
    p, report = to_burn(model, tmp_path)
    src, tgt = x(4, 2, 8), x(3, 2, 8)  # [seq, batch, d_model]
    src_pad = torch.tensor([[False, False, False, True], [False] * 4])
    memory = model.encoder(src, src_key_padding_mask=src_pad)
    out = model.decoder(tgt, memory, memory_key_padding_mask=src_pad)
    kw = {"n_heads": 2, "norm_first": norm_first, "activation": "relu"}
    ours = burn_nn.encoder(p, "encoder", src.numpy().transpose(1, 0, 2).astype(np.float64), 2, mask_pad=src_pad.numpy(), **kw)
    ours = burn_nn.layer_norm(p, "encoder.norm", ours)  # torch's final norm: a LayerNorm of its own beside Burn's stack
    close(ours, memory.transpose(0, 1))
    dec = burn_nn.decoder(p, "decoder", tgt.numpy().transpose(1, 0, 2).astype(np.float64), ours, 2, memory_mask_pad=src_pad.numpy(), **kw)
    close(burn_nn.layer_norm(p, "decoder.norm", dec), out.transpose(0, 1))
    first = ".with_norm_first(true)" if norm_first else ""
    assert report.modules["encoder"]["config"] == f"TransformerEncoderConfig::new(8, 16, 2, 2){first}.with_activation(ActivationConfig::Relu).with_dropout(0.0)"
    assert report.modules["decoder"]["config"].startswith("TransformerDecoderConfig::new(8, 16, 2, 2)")
    assert any(item.startswith("norm: Burn's TransformerEncoder has no final norm") for item in report.modules["encoder"]["yours"])
    assert "encoder.layers.0" not in report.modules  # the stack's line stands for its layers
    assert_round_trip(model, tmp_path)


def test_a_bare_state_dict_cannot_tell_pre_from_post_norm_and_says_what_settles_it(tmp_path, capsys):
    layer = seeded(lambda: nn.TransformerEncoderLayer(8, 2, 16, norm_first=True))
    torch.save({f"enc.{k}": v for k, v in layer.state_dict().items()}, tmp_path / "layer.pt")
    code, _, err = cli(capsys, "convert", tmp_path / "layer.pt", tmp_path / "o.bpk", "--burn-import")
    assert code == 1 and not (tmp_path / "o.bpk").exists()
    assert "enc: pre- or post-norm cannot be told from the weights" in err
    assert "--module-type 'enc=TransformerEncoderLayer(norm_first=true)'" in err and "--best-guess" in err
    code, out, err = cli(capsys, "convert", tmp_path / "layer.pt", tmp_path / "o.bpk", "--burn-import", "--json",
                         "--module-type", "enc=TransformerEncoderLayer(norm_first=true)")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["renamed"]["enc.norm1.weight"] == "enc.norm_2.gamma" and report["guesses"] == []
    assert report["modules"]["enc"]["type_from"] == "module_types"
    assert "n_heads" in report["modules"]["enc"]["config"] and any(y.startswith("n_heads") for y in report["modules"]["enc"]["yours"])
    # asked for a best guess: post-norm (torch's default), named as a guess
    code, out, err = cli(capsys, "convert", tmp_path / "layer.pt", tmp_path / "g.bpk", "--burn-import", "--best-guess", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["guesses"] == ["enc: norm_first=false (torch's default, post-norm)"]
    assert report["renamed"]["enc.norm1.weight"] == "enc.norm_1.gamma"
    assert "best guesses:\n    enc: norm_first=false" in _summary(capsys, tmp_path)


def _summary(capsys, tmp_path) -> str:
    code, out, _ = cli(capsys, "convert", tmp_path / "layer.pt", tmp_path / "s.bpk", "--burn-import", "--best-guess")
    assert code == 0
    return out


def test_a_type_rule_with_settings_settles_every_layer_it_matches(tmp_path, capsys):
    model = seeded(lambda: Seq2Seq(True))
    torch.save({k: v for k, v in model.state_dict().items() if k.startswith("encoder.")}, tmp_path / "enc.pt")
    code, out, err = cli(capsys, "convert", tmp_path / "enc.pt", tmp_path / "o.bpk", "--burn-import", "--json",
                         "--type-rule", r"layers\.\d+$=TransformerEncoderLayer(norm_first=true)")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["options"][r"type_rules=layers\.\d+$=TransformerEncoderLayer(norm_first=true)"] == "24 tensors typed"
    assert report["renamed"]["encoder.layers.1.norm2.bias"] == "encoder.layers.1.norm_1.beta"


def test_a_live_modules_settings_ride_in_its_type():
    from burnpack.interop.adapters import ModuleTypes

    types = ModuleTypes.from_torch_module(nn.Sequential(nn.LSTM(2, 3, batch_first=True), nn.TransformerEncoderLayer(4, 2, 8, norm_first=True)))
    assert types["0"] == "Struct:Lstm(batch_first=true, dropout=0.0, proj_size=0)"
    assert types["1"] == ("Struct:TransformerEncoderLayer(norm_first=true, n_heads=2, activation=relu, dropout=0.1, layer_norm_eps=1e-05, "
                          "batch_first=false)")  # fmt: skip
    assert types["1.linear1"] == "Struct:Linear"


def test_a_stack_passes_its_norm_first_to_its_layers(tmp_path):
    model = seeded(lambda: Seq2Seq(True))
    sd = {k: v for k, v in model.state_dict().items() if k.startswith("encoder.")}
    report = convert(sd, tmp_path / "o.bpk", adapter="pytorch", infer_types=True,
                     module_types={"encoder": "TransformerEncoder(norm_first=true)"})  # fmt: skip
    assert report.renamed["encoder.layers.1.norm1.weight"] == "encoder.layers.1.norm_2.gamma"
    assert report.modules["encoder"]["config"].startswith("TransformerEncoderConfig::new(8, 16, n_heads, 2).with_norm_first(true)")


def test_a_layer_without_biases_is_refused(tmp_path):
    layer = seeded(lambda: nn.TransformerEncoderLayer(8, 2, 16, bias=False))
    why = r"no biases in self_attn, linear1, linear2, norm1, norm2: Burn's TransformerEncoderConfig builds every Linear and LayerNorm"
    with pytest.raises(ConversionError, match=why):
        to_burn(layer, tmp_path)


# -- what names and shapes cannot tell -------------------------------------------------------
def test_a_square_linear_of_unknown_type_is_refused_naming_it(tmp_path, capsys):
    torch.save(seeded(lambda: nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))).state_dict(), tmp_path / "m.pt")
    code, _, err = cli(capsys, "convert", tmp_path / "m.pt", tmp_path / "o.bpk", "--burn-import")
    assert code == 1 and not (tmp_path / "o.bpk").exists()
    assert "0.weight [4, 4], 0.bias [4] (a square weight [4, 4] with bias: torch's Linear ([out, in]) or Hugging Face's Conv1D" in err
    assert "--module-type '0=Linear' (or 'Conv1D')" in err
    code, out, _ = cli(capsys, "convert", tmp_path / "m.pt", tmp_path / "o.bpk", "--burn-import", "--best-guess", "--json")
    report = json.loads(out)
    assert code == 0 and report["guesses"] == ["0: Linear of Linear or Conv1D: 1 other module(s) in this state are Linears"]
    assert report["rules"]["0.weight"]["type_from"].startswith("best guess: Linear")
    assert report["rules"]["1.weight"]["type_from"] == "inferred: a 2-D weight [out, in] and a bias of its first dim"


def test_best_guess_with_nothing_to_guess_is_an_option_that_changes_nothing(tmp_path):
    from burnpack.errors import UnmatchedOptionError

    with pytest.raises(UnmatchedOptionError, match="best_guess"):
        convert(seeded(lambda: nn.LSTM(2, 3)), tmp_path / "o.bpk", adapter="pytorch", best_guess=True)


def test_a_structural_layout_left_untyped_is_said(tmp_path):
    sd = {f"rnn.{k}": v for k, v in seeded(lambda: nn.GRU(2, 3)).state_dict().items()}
    report = convert({**sd, "fc.weight": torch.ones(2, 3), "fc.bias": torch.ones(2)}, tmp_path / "o.bpk", adapter="pytorch",
                     module_types={"fc": "Linear"})  # fmt: skip
    assert report.warnings == ["rnn: laid out as Gru (weight_hh_l0 [9, 3]: 3 gates (r, z, n) of hidden size 3) but given no module "
                               "type, so left as it is: give module_types={'rnn': 'Gru'} or infer_types=True"]  # fmt: skip


# -- load_into, the reverse, Burn-side inference ---------------------------------------------
def test_load_into_a_torch_module_from_burns_layout(tmp_path):
    model = seeded(lambda: nn.ModuleDict({"rnn": nn.LSTM(3, 4, bidirectional=True), "attn": nn.MultiheadAttention(4, 2)}))
    to_burn(model, tmp_path)
    fresh = nn.ModuleDict({"rnn": nn.LSTM(3, 4, bidirectional=True), "attn": nn.MultiheadAttention(4, 2)})
    result, report = load_into(fresh, tmp_path / "burn.bpk", adapter="to-pytorch")
    assert report.missing == [] and report.unused == []
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), fresh.state_dict().values()))


def test_burns_layout_back_to_torch_infers_burns_modules_by_their_fields(tmp_path):
    model = seeded(lambda: nn.ModuleDict({"gru": nn.GRU(3, 4), "attn": nn.MultiheadAttention(4, 2, kdim=3, vdim=3)}))
    to_burn(model, tmp_path)
    report = convert(tmp_path / "burn.bpk", tmp_path / "back.safetensors", adapter="to-pytorch", infer_types=True)
    assert report.modules["gru"]["type_from"].startswith("inferred: Burn's Gru fields")
    assert report.modules["attn"]["config"].startswith("CrossAttentionConfig::new(4, 3, n_heads, n_heads, 4 / n_heads)")
    with read_tensors(tmp_path / "back.safetensors") as back:
        assert sorted(back.names) == sorted(model.state_dict())
        for name, tensor in model.state_dict().items():
            np.testing.assert_array_equal(back[name].numpy(), tensor.numpy())


def test_splits_read_only_the_rows_they_take_from_a_mapped_source(tmp_path):
    """A split is a view of its source's rows: converting a .bpk holds one tensor's worth at a time."""
    from burnpack.interop.converter import transform
    from tests.conftest import peak_bytes

    hidden, width, layers = 256, 256, 8
    state = {f"rnn.{k}": v for k, v in seeded(lambda: nn.LSTM(width, hidden, num_layers=layers)).state_dict().items()}
    burnpack.save({k: v.numpy() for k, v in state.items()}, tmp_path / "torch.bpk")
    total = sum(v.numel() * 4 for v in state.values())
    largest = max(v.numel() * 4 for v in state.values())
    with read_tensors(tmp_path / "torch.bpk") as tset:
        result, _ = transform(tset, adapter="pytorch", module_types={"rnn": "LSTM"})
        piece = next(e for e in result.entries if e.name == "rnn.0.forget_gate.input_transform.bias")
        assert np.shares_memory(piece.numpy(), tset["rnn.bias_ih_l0"].numpy())  # rows of the mapped source, not a copy
    # one tensor at a time: a split holds its transposed piece, a merge its parts and their concatenation
    peak = peak_bytes(lambda: convert(tmp_path / "torch.bpk", tmp_path / "burn.bpk", adapter="pytorch", module_types={"rnn": "LSTM"}))
    assert peak < largest and total > 16 * largest
    peak = peak_bytes(lambda: convert(tmp_path / "burn.bpk", tmp_path / "back.bpk", adapter="to-pytorch", module_types={"rnn": "LSTM"}))
    assert peak < 2.5 * largest


def test_later_adapters_see_the_split_tensors_as_burns_linears(tmp_path):
    report = convert(seeded(lambda: nn.Sequential(nn.GRU(3, 4))), tmp_path / "half.bpk", adapter="pytorch,half")
    with burnpack.load(tmp_path / "half.bpk") as pack:  # Burn's HalfPrecisionAdapter casts Linear: every gate's transforms
        assert {pack[name].dtype.variant for name in pack} == {"F16"} and len(pack) == 12
    assert report.options == {"adapter=pytorch": "12 tensors changed", "adapter=half": "12 tensors changed"}


def test_a_training_checkpoint_with_an_lstm_is_refused_not_mapped_wrong(tmp_path):
    from burnpack.interop.checkpoint import pytorch_to_burn_checkpoint

    model = seeded(lambda: nn.Sequential(nn.LSTM(2, 3), nn.Linear(3, 3)))
    optimizer = torch.optim.Adam(model.parameters())
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, tmp_path / "train.pt")
    with pytest.raises(ConversionError, match=r"the model has modules whose tensors Burn lays out as other tensors: 0 \(Lstm\)"):
        pytorch_to_burn_checkpoint(tmp_path / "train.pt", tmp_path / "ckpt", module_types={"1": "Linear"})
    assert not (tmp_path / "ckpt").exists()
