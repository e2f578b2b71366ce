"""Key remapping, filters, contiguous indices and enum variants, against burn-store's own tests
(``keyremapper.rs``, ``filter.rs``) and the Rust ``regex`` replacement rules."""

from __future__ import annotations

import pytest

from burnpack.interop.remap import (
    KeyRemapper,
    PathFilter,
    insert_enum_variants,
    map_indices_contiguous,
    parse_rule,
    strip_enum_variants,
)


def test_remap_rule_with_burn_dollar_group_syntax():
    assert KeyRemapper([(r"conv\.(.*)", "$1")]).remap("conv.conv1.weight") == "conv1.weight"


def test_remap_rule_with_burn_braced_named_group():
    remapper = KeyRemapper([(r"(?<head>\w+)\.w$", "${head}_x.w")])
    assert remapper.remap("ab.w") == "ab_x.w"


def test_remap_rule_with_python_backreferences():
    assert KeyRemapper([(r"(\w+)\.(\w+)", r"\2.\g<1>")]).remap("a.b") == "b.a"


def test_remap_dollar_name_is_greedy_and_missing_groups_expand_to_nothing():
    # Rust: "$1a" names group "1a", which does not exist -> ""; "$$" is a literal dollar.
    assert KeyRemapper([(r"(x)", "$1a|$$|${1}a|$9")]).remap("x") == "|$|xa|"


def test_remap_lone_dollar_is_literal():
    assert KeyRemapper([(r"x", "$.y")]).remap("x") == "$.y"


def test_remap_rules_apply_in_order_each_to_the_previous_result():
    remapper = KeyRemapper([(r"^encoder\.", "transformer.encoder."), (r"\.gamma$", ".weight")])
    assert remapper.remap("encoder.layer1.gamma") == "transformer.encoder.layer1.weight"
    assert remapper.remap("decoder.layer1.weight") == "decoder.layer1.weight"


def test_remap_chained_rules_of_burns_key_remap_chained_test():
    remapper = KeyRemapper(
        [
            (r"(.+)\.block\.0\.(.+)", "$1.conv.$2"),
            (r"(.+)\.block\.1\.(.+)", "$1.bn.$2"),
            (r"layer\.([0-9])\.(.+)", "layer.blocks.$1.$2"),
        ]
    )
    assert remapper.remap("layer.1.block.0.weight") == "layer.blocks.1.conv.weight"
    assert remapper.remap("layer.0.block.1.running_var") == "layer.blocks.0.bn.running_var"
    assert remapper.remap("conv.weight") == "conv.weight"


def test_remap_all_reports_rules_that_matched_nothing():
    remapper = KeyRemapper([(r"^a\.", "x."), (r"^zzz", "y")])
    mapping, unmatched = remapper.remap_all(["a.w", "b.w"])
    assert mapping == {"a.w": "x.w", "b.w": "b.w"}
    assert [r.pattern for r in unmatched] == ["^zzz"]


def test_remap_invalid_pattern_is_an_error():
    with pytest.raises(ValueError, match="invalid remap regex '\\(': missing \\)"):
        KeyRemapper([("(", "x")])


def test_remap_python_reference_to_missing_group_is_an_error():
    with pytest.raises(ValueError, match="invalid replacement"):
        KeyRemapper([("(a)", r"\2")])


def test_parse_rule_splits_at_the_first_top_level_equals():
    assert parse_rule(r"conv\.(.*)=$1") == (r"conv\.(.*)", "$1")
    assert parse_rule(r"(?P<a>x)(?P=a)=y") == (r"(?P<a>x)(?P=a)", "y")
    assert parse_rule("a=>b=c") == ("a", "b=c")
    with pytest.raises(ValueError):
        parse_rule("no-equals")


def test_map_indices_contiguous_basic():
    names = ["fc.0.weight", "fc.0.bias", "fc.2.weight", "fc.2.bias", "fc.4.weight", "fc.4.bias"]
    assert list(map_indices_contiguous(names).values()) == [
        "fc.0.weight", "fc.0.bias", "fc.1.weight", "fc.1.bias", "fc.2.weight", "fc.2.bias",
    ]  # fmt: skip


