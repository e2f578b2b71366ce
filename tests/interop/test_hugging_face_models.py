"""A tiny GPT-2 and a tiny BERT, built from ``transformers`` config objects (no hub access),
converted to Burn's layout; a numpy forward on the converted tensors — Burn's ``Linear``
(``x @ W + b``, ``crates/burn-nn/src/modules/linear.rs``), ``LayerNorm``, and for BERT Burn's own
post-norm ``TransformerEncoderLayer`` (``tests/interop/burn_nn.py``) — gives the model's output.

GPT-2 stores its projections as Hugging Face ``Conv1D``, already ``[in, out]``: they must never
be transposed. From the live model the type is exact; from a bare state dict the non-square
ones are recognised by their bias and the square ones (``attn.c_proj``) are refused, naming
them, or taken as named best guesses.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import main
from burnpack.interop.converter import convert
from tests.interop import burn_nn

torch = pytest.importorskip("torch", reason="needs torch (pip install -e '.[torch]')")
transformers = pytest.importorskip("transformers", reason="needs transformers (pip install -e '.[test]')")

E, HEADS, LAYERS, VOCAB = 16, 2, 2, 50


def read(path) -> dict[str, np.ndarray]:
    with burnpack.load(path) as pack:
        return {name: np.array(pack[name].numpy(), dtype=np.float64) for name in pack}


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(1)
    config = transformers.GPT2Config(n_embd=E, n_layer=LAYERS, n_head=HEADS, vocab_size=VOCAB, n_positions=32, bos_token_id=0, eos_token_id=0)
    return transformers.GPT2Model(config).eval()


def gpt2_forward(p: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """GPT-2 (``GPT2Block``: pre-norm attention and MLP, causal, ``gelu_new``) on Burn's layout."""
    batch, seq = ids.shape
    h = p["wte.weight"][ids] + p["wpe.weight"][np.arange(seq)]
    causal = np.triu(np.ones((seq, seq), bool), 1)
    d = E // HEADS
    for i in range(LAYERS):
        a = burn_nn.layer_norm(p, f"h.{i}.ln_1", h)
        q, k, v = np.split(burn_nn.linear(p, f"h.{i}.attn.c_attn", a), 3, axis=-1)
        q, k, v = (t.reshape(batch, seq, HEADS, d).transpose(0, 2, 1, 3) for t in (q, k, v))
        scores = np.where(causal, -np.inf, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d))
        context = (burn_nn.softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, E)
        h = h + burn_nn.linear(p, f"h.{i}.attn.c_proj", context)
        m = burn_nn.layer_norm(p, f"h.{i}.ln_2", h)
        h = h + burn_nn.linear(p, f"h.{i}.mlp.c_proj", burn_nn.gelu_tanh(burn_nn.linear(p, f"h.{i}.mlp.c_fc", m)))
    return burn_nn.layer_norm(p, "ln_f", h)


def test_gpt2_converts_from_the_live_model_with_conv1d_kept_and_its_output_agrees(gpt2, tmp_path):
    report = convert(gpt2, tmp_path / "gpt2.bpk", adapter="pytorch")
    p = read(tmp_path / "gpt2.bpk")
    np.testing.assert_array_equal(p["h.0.attn.c_attn.weight"], gpt2.h[0].attn.c_attn.weight.detach().numpy())  # [in, out] as it was
    np.testing.assert_array_equal(p["h.1.attn.c_proj.weight"], gpt2.h[1].attn.c_proj.weight.detach().numpy())  # square: kept too
    assert report.rules["h.0.attn.c_proj.weight"] == {
        "module": "h.0.attn.c_proj", "type": "Conv1D", "type_from": "live module", "rule": "kept [in, out]: Conv1D's layout is Burn's Linear's"}
    assert report.modules["h.0.attn.c_attn"]["config"] == f"LinearConfig::new({E}, {3 * E})"
    ids = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    want = gpt2(ids).last_hidden_state.detach().numpy()
    np.testing.assert_allclose(gpt2_forward(p, ids.numpy()), want, atol=2e-5, rtol=1e-4)


