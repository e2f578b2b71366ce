"""The PyTorch fixtures converted the way Burn imports them give what Burn's tests expect.

Each test mirrors one test of ``crates/burn-store/pytorch-tests/tests/<case>/mod.rs`` (or
``safetensors-tests``, ``src/pytorch/tests/store``): the ``.pt`` file is converted with the
PyTorch → Burn adapter into the names and shapes of the Burn ``Net`` that test declares (module
types as that ``Net`` declares them), written as ``.bpk``, read back, and run through a small
numpy forward pass of the same ``Net``; the output must match the numbers Burn's test asserts.
The Burn layouts matter here: a ``Linear`` weight is ``[in, out]`` and computed as ``x @ W``,
norms use ``gamma`` / ``beta``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.interop.converter import convert
from burnpack.errors import ConversionError
from burnpack.interop.pytorch import read_pytorch, read_pytorch_object
from tests.conftest import PYTORCH_FIXTURES, require

EPS = 1e-5  # Burn's default for every norm


def fixture(name: str) -> Path:
    return require(PYTORCH_FIXTURES / "modules" / name)


def burn_import(tmp_path: Path, source: Path, expect: dict, types: dict[str, str] | None = None, **options) -> dict[str, np.ndarray]:
    """Convert like ``PytorchStore`` into a Burn ``Net`` of ``expect``'s paths and shapes."""
    out = tmp_path / (source.stem + ".bpk")
    options.setdefault("map_indices_contiguous", True)
    options.setdefault("allow_unmatched", {"adapter", "map_indices_contiguous"})  # PytorchStore's fixed recipe
    convert(source, out, adapter="pytorch", module_types=types, expect=expect, overwrite=True, **options)
    with burnpack.load(out) as pack:
        assert pack.names == sorted(expect)
        return {name: np.array(pack[name].numpy()) for name in pack}


# -- a few layers, Burn's way (NCHW, Linear weights [in, out]) --------------------------------
def linear(x, p, name):
    y = x @ p[f"{name}.weight"].astype(np.float64)
    return y + p[f"{name}.bias"] if f"{name}.bias" in p else y


def conv2d(x, w, b=None, padding=0, groups=1):
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    out_channels, per_group, kh, kw = w.shape
    og = out_channels // groups
    parts = []
    for g in range(groups):
        patches = np.lib.stride_tricks.sliding_window_view(x[:, g * per_group : (g + 1) * per_group], (kh, kw), axis=(2, 3))
        parts.append(np.einsum("nchwij,ocij->nohw", patches, w[g * og : (g + 1) * og].astype(np.float64)))
    y = np.concatenate(parts, axis=1)
    return y if b is None else y + b[None, :, None, None]


def conv1d(x, w, b=None):
    return conv2d(x[:, :, None, :], w[:, :, None, :], b)[:, :, 0, :]


def conv_transpose2d(x, w, b=None):
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    y = np.zeros((n, o, h + kh - 1, wd + kw - 1))
    for a in range(kh):
        for d in range(kw):
            y[:, :, a : a + h, d : d + wd] += np.einsum("nchw,co->nohw", x, w[:, :, a, d].astype(np.float64))
    return y if b is None else y + b[None, :, None, None]


def conv_transpose1d(x, w, b=None):
    return conv_transpose2d(x[:, :, None, :], w[:, :, None, :], b)[:, :, 0, :]


def batch_norm(x, p, name):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = p[f"{name}.running_mean"].reshape(shape), p[f"{name}.running_var"].reshape(shape)
    return (x - mean) / np.sqrt(var + EPS) * p[f"{name}.gamma"].reshape(shape) + p[f"{name}.beta"].reshape(shape)


def layer_norm(x, p, name):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * p[f"{name}.gamma"] + p[f"{name}.beta"]


def group_norm(x, p, name, groups):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + EPS)
    return g.reshape(x.shape) * p[f"{name}.gamma"].reshape(1, c, 1, 1) + p[f"{name}.beta"].reshape(1, c, 1, 1)


def relu(x):
    return np.maximum(x, 0)


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def close(got, want, atol=1e-5):
    np.testing.assert_allclose(got, np.asarray(want, dtype=np.float64), atol=atol, rtol=0)


