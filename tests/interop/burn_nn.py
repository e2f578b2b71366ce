"""Burn's modules' forward passes in numpy, following Burn's own code line by line, on tensors in
Burn's names and layouts (a ``{name: array}`` of a converted file).

They read ``crates/burn-nn/src/modules/`` at Burn commit ``BURN_COMMIT``; each function names the
file and function it follows. They are the independent side of the module-layout proofs
(``test_module_layouts.py``): torch's own forward on the original module must agree with these on
the converted tensors. Everything runs in float64, so the float32 differences are torch's.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

BURN_COMMIT = "2c06be351006851d42fdb6df16b976f4a82d9747"

Params = Mapping[str, np.ndarray]


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def gelu(x: np.ndarray) -> np.ndarray:
    """Burn's ``Gelu``: ``x * (1 + erf(x / sqrt 2)) / 2`` (``crates/burn-backend/src/backend/ops/activation.rs``, ``gelu``)."""
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """``GeluApproximate`` (``crates/burn-tensor/src/tensor/activation/base.rs``, ``gelu_approximate``); also GPT-2's ``gelu_new``."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "gelu": gelu, "tanh": np.tanh, "gelu_tanh": gelu_tanh}


def linear(p: Params, name: str, x: np.ndarray) -> np.ndarray:
    """linear.rs ``Linear::forward``: ``O = IW + b`` with ``weight`` ``[d_input, d_output]``."""
    y = x @ p[f"{name}.weight"].astype(np.float64)
    return y + p[f"{name}.bias"] if f"{name}.bias" in p else y


def layer_norm(p: Params, name: str, x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """norm/layer.rs ``LayerNorm::forward``: ``gamma``, optional ``beta``, biased variance."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps) * p[f"{name}.gamma"]
    return y + p[f"{name}.beta"] if f"{name}.beta" in p else y


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# -- recurrent: crates/burn-nn/src/modules/rnn/ -------------------------------------------------
def gate_product(p: Params, gate: str, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """gate_controller.rs ``GateController::gate_product``: ``input_transform(x) + hidden_transform(h)``."""
    return linear(p, f"{gate}.input_transform", x) + linear(p, f"{gate}.hidden_transform", h)


def _steps(seq: int, reverse: bool) -> range:
    return range(seq - 1, -1, -1) if reverse else range(seq)


def lstm(p: Params, name: str, x: np.ndarray, state: tuple[np.ndarray, np.ndarray] | None = None, reverse: bool = False):
    """lstm/lstm_module.rs ``Lstm::forward`` → ``forward_iter`` (batch-first ``[batch, seq, in]``;
    ``reverse`` as ``BiLstm::forward`` iterates its reverse direction): returns the output and the
    final ``(cell, hidden)``."""
    batch, seq, _ = x.shape
    hidden = p[f"{name}.input_gate.input_transform.weight"].shape[1]
    cell, h = state if state is not None else (np.zeros((batch, hidden)), np.zeros((batch, hidden)))
    out = np.empty((batch, seq, hidden))
    for t in _steps(seq, reverse):
        xt = x[:, t]
        i = sigmoid(gate_product(p, f"{name}.input_gate", xt, h))
        f = sigmoid(gate_product(p, f"{name}.forget_gate", xt, h))
        o = sigmoid(gate_product(p, f"{name}.output_gate", xt, h))
        g = np.tanh(gate_product(p, f"{name}.cell_gate", xt, h))
        cell = f * cell + i * g
        h = o * np.tanh(cell)
        out[:, t] = h
    return out, (cell, h)


def bilstm(p: Params, name: str, x: np.ndarray, state: tuple[np.ndarray, np.ndarray] | None = None):
    """lstm/bilstm_module.rs ``BiLstm::forward``: ``forward`` and ``reverse`` Lstms, outputs
    concatenated on the feature dim, states (``[2, batch, hidden]``) stacked."""
    fs = None if state is None else (state[0][0], state[1][0])
    rs = None if state is None else (state[0][1], state[1][1])
    out_f, (c_f, h_f) = lstm(p, f"{name}.forward", x, fs)
    out_r, (c_r, h_r) = lstm(p, f"{name}.reverse", x, rs, reverse=True)
    return np.concatenate([out_f, out_r], axis=2), (np.stack([c_f, c_r]), np.stack([h_f, h_r]))


def gru(p: Params, name: str, x: np.ndarray, state: np.ndarray | None = None, reverse: bool = False):
    """gru.rs ``Gru::forward_iter`` with ``gate_product`` and ``reset_after = true`` (Burn's
    default): ``n = tanh(input_part + r * hidden_part)``, ``h = (1 - z) * n + z * h``."""
    batch, seq, _ = x.shape
    hidden = p[f"{name}.update_gate.input_transform.weight"].shape[1]
    h = state if state is not None else np.zeros((batch, hidden))
    out = np.empty((batch, seq, hidden))
    for t in _steps(seq, reverse):
        xt = x[:, t]
        z = sigmoid(gate_product(p, f"{name}.update_gate", xt, h))
        r = sigmoid(gate_product(p, f"{name}.reset_gate", xt, h))
        n = np.tanh(linear(p, f"{name}.new_gate.input_transform", xt) + r * linear(p, f"{name}.new_gate.hidden_transform", h))
        h = (1.0 - z) * n + z * h
        out[:, t] = h
    return out, h


def bigru(p: Params, name: str, x: np.ndarray, state: np.ndarray | None = None):
    """gru.rs ``BiGru::forward``: forward over the steps, reverse over them backwards."""
    out_f, h_f = gru(p, f"{name}.forward", x, None if state is None else state[0])
    out_r, h_r = gru(p, f"{name}.reverse", x, None if state is None else state[1], reverse=True)
    return np.concatenate([out_f, out_r], axis=2), np.stack([h_f, h_r])


def rnn(p: Params, name: str, x: np.ndarray, state: np.ndarray | None = None, reverse: bool = False, activation: str = "tanh"):
    """basic.rs ``Rnn::forward_iter``: ``h = hidden_activation(gate.gate_product(x, h))``."""
    batch, seq, _ = x.shape
    hidden = p[f"{name}.gate.input_transform.weight"].shape[1]
    h = state if state is not None else np.zeros((batch, hidden))
    out = np.empty((batch, seq, hidden))
    for t in _steps(seq, reverse):
        h = ACTIVATIONS[activation](gate_product(p, f"{name}.gate", x[:, t], h))
        out[:, t] = h
    return out, h


def birnn(p: Params, name: str, x: np.ndarray, state: np.ndarray | None = None, activation: str = "tanh"):
    """basic.rs ``BiRnn::forward``."""
    out_f, h_f = rnn(p, f"{name}.forward", x, None if state is None else state[0], activation=activation)
    out_r, h_r = rnn(p, f"{name}.reverse", x, None if state is None else state[1], reverse=True, activation=activation)
    return np.concatenate([out_f, out_r], axis=2), np.stack([h_f, h_r])


# -- attention: crates/burn-nn/src/modules/attention/ -----------------------------------------
MIN_FLOAT = -1.0e4  # MultiHeadAttentionConfig's and CrossAttentionConfig's default min_float


def mha(p: Params, name: str, query: np.ndarray, key: np.ndarray, value: np.ndarray, n_heads: int,
        mask_pad: np.ndarray | None = None, mask_attn: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """mha.rs ``MultiHeadAttention::forward``: ``attention_linear`` reshapes each projection to
    ``[batch, seq, n_heads, d_k]`` and swaps to heads first; ``attn_scores`` divides by
    ``sqrt(d_k)``; ``attn_weights`` fills masked scores (``true`` = masked) with ``min_float``,
    then softmax; the context goes back to ``[batch, seq, d_model]`` through ``output``."""
    batch, seq_1, d_model = query.shape
    d_k = d_model // n_heads

    def heads(x: np.ndarray, proj: str) -> np.ndarray:
        return linear(p, f"{name}.{proj}", x).reshape(batch, x.shape[1], n_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = heads(query, "query"), heads(key, "key"), heads(value, "value")
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    if mask_pad is not None:
        scores = np.where(mask_pad[:, None, None, :], MIN_FLOAT, scores)
    if mask_attn is not None:
        scores = np.where(mask_attn[:, None, :, :], MIN_FLOAT, scores)
    context = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch, seq_1, d_model)
    return linear(p, f"{name}.output", context)


def cross_attention(p: Params, name: str, query: np.ndarray, context: np.ndarray, n_heads: int, mask: np.ndarray | None = None) -> np.ndarray:
    """cross_attention.rs ``CrossAttention::forward`` (``n_heads_kv = n_heads``): keys and values
    both from ``context``; scores scaled by ``1 / sqrt(d_head)``; ``mask`` ``[batch, l_k]``."""
    batch, l_q, _ = query.shape
    l_k = context.shape[1]
    d_head = p[f"{name}.query.weight"].shape[1] // n_heads
    q = linear(p, f"{name}.query", query).reshape(batch, l_q, n_heads, d_head).transpose(0, 2, 1, 3)
    k = linear(p, f"{name}.key", context).reshape(batch, l_k, n_heads, d_head).transpose(0, 2, 1, 3)
    v = linear(p, f"{name}.value", context).reshape(batch, l_k, n_heads, d_head).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_head)
    if mask is not None:
        scores = np.where(mask[:, None, None, :], MIN_FLOAT, scores)
    out = (softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch, l_q, n_heads * d_head)
    return linear(p, f"{name}.output", out)


# -- transformer: crates/burn-nn/src/modules/transformer/ -------------------------------------
def pwff(p: Params, name: str, x: np.ndarray, activation: str) -> np.ndarray:
    """pwff.rs ``PositionWiseFeedForward::forward``: ``linear_outer(activation(linear_inner(x)))``."""
    return linear(p, f"{name}.linear_outer", ACTIVATIONS[activation](linear(p, f"{name}.linear_inner", x)))


def _residual(p: Params, x: np.ndarray, norm: str, sublayer, norm_first: bool, eps: float) -> np.ndarray:
    """One residual step as Burn's layers' ``forward`` writes it: pre-norm
    ``x + sublayer(norm(x))``, post-norm ``norm(x + sublayer(x))``."""
    if norm_first:
        return x + sublayer(layer_norm(p, norm, x, eps))
    return layer_norm(p, norm, x + sublayer(x), eps)


def encoder_layer(p: Params, name: str, x: np.ndarray, *, n_heads: int, norm_first: bool, activation: str, eps: float = 1e-5,
                  mask_pad: np.ndarray | None = None, mask_attn: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """encoder.rs ``TransformerEncoderLayer::forward``: pre-norm ``x += mha(norm_2(x))``,
    ``x += pwff(norm_1(x))``; post-norm ``x = norm_1(x + mha(x))``, ``x = norm_2(x + pwff(x))``."""
    attend = lambda y: mha(p, f"{name}.mha", y, y, y, n_heads, mask_pad, mask_attn)  # noqa: E731
    x = _residual(p, x, f"{name}.norm_2" if norm_first else f"{name}.norm_1", attend, norm_first, eps)
    feed = lambda y: pwff(p, f"{name}.pwff", y, activation)  # noqa: E731
    return _residual(p, x, f"{name}.norm_1" if norm_first else f"{name}.norm_2", feed, norm_first, eps)


def decoder_layer(p: Params, name: str, target: np.ndarray, memory: np.ndarray, *, n_heads: int, norm_first: bool, activation: str,
                  eps: float = 1e-5, target_mask_pad: np.ndarray | None = None, target_mask_attn: np.ndarray | None = None,
                  memory_mask_pad: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """decoder.rs ``TransformerDecoderLayer::forward``: pre-norm ``norm_3`` before
    self-attention, ``norm_1`` before cross-attention, ``norm_2`` before the feed-forward;
    post-norm ``norm_1``, ``norm_2``, ``norm_3`` after them."""
    self_attend = lambda y: mha(p, f"{name}.self_attn", y, y, y, n_heads, target_mask_pad, target_mask_attn)  # noqa: E731
    cross_attend = lambda y: mha(p, f"{name}.cross_attn", y, memory, memory, n_heads, memory_mask_pad)  # noqa: E731
    feed = lambda y: pwff(p, f"{name}.pwff", y, activation)  # noqa: E731
    norms = ("norm_3", "norm_1", "norm_2") if norm_first else ("norm_1", "norm_2", "norm_3")
    x = target
    for norm, sublayer in zip(norms, (self_attend, cross_attend, feed)):
        x = _residual(p, x, f"{name}.{norm}", sublayer, norm_first, eps)
    return x


def encoder(p: Params, name: str, x: np.ndarray, n_layers: int, **kw) -> np.ndarray:
    """encoder.rs ``TransformerEncoder::forward``: the ``layers`` in turn."""
    for i in range(n_layers):
        x = encoder_layer(p, f"{name}.layers.{i}", x, **kw)
    return x


def decoder(p: Params, name: str, target: np.ndarray, memory: np.ndarray, n_layers: int, **kw) -> np.ndarray:
    """decoder.rs ``TransformerDecoder::forward``: the ``layers`` in turn."""
    for i in range(n_layers):
        target = decoder_layer(p, f"{name}.layers.{i}", target, memory, **kw)
    return target