def test_map_indices_contiguous_keeps_contiguous_and_unindexed_names():
    names = ["fc.0.weight", "fc.1.weight", "output.weight"]
    assert map_indices_contiguous(names) == {n: n for n in names}


def test_map_indices_contiguous_numbers_each_prefix_separately():
    mapping = map_indices_contiguous(["encoder.0.w", "encoder.2.w", "decoder.1.w", "decoder.5.w"])
    assert mapping == {"encoder.0.w": "encoder.0.w", "encoder.2.w": "encoder.1.w", "decoder.1.w": "decoder.0.w", "decoder.5.w": "decoder.1.w"}


def test_map_indices_contiguous_nested_sequential_uses_original_prefixes():
    names = [
        "feature.layers.0.conv_block.0.weight",
        "feature.layers.0.conv_block.2.weight",
        "feature.layers.2.conv_block.0.weight",
        "feature.layers.2.conv_block.2.weight",
    ]
    assert list(map_indices_contiguous(names).values()) == [
        "feature.layers.0.conv_block.0.weight",
        "feature.layers.0.conv_block.1.weight",
        "feature.layers.1.conv_block.0.weight",
        "feature.layers.1.conv_block.1.weight",
    ]


def test_map_indices_contiguous_deeply_nested():
    names = ["a.0.b.0.c.0.weight", "a.0.b.0.c.2.weight", "a.0.b.2.c.0.weight", "a.2.b.0.c.0.weight"]
    assert list(map_indices_contiguous(names).values()) == [
        "a.0.b.0.c.0.weight", "a.0.b.0.c.1.weight", "a.0.b.1.c.0.weight", "a.1.b.0.c.0.weight",
    ]  # fmt: skip


def test_map_indices_contiguous_of_nothing_is_nothing():
    assert map_indices_contiguous([]) == {}


def test_strip_enum_variants_drops_upper_camel_case_segments():
    assert strip_enum_variants("conv.DwsConv.dconv.weight") == "conv.dconv.weight"
    assert strip_enum_variants("feature.Base.weight") == "feature.weight"
    assert strip_enum_variants("fc.weight") == "fc.weight"


def test_strip_enum_variants_with_an_explicit_variant_map():
    assert strip_enum_variants("a.Keep.x.V.w", {"a.Keep.x": "V"}) == "a.Keep.x.w"


def test_insert_enum_variants_is_the_reverse():
    assert insert_enum_variants("conv.dconv.weight", {"conv": "DwsConv"}) == "conv.DwsConv.dconv.weight"
    assert insert_enum_variants("other.weight", {"conv": "DwsConv"}) == "other.weight"


def test_empty_filter_matches_nothing_and_all_matches_everything():
    assert PathFilter().is_empty()
    assert not PathFilter().matches("encoder.weight")
    assert PathFilter.all().matches("anything")


def test_filter_exact_paths():
    f = PathFilter().with_full_path("encoder.weight").with_full_path("decoder.bias")
    assert f.matches("encoder.weight") and f.matches("decoder.bias")
    assert not f.matches("encoder.bias")


def test_filter_regexes_are_searched_not_anchored():
    f = PathFilter(regexes=[r"layers\.0\.", r"\.weight$"])
    assert f.matches("model.layers.0.bias")
    assert f.matches("decoder.weight")
    assert not f.matches("decoder.bias")


def test_filter_predicates_see_path_and_module_type():
    f = PathFilter(predicates=[lambda path, module_type: module_type == "Struct:Linear"])
    assert f.matches("fc.weight", "Struct:Linear")
    assert not f.matches("fc.weight", "Struct:Conv2d")
    assert not f.matches("fc.weight")


def test_filter_criteria_combine_with_or():
    f = PathFilter(["special.tensor"], [r"^encoder\."], [lambda p, _: "attention" in p])
    assert f.matches("special.tensor") and f.matches("encoder.x") and f.matches("self_attention.q")
    assert not f.matches("decoder.weight")


def test_filter_invalid_regex_is_an_error():
    with pytest.raises(ValueError, match="invalid filter regex"):
        PathFilter(regexes=["("])