LINEAR_INPUT = [[[[0.63968194, 0.97427773], [0.830_029_9, 0.04443115]], [[0.024_595_8, 0.25883394], [0.93905586, 0.416_715_5]]]]
CONV_INPUT = [[
    [[0.024_595_8, 0.25883394, 0.93905586, 0.416_715_5, 0.713_979_7], [0.267_644_3, 0.990_609, 0.28845078, 0.874_962_4, 0.505_920_8],
     [0.23659128, 0.757_007_4, 0.23458993, 0.64705235, 0.355_621_4], [0.445_182_8, 0.01930594, 0.26160914, 0.771_317, 0.37846136],
     [0.99802476, 0.900_794_2, 0.476_588_2, 0.16625845, 0.804_481_1]],
    [[0.65517855, 0.17679012, 0.824_772_3, 0.803_550_9, 0.943_447_5], [0.21972018, 0.417_697, 0.49031407, 0.57302874, 0.12054086],
     [0.14518881, 0.772_002_3, 0.38275403, 0.744_236_7, 0.52850497], [0.664_172_4, 0.60994434, 0.681_799_7, 0.74785537, 0.03694397],
     [0.751_675_7, 0.148_438_4, 0.12274551, 0.530_407_2, 0.414_796_4]],
]]  # fmt: skip
CONV_EXPECTED = [[
    [[-0.02502128, 0.00250649, 0.04841233], [0.04589614, -0.00296854, 0.01991477], [0.02920526, 0.059_497_3, 0.04326791]],
    [[-0.04825336, 0.080_190_9, -0.02375088], [0.02885434, 0.09638263, -0.07460806], [0.02004079, 0.06244051, 0.035_887_1]],
]]  # fmt: skip


def test_linear_fixture_transposed_into_burns_layout(tmp_path):
    p = burn_import(tmp_path, fixture("linear__linear.pt"), {"fc1.weight": (2, 3), "fc1.bias": (3,), "fc2.weight": (3, 4)},
                    {"fc1": "Linear", "fc2": "Linear"})  # fmt: skip
    out = linear(relu(linear(np.array(LINEAR_INPUT), p, "fc1")), p, "fc2")
    close(out, [[[[0.09778349, -0.13756673, 0.04962806, 0.08856435], [0.03163241, -0.02848549, 0.01437942, 0.11905234]],
                 [[0.07628226, -0.10757702, 0.03656857, 0.03824598], [0.05443089, -0.06904714, 0.02744314, 0.09997337]]]])  # fmt: skip


def test_linear_with_bias_fixture(tmp_path):
    p = burn_import(tmp_path, fixture("linear__linear_with_bias.pt"), {"fc1.weight": (2, 3), "fc1.bias": (3,)}, {"fc1": "Linear"})
    close(linear(np.array(LINEAR_INPUT), p, "fc1"),
          [[[[-0.00432095, -1.107_101_2, 0.870_691_4], [0.024_595_5, -0.954_462_9, 0.48518157]],
            [[0.34315687, -0.757_384_2, 0.548_288], [-0.06608963, -1.072_072_7, 0.645_800_5]]]])  # fmt: skip


def test_linear_half_precision_through_the_chained_adapter(tmp_path):
    out = tmp_path / "half.bpk"
    convert(fixture("linear__linear.pt"), out, adapter="pytorch,half", module_types={"fc1": "Linear", "fc2": "Linear"})
    with burnpack.load(out) as pack:
        assert {pack[n].dtype for n in pack} == {burnpack.DType.F16}
        p = {n: pack[n].numpy().astype(np.float64) for n in pack}
    out = linear(relu(linear(np.array(LINEAR_INPUT), p, "fc1")), p, "fc2")
    close(out[0, 0, 0], [0.09778349, -0.13756673, 0.04962806, 0.08856435], atol=1e-3)


def test_batch_norm_fixture_renamed_to_gamma_beta(tmp_path):
    names = {f"norm1.{n}": (5,) for n in ("gamma", "beta", "running_mean", "running_var")}
    p = burn_import(tmp_path, fixture("batch_norm__batch_norm2d.pt"), names, {"norm1": "BatchNorm2d"})
    close(batch_norm(np.ones((1, 5, 2, 2)) - 0.3, p, "norm1"), np.full((1, 5, 2, 2), 0.68515635))


