"""Burn's adapters (burn-store ``adapter.rs``) and where module types come from."""

from __future__ import annotations

import numpy as np
import pytest

from burnpack import DType
from burnpack.interop.adapters import (
    BurnToPyTorchAdapter,
    ChainAdapter,
    FloatCastAdapter,
    HalfPrecisionAdapter,
    ModuleTypes,
    PyTorchToBurnAdapter,
    module_type,
    parse_adapter,
)
from burnpack.interop.tensors import Entry


def entry(name: str, array: np.ndarray, mt: str | None = None) -> Entry:
    e = Entry.from_numpy(name, array)
    return e.replace(module_type=mt) if mt else e


W = np.arange(6, dtype=np.float32).reshape(3, 2)  # PyTorch Linear(2, 3).weight: [out, in]


def test_pytorch_adapter_transposes_2d_linear_weight():
    out = PyTorchToBurnAdapter().adapt(entry("fc.weight", W, "Struct:Linear"))
    assert out.name == "fc.weight" and out.shape == (2, 3)
    np.testing.assert_array_equal(out.numpy(), W.T)
    assert out.numpy().flags.c_contiguous


def test_pytorch_adapter_leaves_linear_bias_and_other_modules_alone():
    adapter = PyTorchToBurnAdapter()
    bias = entry("fc.bias", np.ones(3, np.float32), "Struct:Linear")
    conv = entry("conv.weight", np.ones((2, 1, 3, 3), np.float32), "Struct:Conv2d")
    emb = entry("emb.weight", W, "Struct:Embedding")
    unknown = entry("x.weight", W)
    for e in (bias, conv, emb, unknown):
        assert adapter.adapt(e) is e


@pytest.mark.parametrize("norm", ["BatchNorm", "LayerNorm", "GroupNorm", "RmsNorm"])
def test_pytorch_adapter_renames_norm_weight_and_bias(norm):
    adapter = PyTorchToBurnAdapter()
    mt = f"Struct:{norm}"
    assert adapter.adapt(entry("n.weight", np.ones(4, np.float32), mt)).name == "n.gamma"
    assert adapter.adapt(entry("n.bias", np.ones(4, np.float32), mt)).name == "n.beta"
    assert adapter.adapt(entry("n.running_mean", np.ones(4, np.float32), mt)).name == "n.running_mean"


def test_pytorch_adapter_does_not_rename_instance_norm():
    e = entry("n.weight", np.ones(4, np.float32), "Struct:InstanceNorm")
    assert PyTorchToBurnAdapter().adapt(e).name == "n.weight"


def test_burn_to_pytorch_adapter_reverses_the_pytorch_adapter():
    forward, back = PyTorchToBurnAdapter(), BurnToPyTorchAdapter()
    for e in (entry("fc.weight", W, "Struct:Linear"), entry("n.weight", np.ones(2, np.float32), "Struct:LayerNorm")):
        there = forward.adapt(e)
        again = back.adapt(there)
        assert again.name == e.name and again.shape == e.shape
        np.testing.assert_array_equal(again.numpy(), e.numpy())


def test_adapters_offer_burns_alternative_parameter_names():
    assert PyTorchToBurnAdapter().alternative_name("gamma", "Struct:BatchNorm") == "weight"
    assert PyTorchToBurnAdapter().alternative_name("gamma", "Struct:Linear") is None
    assert BurnToPyTorchAdapter().alternative_name("weight", "Struct:LayerNorm") == "gamma"


def test_half_precision_converts_f32_and_f16_for_listed_modules_only():
    half = HalfPrecisionAdapter()
    lin = half.adapt(entry("fc.weight", W, "Struct:Linear"))
    assert lin.dtype == DType.F16 and lin.numpy().dtype == np.float16
    back = half.adapt(lin)
    assert back.dtype == DType.F32
    bn = entry("bn.running_var", np.full(2, 1e-9, np.float32), "Struct:BatchNorm")
    assert half.adapt(bn) is bn  # BatchNorm excluded: running_var underflows in F16
    ints = entry("fc.idx", np.arange(3), "Struct:Linear")
    assert half.adapt(ints) is ints


def test_half_precision_module_set_is_adjustable():
    half = HalfPrecisionAdapter().with_module("BatchNorm").without_module("Linear")
    assert half.adapt(entry("bn.gamma", np.ones(2, np.float32), "Struct:BatchNorm")).dtype == DType.F16
    assert half.adapt(entry("fc.weight", W, "Struct:Linear")).dtype == DType.F32
    with pytest.raises(ValueError, match="not in the module set"):
        HalfPrecisionAdapter().without_module("Dropout")


def test_float_cast_casts_every_float_and_nothing_else():
    cast = FloatCastAdapter("bf16")
    assert cast.adapt(entry("a", W)).dtype == DType.BF16
    assert cast.adapt(entry("b", W.astype(np.float64))).dtype == DType.BF16
    ints = entry("c", np.arange(3))
    assert cast.adapt(ints) is ints
    with pytest.raises(ValueError, match="float dtype"):
        FloatCastAdapter("i32")


def test_adapters_chain_left_to_right():
    chain = PyTorchToBurnAdapter().chain(HalfPrecisionAdapter())
    assert isinstance(chain, ChainAdapter)
    out = chain.adapt(entry("fc.weight", W, "Struct:Linear"))
    assert out.shape == (2, 3) and out.dtype == DType.F16
    assert [s.split()[0] for s in out.steps] == ["transposed", "F32"]