def test_gpt2_state_dict_is_refused_where_it_cannot_tell_and_converts_with_named_guesses(gpt2, tmp_path, capsys):
    torch.save(gpt2.state_dict(), tmp_path / "gpt2.pt")
    code = main(["convert", str(tmp_path / "gpt2.pt"), str(tmp_path / "s.bpk"), "--burn-import"])
    err = capsys.readouterr().err
    assert code == 1 and not (tmp_path / "s.bpk").exists()
    assert f"h.0.attn.c_proj.weight [{E}, {E}], h.0.attn.c_proj.bias [{E}] (a square weight [{E}, {E}] with bias" in err
    assert "--module-type 'h.0.attn.c_proj=Linear' (or 'Conv1D'), or --best-guess (it would take Conv1D: 6 other module(s) in this state are Conv1Ds)" in err
    assert f"wte.weight [{VOCAB}, {E}] (a 2-D weight without bias: a Linear without bias or an Embedding)" in err
    code = main(["convert", str(tmp_path / "gpt2.pt"), str(tmp_path / "s.bpk"), "--burn-import", "--best-guess", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["guesses"] == [
        "h.0.attn.c_proj: Conv1D of Linear or Conv1D: 6 other module(s) in this state are Conv1Ds",
        "h.1.attn.c_proj: Conv1D of Linear or Conv1D: 6 other module(s) in this state are Conv1Ds",
        "wpe: Embedding of Linear or Embedding: the module's name points to it",
        "wte: Embedding of Linear or Embedding: the module's name points to it",
    ]
    assert report["rules"]["h.0.mlp.c_fc.weight"]["type_from"] == "inferred: a 2-D weight [in, out] and a bias of its second dim: Hugging Face's Conv1D"
    convert(gpt2, tmp_path / "live.bpk", adapter="pytorch")
    live, guessed = read(tmp_path / "live.bpk"), read(tmp_path / "s.bpk")
    assert live.keys() == guessed.keys() and all(np.array_equal(live[name], guessed[name]) for name in live)  # the live model's result
    code = main(["convert", str(tmp_path / "gpt2.pt"), str(tmp_path / "t.bpk"), "--burn-import", "--type-rule", r"c_proj$=Conv1D",
                 "--type-rule", "^w[tp]e$=Embedding", "-q"])  # fmt: skip
    assert code == 0 and read(tmp_path / "t.bpk").keys() == live.keys()


def test_gpt2_round_trips_to_torch_bit_for_bit(gpt2, tmp_path):
    convert(gpt2, tmp_path / "gpt2.bpk", adapter="pytorch")
    convert(tmp_path / "gpt2.bpk", tmp_path / "back.pt", adapter="to-pytorch", module=gpt2)
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    assert list(back) == list(gpt2.state_dict()) and all(torch.equal(back[k], v) for k, v in gpt2.state_dict().items())


# BERT's layers are Burn's post-norm TransformerEncoderLayer: name them so and run Burn's forward.
BERT_TO_BURN = [
    (r"^encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.", "encoder.layers.$1.mha.$2."),
    (r"^encoder\.layer\.(\d+)\.attention\.output\.dense\.", "encoder.layers.$1.mha.output."),
    (r"^encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.", "encoder.layers.$1.norm_1."),
    (r"^encoder\.layer\.(\d+)\.intermediate\.dense\.", "encoder.layers.$1.pwff.linear_inner."),
    (r"^encoder\.layer\.(\d+)\.output\.dense\.", "encoder.layers.$1.pwff.linear_outer."),
    (r"^encoder\.layer\.(\d+)\.output\.LayerNorm\.", "encoder.layers.$1.norm_2."),
]


def test_bert_converts_onto_burns_transformer_encoder_and_its_output_agrees(tmp_path):
    torch.manual_seed(2)
    config = transformers.BertConfig(hidden_size=E, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=2 * E,
                                     vocab_size=VOCAB, max_position_embeddings=32)  # fmt: skip
    bert = transformers.BertModel(config).eval()
    report = convert(bert, tmp_path / "bert.bpk", adapter="pytorch", remap=BERT_TO_BURN)
    assert report.renamed["encoder.layer.1.attention.output.LayerNorm.weight"] == "encoder.layers.1.norm_1.gamma"
    p = read(tmp_path / "bert.bpk")
    ids = torch.tensor([[2, 7, 1, 8, 0], [3, 1, 4, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    want = bert(ids, attention_mask=mask).last_hidden_state.detach().numpy()
    emb = p["embeddings.word_embeddings.weight"][ids.numpy()] + p["embeddings.position_embeddings.weight"][np.arange(5)]
    emb = burn_nn.layer_norm(p, "embeddings.LayerNorm", emb + p["embeddings.token_type_embeddings.weight"][0], eps=1e-12)
    ours = burn_nn.encoder(p, "encoder", emb, LAYERS, n_heads=HEADS, norm_first=False, activation="gelu", eps=1e-12,
                           mask_pad=mask.numpy() == 0)  # fmt: skip
    np.testing.assert_allclose(ours, want, atol=2e-5, rtol=1e-4)