def test_layer_norm_fixture(tmp_path):
    p = burn_import(tmp_path, fixture("layer_norm__layer_norm.pt"), {"norm1.gamma": (2,), "norm1.beta": (2,)}, {"norm1": "LayerNorm"})
    x = np.array([[[[0.757_631_6, 0.27931088], [0.40306926, 0.73468447]], [[0.02928156, 0.799_858_6], [0.39713734, 0.75437194]]]])
    close(layer_norm(x, p, "norm1"), [[[[0.99991274, -0.999_912_5], [-0.999_818_3, 0.999_818_3]],
                                       [[-0.999_966_2, 0.99996626], [-0.99984336, 0.99984336]]]], atol=1e-3)  # fmt: skip


def test_group_norm_fixture(tmp_path):
    p = burn_import(tmp_path, fixture("group_norm__group_norm.pt"), {"norm1.gamma": (6,), "norm1.beta": (6,)}, {"norm1": "GroupNorm"})
    x = np.array([[
        [[0.757_631_6, 0.27931088], [0.40306926, 0.73468447]], [[0.02928156, 0.799_858_6], [0.39713734, 0.75437194]],
        [[0.569_508_5, 0.43877792], [0.63868046, 0.524_665_9]], [[0.682_614_1, 0.305_149_5], [0.46354562, 0.45498633]],
        [[0.572_472, 0.498_002_6], [0.93708336, 0.65559506]], [[0.31379688, 0.19801933], [0.41619217, 0.28432965]],
    ]])  # fmt: skip
    close(group_norm(x, p, "norm1", 2), [[
        [[1.042_578_5, -1.122_016_7], [-0.56195974, 0.938_733_6]], [[-2.253_500_7, 1.233_672_9], [-0.588_804_1, 1.027_827_3]],
        [[0.19124532, -0.40036356], [0.504_276_5, -0.01168585]], [[1.013_829_2, -0.891_984_6], [-0.09224463, -0.13546038]],
        [[0.45772314, 0.08172822], [2.298_641_4, 0.877_410_4]], [[-0.84832406, -1.432_883_4], [-0.331_331_5, -0.997_103_7]],
    ]], atol=1e-3)  # fmt: skip


def test_embedding_fixture_is_not_transposed(tmp_path):
    p = burn_import(tmp_path, fixture("embedding__embedding.pt"), {"embed.weight": (10, 3)}, {"embed": "Embedding"})
    out = p["embed.weight"][np.array([[1, 2, 4, 5], [4, 3, 2, 9]])]
    close(out, [[[-1.609_484_9, -0.10016718, -0.609_188_9], [-0.97977227, -1.609_096_3, -0.712_144_6],
                 [-0.22227049, 1.687_113_4, -0.32062083], [-0.29934573, 1.879_345_7, -0.07213178]],
                [[-0.22227049, 1.687_113_4, -0.32062083], [0.303_722, -0.777_314_3, -0.25145486],
                 [-0.97977227, -1.609_096_3, -0.712_144_6], [-0.02878714, 2.357_111, -1.037_338_7]]], atol=1e-3)  # fmt: skip


def test_conv1d_fixture(tmp_path):
    p = burn_import(tmp_path, fixture("conv1d__conv1d.pt"), {"conv1.weight": (2, 2, 2), "conv1.bias": (2,), "conv2.weight": (2, 2, 2)},
                    {"conv1": "Conv1d", "conv2": "Conv1d"})  # fmt: skip
    x = np.array([[[0.93708336, 0.65559506, 0.31379688, 0.19801933, 0.41619217, 0.28432965],
                   [0.33977574, 0.523_940_8, 0.798_063_9, 0.77176833, 0.01122457, 0.80996025]]])  # fmt: skip
    out = conv1d(conv1d(x, p["conv1.weight"], p["conv1.bias"]), p["conv2.weight"])
    close(out, [[[0.02987457, 0.03134188, 0.04234261, -0.02437721], [-0.03788019, -0.02972012, -0.00806090, -0.01981254]]], atol=1e-7)


