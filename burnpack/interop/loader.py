"""Burn's transformations as options of the record loader.

:func:`load_record` reads any supported file (or live torch object) into a
:class:`~burnpack.records.ModuleRecord` after the converter's transformations;
:func:`load_into` goes on to apply it to a target — a mapping, a nested module structure
(``burnpack.records.tree``: dicts, lists, dataclasses, ``Variant``...) or a ``torch.nn.Module`` —
the way burn-store's ``PytorchStore`` / ``SafetensorsStore`` load into a Burn module:

* the target's paths and shapes are the expectation: a path takes the tensor of the same name,
  else of its enum-variant-free name (``skip_enum_variants``), else of the adapter's alternative
  parameter name (``gamma`` ↔ ``weight``);
* a ``torch.nn.Module`` target supplies the module types the adapter needs;
* missing tensors fail unless ``allow_partial``; shape mismatches fail unless
  ``validate=False``; tensors the target does not take are reported as unused and never fail
  (a store's rule — ``ModuleRecord.apply`` itself refuses them by default);
* the store-wide recipe options (``adapter``, ``map_indices_contiguous``,
  ``skip_enum_variants``) may change nothing, as with Burn's stores, where they are set once for
  every model; rules, filters and module types that match nothing still fail (``allow_unmatched``).
"""

from __future__ import annotations

from typing import Any

from ..codec._generated.metadata import BoolStore
from ..core.frameworks import is_torch_module
from ..records import LoadResult, ModuleRecord
from ..core.tensor import Tensor

STORE_RECIPE_OPTIONS = frozenset({"adapter", "map_indices_contiguous", "skip_enum_variants"})
"""Options a Burn store applies to every model alike: no error when one changes nothing."""
from .converter import ConversionReport, _describe, transform
from .limits import take_caps
from .registry import read_tensors

__all__ = ["load_into", "load_record"]


def load_record(
    source: Any,
    *,
    from_format: str | None = None,
    bool_store: str | BoolStore = BoolStore.U8,
    param_ids: str = "keep",
    **options: Any,
) -> tuple[ModuleRecord, ConversionReport]:
    """A ``ModuleRecord`` from any source after ``transform``'s options.

    Tensors without a ``param_id`` get a fresh one, as Burn's ``ModuleRecord::load`` gives them.

    Args:
        source: A path, URL, bytes or in-memory source (see ``read_tensors``).
        from_format: The source's format; by default from its content.
        bool_store: How Bool tensors of the source are typed when it does not say.
        param_ids: ``"keep"``, ``"new"`` or ``"drop"`` (see ``transform``).
        **options: ``transform``'s options (adapter, remap, filters, ``expect``...) and the caps
            the source is read within (``max_pickle_depth``...).

    Returns:
        The record and the conversion report.

    Raises:
        ConversionError: The source cannot be read or mapped.
    """
    if options.get("allow_unmatched", False) is not True:
        options["allow_unmatched"] = STORE_RECIPE_OPTIONS | set(options.get("allow_unmatched") or ())
    caps = take_caps(options)
    tset = read_tensors(source, from_format, top_level_key=options.get("top_level_key"), bool_store=bool_store, **caps)
    try:
        report = ConversionReport(source=_describe(source), source_format=tset.format, target_format="record")
        result, report = transform(tset, report=report, param_ids=param_ids, **options)
        tensors = [Tensor(e.name, e.dtype, e.shape, e.numpy(), param_id=e.param_id) for e in result.entries]
    finally:
        tset.close()
    return ModuleRecord(tensors), report


def load_into(
    target: Any,
    source: Any,
    *,
    allow_partial: bool = False,
    validate: bool = True,
    dtype_policy: str = "FromRecord",
    from_format: str | None = None,
    bool_store: str | BoolStore = BoolStore.U8,
    **options: Any,
) -> tuple[LoadResult, ConversionReport]:
    """Load ``source`` into ``target`` with Burn's transformations.

    Args:
        target: A mapping, nested structure or ``torch.nn.Module`` (see ``ModuleRecord.apply``).
        source: A path, URL, bytes or in-memory source.
        allow_partial: Allow target parameters absent from the source.
        validate: Refuse shape mismatches.
        dtype_policy: ``"FromRecord"``, or ``"CastToModule"`` to cast the data to each target
            parameter's dtype.
        from_format: The source's format; by default from its content.
        bool_store: How Bool tensors of the source are typed when it does not say.
        **options: ``transform``'s options (``adapter="pytorch"``, ``remap=...``,
            ``map_indices_contiguous=True``, ``filter=...``, ``module_types=...``).

    Returns:
        The record layer's ``LoadResult`` (the loaded module, its params and ids) and the
        conversion report.

    Raises:
        ConversionError: The source cannot be read or mapped.
        RecordValidationError: The record does not fit the target (Burn's message).
    """

    if is_torch_module(target):
        options.setdefault("module", target)
    record, report = load_record(
        source, from_format=from_format, bool_store=bool_store, expect=target,
        allow_partial=allow_partial, validate=validate, **options,
    )  # fmt: skip
    result = record.with_dtype_policy(dtype_policy).allow_partial(True).allow_unused(True).apply(target)
    return result, report