def test_parse_adapter_spellings():
    assert parse_adapter(None) is None
    assert isinstance(parse_adapter("pytorch"), PyTorchToBurnAdapter)
    assert isinstance(parse_adapter("to-pytorch"), BurnToPyTorchAdapter)
    chained = parse_adapter("pytorch,half+cast=f64")
    assert chained.name == "pytorch+half+cast=F64"
    assert parse_adapter(["bf16"]).target == DType.BF16
    with pytest.raises(ValueError, match="unknown adapter"):
        parse_adapter("transpose-everything")


def test_module_type_names_normalise_to_burn_container_types():
    assert module_type("Linear") == "Struct:Linear"
    assert module_type("nn.BatchNorm2d") == "Struct:BatchNorm"
    assert module_type("RMSNorm") == "Struct:RmsNorm"
    assert module_type("Enum:Conv") == "Enum:Conv"
    assert module_type("ConvBlock") == "Struct:ConvBlock"


def test_module_types_lookup_order_map_then_rules_then_torch_then_inferred():
    types = ModuleTypes({"a": "Linear"}, [(r"^a|^b", "Conv2d")], torch_types={"c": "Struct:LayerNorm"})
    assert types.resolve(entry("a.weight", W)) == "Struct:Linear"
    assert types.resolve(entry("b.weight", W)) == "Struct:Conv2d"
    assert types.resolve(entry("c.weight", W)) == "Struct:LayerNorm"
    assert types.resolve(entry("d.weight", W)) is None


def test_module_types_match_the_source_name_too():
    types = ModuleTypes({"torch_name": "Linear"})
    renamed = entry("torch_name.weight", W).replace(name="burn_name.weight")
    assert types.resolve(renamed) == "Struct:Linear"


def test_module_types_count_the_lookups_each_entry_answered():
    types = ModuleTypes({"a": "Linear", "zzz": "Linear"}, [("nomatch", "Conv2d")])
    types.resolve(entry("a.weight", W))
    assert types.given() == [("module_types", "a=Linear", 1), ("module_types", "zzz=Linear", 0), ("type_rules", "nomatch=Conv2d", 0)]


def test_module_type_inference_and_its_ambiguities():
    entries = [
        entry("bn.weight", np.ones(2, np.float32)),
        entry("bn.running_mean", np.ones(2, np.float32)),
        entry("bn.running_var", np.ones(2, np.float32)),
        entry("fc.weight", W),
        entry("fc.bias", np.ones(3, np.float32)),
        entry("ln.weight", np.ones(2, np.float32)),
        entry("ln.bias", np.ones(2, np.float32)),
        entry("conv.weight", np.ones((2, 1, 3), np.float32)),
        entry("emb.weight", W),
        entry("rms.weight", np.ones(2, np.float32)),
    ]
    types = ModuleTypes(infer=True)
    types.run_inference(entries)
    assert types.inferred == {"bn": "Struct:BatchNorm", "fc": "Struct:Linear", "ln": "Struct:LayerNorm", "conv": "Struct:Conv1d"}
    assert set(types.ambiguous) == {"emb", "rms"}


def test_module_types_of_every_layout_have_burns_names_and_torchs_classes_map_to_them():
    assert module_type("LSTM") == "Struct:Lstm" and module_type("nn.GRU") == "Struct:Gru" and module_type("RNN") == "Struct:Rnn"
    assert module_type("MultiheadAttention") == "Struct:MultiHeadAttention"
    assert module_type("torch.nn.TransformerEncoderLayer") == "Struct:TransformerEncoderLayer"
    assert module_type("Conv1D") == "Struct:Conv1D"  # Hugging Face's, not torch's Conv1d
    assert module_type("Conv1d") == "Struct:Conv1d"


def test_a_type_spelling_carries_the_settings_the_weights_cannot_tell():
    types = ModuleTypes({"enc": "TransformerEncoderLayer(norm_first=true, n_heads=8)"})
    found = types.lookup("enc")
    assert found.settings == {"norm_first": True, "n_heads": 8} and found.source == "module_types"
    assert types.resolve_path("enc") == "Struct:TransformerEncoderLayer"


@pytest.mark.parametrize(("spelled", "why"), [
    ("TransformerEncoderLayer(norm_frist=true)", r"TransformerEncoderLayer has no setting 'norm_frist' \(its settings: norm_first, "),
    ("Linear(bias=false)", r"Linear has no setting 'bias' \(its settings: none\)"),
    ("Lstm(batch_first)", r"setting 'batch_first' is not name=value"),
    ("Lstm(", r"is not NAME or NAME\(setting=value, ...\)"),
])  # fmt: skip
def test_a_bad_setting_is_an_option_error_naming_what_the_kind_takes(spelled, why):
    from burnpack.errors import OptionError

    with pytest.raises(OptionError, match=why):
        ModuleTypes({"m": spelled})


def test_a_type_rule_splits_before_its_types_settings():
    from burnpack.interop.layouts import split_rule

    assert split_rule(r"layers\.\d+$=TransformerEncoderLayer(norm_first=true)") == (r"layers\.\d+$", "TransformerEncoderLayer(norm_first=true)")
    assert split_rule("a=b=Linear") == ("a=b", "Linear")
    assert split_rule("Linear") is None


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "bfloat16", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (17, 2049), (2049, 17), (64, 64)])
def test_transposed_copy_is_the_transpose_for_every_dtype_and_shape(dtype, shape):
    import ml_dtypes

    from burnpack.interop.layout_base import transposed_copy

    rng = np.random.default_rng(3)
    array = (rng.standard_normal((shape[0], shape[1] * 2)) * 100).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)[:, ::2]
    turned = transposed_copy(array)  # from a strided view, as a mapped file's rows may be
    assert turned.flags.c_contiguous and turned.dtype == array.dtype
    np.testing.assert_array_equal(turned, array.T)