def test_conv2d_fixture(tmp_path):
    shapes = {"conv1.weight": (2, 2, 2, 2), "conv1.bias": (2,), "conv2.weight": (2, 2, 2, 2)}
    p = burn_import(tmp_path, fixture("conv2d__conv2d.pt"), shapes, {"conv1": "Conv2d", "conv2": "Conv2d"})
    close(conv2d(conv2d(np.array(CONV_INPUT), p["conv1.weight"], p["conv1.bias"]), p["conv2.weight"]), CONV_EXPECTED, atol=1e-7)


def test_conv_transpose1d_fixture(tmp_path):
    shapes = {"conv1.weight": (2, 2, 2), "conv1.bias": (2,), "conv2.weight": (2, 2, 2)}
    p = burn_import(tmp_path, fixture("conv_transpose1d__conv_transpose1d.pt"), shapes, {"conv1": "ConvTranspose1d", "conv2": "ConvTranspose1d"})
    x = np.array([[[0.93708336, 0.65559506], [0.31379688, 0.19801933]]])
    out = conv_transpose1d(conv_transpose1d(x, p["conv1.weight"], p["conv1.bias"]), p["conv2.weight"])
    close(out, [[[0.02935525, 0.01119324, -0.01356167, -0.00682688], [0.01644749, -0.01429807, 0.00083987, 0.00279229]]], atol=1e-7)


def test_conv_transpose2d_fixture(tmp_path):
    shapes = {"conv1.weight": (2, 2, 2, 2), "conv1.bias": (2,), "conv2.weight": (2, 2, 2, 2)}
    p = burn_import(tmp_path, fixture("conv_transpose2d__conv_transpose2d.pt"), shapes, {"conv1": "ConvTranspose2d", "conv2": "ConvTranspose2d"})
    x = np.array([[[[0.024_595_8, 0.25883394], [0.93905586, 0.416_715_5]], [[0.713_979_7, 0.267_644_3], [0.990_609, 0.28845078]]]])
    out = conv_transpose2d(conv_transpose2d(x, p["conv1.weight"], p["conv1.bias"]), p["conv2.weight"])
    close(out, [[
        [[0.04547675, 0.01879685, -0.01636661, 0.00310803], [0.02090115, 0.01192738, -0.048_240_2, 0.02252235],
         [0.03249975, -0.00460748, 0.05003899, 0.04029131], [0.02185687, -0.10226749, -0.06508022, -0.01267705]],
        [[0.00277598, -0.00513832, -0.059_048_3, 0.00567626], [-0.03149522, -0.195_757_4, 0.03474613, 0.01997269],
         [-0.10096474, 0.00679589, 0.041_919_7, -0.02464108], [-0.03174751, 0.02963913, -0.02703723, -0.01860938]],
    ]], atol=1e-6)  # fmt: skip


def test_key_remap_fixture(tmp_path):
    shapes = {"conv1.weight": (2, 2, 2, 2), "conv1.bias": (2,), "conv2.weight": (2, 2, 2, 2)}
    p = burn_import(tmp_path, fixture("key_remap__key_remap.pt"), shapes, remap=[(r"conv\.(.*)", "$1")])
    close(conv2d(conv2d(np.array(CONV_INPUT), p["conv1.weight"], p["conv1.bias"]), p["conv2.weight"]), CONV_EXPECTED)


def test_key_remap_chained_fixture(tmp_path):
    rules = [(r"(.+)\.block\.0\.(.+)", "$1.conv.$2"), (r"(.+)\.block\.1\.(.+)", "$1.bn.$2"), (r"layer\.([0-9])\.(.+)", "layer.blocks.$1.$2")]
    bn = ("gamma", "beta", "running_mean", "running_var")
    shapes = {"conv.weight": (6, 3, 3, 3), **{f"bn.{n}": (6,) for n in bn}}
    for i in range(2):
        shapes[f"layer.blocks.{i}.conv.weight"] = (6, 6, 1, 1)
        shapes.update({f"layer.blocks.{i}.bn.{n}": (6,) for n in bn})
    types = {"bn": "BatchNorm", "layer.blocks.0.bn": "BatchNorm", "layer.blocks.1.bn": "BatchNorm"}
    p = burn_import(tmp_path, fixture("key_remap_chained__key_remap.pt"), shapes, types, remap=rules)
    x = np.array([[
        [[0.76193494, 0.626_546_1, 0.49510366, 0.11974698], [0.07161391, 0.03232569, 0.704_681, 0.254_516],
         [0.399_373_7, 0.21224737, 0.40888822, 0.14808255], [0.17329216, 0.665_855_4, 0.351_401_8, 0.808_671_6]],
        [[0.33959562, 0.13321638, 0.41178054, 0.257_626_3], [0.347_029_2, 0.02400219, 0.77974546, 0.15189773],
         [0.75130886, 0.726_892_1, 0.85721636, 0.11647397], [0.859_598_4, 0.263_624_2, 0.685_534_6, 0.96955734]],
        [[0.42948407, 0.49613327, 0.38488472, 0.08250773], [0.73995143, 0.00364107, 0.81039995, 0.87411255],
         [0.972_853_2, 0.38206023, 0.08917904, 0.61241513], [0.77621365, 0.00234562, 0.38650817, 0.20027226]],
    ]])  # fmt: skip
    y = batch_norm(conv2d(x, p["conv.weight"]), p, "bn")
    for i in range(2):
        y = batch_norm(conv2d(y, p[f"layer.blocks.{i}.conv.weight"]), p, f"layer.blocks.{i}.bn")
    close(y, [[[[0.198_967_1, 0.17847246], [0.06883702, 0.20012866]], [[0.17582723, 0.11344293], [0.05444185, 0.13307181]],
               [[0.192_229_5, 0.20391327], [0.06150475, 0.22688155]], [[0.00230906, -0.02177845], [0.01129148, 0.00925517]],
               [[0.14751078, 0.14433631], [0.05498439, 0.29049855]], [[0.16868964, 0.133_269_3], [0.06917118, 0.35094324]]]])  # fmt: skip


def test_key_remap_chained_without_the_layer_rule_misses_tensors(tmp_path):
    rules = [(r"(.+)\.block\.0\.(.+)", "$1.conv.$2"), (r"(.+)\.block\.1\.(.+)", "$1.bn.$2")]
    with pytest.raises(ConversionError, match="layer.blocks.0.conv.weight"):
        convert(fixture("key_remap_chained__key_remap.pt"), tmp_path / "x.bpk", adapter="pytorch", remap=rules,
                allow_unmatched={"adapter"}, expect={"conv.weight": (6, 3, 3, 3), "layer.blocks.0.conv.weight": (6, 6, 1, 1)})  # fmt: skip


def test_non_contiguous_indexes_fixture_renumbered(tmp_path):
    shapes = {}
    for i in range(5):
        shapes[f"fc.{i}.weight"], shapes[f"fc.{i}.bias"] = (2, 2, 3, 3), (2,)
    p = burn_import(tmp_path, fixture("non_contiguous_indexes__non_contiguous_indexes.pt"), shapes)
    x = np.array([[
        [[0.67890584, 0.307_537_2, 0.265_156_2, 0.528_318_8, 0.86194897], [0.14828813, 0.73480314, 0.821_220_7, 0.989_098_6, 0.15003455],
         [0.62109494, 0.13028657, 0.926_875_1, 0.30604684, 0.80117637], [0.514_885_7, 0.46105868, 0.484_046_1, 0.58499724, 0.73569804],
         [0.58018994, 0.65252745, 0.05023766, 0.864_268_7, 0.935_932]],
        [[0.913_302_9, 0.869_611_3, 0.139_184_3, 0.314_65, 0.94086266], [0.11917073, 0.953_610_6, 0.10675198, 0.14779574, 0.744_439],
         [0.14075547, 0.38544965, 0.863_745_9, 0.89604443, 0.97287786], [0.39854127, 0.11136961, 0.99230546, 0.39348692, 0.29428244],
         [0.621_886_9, 0.15033776, 0.828_640_1, 0.81336635, 0.10325938]],
    ]])  # fmt: skip
    for i in range(5):
        x = relu(conv2d(x, p[f"fc.{i}.weight"], p[f"fc.{i}.bias"], padding=1))
    want = np.zeros((1, 2, 5, 5))
    want[0, 0, 4] = [0.04485746, 0.03582812, 0.03432692, 0.02892298, 0.013_844_3]
    close(x, want, atol=1e-7)


@pytest.mark.parametrize("depthwise", [False, True])
def test_enum_module_fixture_gets_the_variant_segment(tmp_path, depthwise):
    x = np.array([[
        [[0.713_979_7, 0.267_644_3, 0.990_609, 0.28845078, 0.874_962_4], [0.505_920_8, 0.23659128, 0.757_007_4, 0.23458993, 0.64705235],
         [0.355_621_4, 0.445_182_8, 0.01930594, 0.26160914, 0.771_317], [0.37846136, 0.99802476, 0.900_794_2, 0.476_588_2, 0.16625845],
         [0.804_481_1, 0.65517855, 0.17679012, 0.824_772_3, 0.803_550_9]],
        [[0.943_447_5, 0.21972018, 0.417_697, 0.49031407, 0.57302874], [0.12054086, 0.14518881, 0.772_002_3, 0.38275403, 0.744_236_7],
         [0.52850497, 0.664_172_4, 0.60994434, 0.681_799_7, 0.74785537], [0.03694397, 0.751_675_7, 0.148_438_4, 0.12274551, 0.530_407_2],
         [0.414_796_4, 0.793_662, 0.21043217, 0.05550903, 0.863_884_4]],
    ]])  # fmt: skip
    if depthwise:
        shapes = {"conv.DwsConv.dconv.weight": (2, 1, 3, 3), "conv.DwsConv.dconv.bias": (2,),
                  "conv.DwsConv.pconv.weight": (2, 2, 1, 1), "conv.DwsConv.pconv.bias": (2,)}  # fmt: skip
        p = burn_import(tmp_path, fixture("enum_module__enum_depthwise_true.pt"), shapes)
        y = conv2d(conv2d(x, p["conv.DwsConv.dconv.weight"], p["conv.DwsConv.dconv.bias"], groups=2),
                   p["conv.DwsConv.pconv.weight"], p["conv.DwsConv.pconv.bias"])  # fmt: skip
        want = [[[[0.77874625, 0.859_017_6, 0.834_283_5], [0.773_056_4, 0.73817325, 0.78292674], [0.710_775_2, 0.747_187_2, 0.733_264_4]],
                 [[-0.44891885, -0.49027523, -0.394_170_7], [-0.43836114, -0.33961445, -0.387_311_5], [-0.581_134_3, -0.34197026, -0.535_035_7]]]]  # fmt: skip
    else:
        p = burn_import(tmp_path, fixture("enum_module__enum_depthwise_false.pt"), {"conv.Conv.weight": (2, 2, 3, 3), "conv.Conv.bias": (2,)})
        y = conv2d(x, p["conv.Conv.weight"], p["conv.Conv.bias"])
        want = [[[[0.35449377, -0.02832414, 0.490_976_1], [0.29709217, 0.332_586_3, 0.30594018], [0.18101373, 0.30932188, 0.30558896]],
                 [[-0.17683622, -0.13244139, -0.05608707], [0.23467252, -0.07038684, 0.255_044_1], [-0.241_931_3, -0.20476191, -0.14468731]]]]  # fmt: skip
    close(y, want)


def test_model_without_enum_variants_loads_into_burn_enum_paths(tmp_path):
    src = require(PYTORCH_FIXTURES / "modules" / "model_without_enum_variants.pt")
    shapes = {"feature.BaseConv.weight": (3, 64), "feature.BaseConv.bias": (64,), "classifier.weight": (64, 10), "classifier.bias": (10,)}
    p = burn_import(tmp_path, src, shapes, {"feature": "Linear", "classifier": "Linear"})
    raw = read_pytorch(src)
    np.testing.assert_array_equal(p["feature.BaseConv.weight"], raw["feature.weight"].T)


def test_complex_nested_fixture_with_inferred_types(tmp_path):
    bn = ("gamma", "beta", "running_mean", "running_var")
    shapes = {}
    for i, (cin, cout) in enumerate(((2, 4), (4, 6))):
        shapes[f"conv_blocks.{i}.conv.weight"], shapes[f"conv_blocks.{i}.conv.bias"] = (cout, cin, 3, 2), (cout,)
        shapes.update({f"conv_blocks.{i}.norm.{n}": (cout,) for n in bn})
    shapes.update({f"norm1.{n}": (6,) for n in bn})
    shapes.update({"fc1.weight": (120, 12), "fc1.bias": (12,), "fc2.weight": (12, 10), "fc2.bias": (10,)})
    p = burn_import(tmp_path, fixture("complex_nested__complex_nested.pt"), shapes, infer_types=True)
    x = np.ones((1, 2, 9, 6)) - 0.5
    for i in range(2):
        x = batch_norm(conv2d(x, p[f"conv_blocks.{i}.conv.weight"], p[f"conv_blocks.{i}.conv.bias"]), p, f"conv_blocks.{i}.norm")
    x = batch_norm(x, p, "norm1").reshape(1, -1)
    y = log_softmax(linear(relu(linear(x, p, "fc1")), p, "fc2"))
    close(y, [[-2.306_613, -2.058_945_4, -2.298_372_7, -2.358_294, -2.296_395_5, -2.416_090_5, -2.107_669, -2.428_420_8, -2.526_469, -2.319_918_6]])


def test_complex_nested_partial_model_via_remap_and_allow_partial(tmp_path):
    shapes = {"conv1.conv.weight": (4, 2, 3, 2), "conv1.conv.bias": (4,), **{f"conv1.norm.{n}": (4,) for n in ("gamma", "beta", "running_mean", "running_var")}}
    p = burn_import(tmp_path, fixture("complex_nested__complex_nested.pt"), shapes, {"conv1.norm": "BatchNorm"},
                    remap=[(r"conv_blocks\.0\.(.*)", "conv1.$1")])  # fmt: skip
    y = batch_norm(conv2d(np.ones((1, 2, 9, 6)) - 0.5, p["conv1.conv.weight"], p["conv1.conv.bias"]), p, "conv1.norm")
    assert abs(y.sum() - 4.871538) < 2e-6


def test_multi_layer_safetensors_with_the_pytorch_adapter(tmp_path):
    bn = {f"norm1.{n}": (4,) for n in ("gamma", "beta", "running_mean", "running_var")}
    shapes = {"conv1.weight": (4, 3, 3, 3), "conv1.bias": (4,), **bn, "fc1.weight": (256, 16), "fc1.bias": (16,)}
    p = burn_import(tmp_path, fixture("multi_layer.safetensors"), shapes, {"norm1": "BatchNorm", "fc1": "Linear"})
    x = relu(batch_norm(conv2d(np.ones((1, 3, 8, 8)), p["conv1.weight"], p["conv1.bias"], padding=1), p, "norm1")).reshape(1, -1)
    close(linear(x, p, "fc1"), [[0.04971555, -0.16849735, 0.05182848, -0.18032673, 0.23138367, 0.05041867, 0.13005908, -0.32202929,
                                 -0.07915690, -0.03232457, -0.19790289, -0.17476529, -0.19627589, -0.21757686, -0.31376451, 0.08377837]])  # fmt: skip


def test_top_level_key_fixture(tmp_path):
    src = fixture("top_level_key__top_level_key.pt")
    shapes = {"conv1.weight": (2, 2, 2, 2), "conv1.bias": (2,)}
    with pytest.raises(ConversionError, match="missing tensors"):
        burn_import(tmp_path, src, shapes)
    assert set(burn_import(tmp_path, src, shapes, top_level_key="my_state_dict")) == set(shapes)


def test_missing_module_field_fixture_names_the_field(tmp_path):
    with pytest.raises(ConversionError, match="do_not_exist_in_pt"):
        burn_import(tmp_path, fixture("missing_module_field__missing_module_field.pt"),
                    {"do_not_exist_in_pt.weight": (2, 2, 2, 2), "do_not_exist_in_pt.bias": (2,)})  # fmt: skip


def test_boolean_integer_and_buffer_fixtures(tmp_path):
    p = burn_import(tmp_path, fixture("boolean__boolean.pt"), {"buffer": (3,)})
    assert p["buffer"].tolist() == [1, 0, 1]  # Bool(U8)
    with burnpack.load(tmp_path / "boolean__boolean.bpk") as pack:
        assert pack["buffer"].dtype == burnpack.DType.Bool(burnpack.BoolStore.U8)
    p = burn_import(tmp_path, fixture("integer__integer.pt"), {"buffer": (3,)})
    assert p["buffer"].dtype == np.int64 and p["buffer"].tolist() == [1, 2, 3]
    p = burn_import(tmp_path, fixture("buffer__buffer.pt"), {"buffer": (3, 3)})
    close(p["buffer"] + 1, np.full((3, 3), 2.0))


def test_config_fixture_reads_to_burns_net_config():
    config = read_pytorch_object(fixture("config__weights_with_config.pt"))["my_config"]
    assert config == {
        "n_head": 2, "n_layer": 3, "d_model": 512, "some_float": 0.1, "some_int": 1, "some_bool": True,
        "some_str": "hello", "some_list_int": [1, 2, 3], "some_list_str": ["hello", "world"],
        "some_list_float": [0.1, 0.2, 0.3], "some_dict": {"some_key": "some_value"},
    }  # fmt: skip


MNIST_BURN_MODEL = {  # examples/import-model-weights/src/model.rs, in field order
    "conv1.weight": (8, 1, 3, 3), "conv1.bias": (8,), "conv2.weight": (16, 8, 3, 3), "conv2.bias": (16,),
    "conv3.weight": (24, 16, 3, 3), "conv3.bias": (24,),
    "norm1.gamma": (24,), "norm1.beta": (24,), "norm1.running_mean": (24,), "norm1.running_var": (24,),
    "fc1.weight": (11616, 32), "fc1.bias": (32,), "fc2.weight": (32, 10), "fc2.bias": (10,),
    "norm2.gamma": (10,), "norm2.beta": (10,), "norm2.running_mean": (10,), "norm2.running_var": (10,),
}  # fmt: skip


def _descriptors(path: Path) -> list[tuple]:
    with burnpack.load(path) as pack:
        views = sorted(pack.tensors(), key=lambda v: v.data_offsets)
        return [(v.name, v.dtype, v.shape, v.data_offsets) for v in views]


def test_mnist_pt_and_safetensors_convert_to_the_same_bpk_layout(tmp_path):
    pt = require(PYTORCH_FIXTURES / "examples" / "mnist.pt")
    st = require(PYTORCH_FIXTURES / "examples" / "mnist.safetensors")
    convert(pt, tmp_path / "pt.bpk")
    convert(st, tmp_path / "st.bpk")
    # Same names, dtypes and shapes (the two files hold different weights); the layout follows
    # each source's data order, so compare as sets.
    assert sorted(d[:3] for d in _descriptors(tmp_path / "pt.bpk")) == sorted(d[:3] for d in _descriptors(tmp_path / "st.bpk"))


def test_mnist_pt_and_safetensors_import_into_burns_mnist_model_identically(tmp_path):
    types = {"norm1": "BatchNorm", "norm2": "BatchNorm", "fc1": "Linear", "fc2": "Linear"}
    for name in ("mnist.pt", "mnist.safetensors"):
        convert(require(PYTORCH_FIXTURES / "examples" / name), tmp_path / f"{name}.bpk", adapter="pytorch",
                module_types=types, expect=MNIST_BURN_MODEL)  # fmt: skip
    a, b = _descriptors(tmp_path / "mnist.pt.bpk"), _descriptors(tmp_path / "mnist.safetensors.bpk")
    assert a == b  # names, dtypes, shapes and data offsets: byte layout identical
    assert [d[0] for d in a] == list(MNIST_BURN_MODEL)  # data in the Burn model's field order
    with burnpack.load(tmp_path / "mnist.pt.bpk") as pack:
        raw = read_pytorch(PYTORCH_FIXTURES / "examples" / "mnist.pt")
        np.testing.assert_array_equal(pack["fc1.weight"].numpy(), raw["fc1.weight"].T)
        np.testing.assert_array_equal(pack["norm2.gamma"].numpy(), raw["norm2.weight"])
