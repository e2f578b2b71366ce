"""The allowlist unpickler's boundary (docs/bounds.md): what it returns is plain data or the
reader's own frozen stand-ins, never an allowlisted callable or class, and no opcode changes an
allowlisted object. Checked on hand-made attacks and on pickles generated opcode by opcode.

Payloads are harmless: the "disclosure" reads a marker buffer of this process."""

from __future__ import annotations

import collections
import io
import pickle
import struct
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable
from typing import Any, cast
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnpack.errors import PyTorchReadError
from burnpack.interop import dcp as dcp_reader
from burnpack.interop import pytorch as pytorch_reader
from burnpack.interop.pytorch import read_pytorch_buffer, read_pytorch_object, unpickle_allowing

MARKER = np.frombuffer(b"MARKER-OF-THE-TEST-PROCESS-1234!", np.uint8)


def array_interface(buffer: np.ndarray = MARKER) -> dict[str, Any]:
    """An ``__array_interface__`` pointing at ``buffer``: numpy trusts its data pointer."""
    return {"shape": (len(buffer),), "typestr": "|u1", "data": (buffer.ctypes.data, True), "version": 3}


# --- opcodes -------------------------------------------------------------------------------------


def glob(module: str, name: str) -> bytes:
    return f"c{module}\n{name}\n".encode()


def text(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw


def literal(value: object) -> bytes:
    """One value's opcodes, without memo puts (the generated programs own the memo)."""
    if value is None:
        return b"N"
    if isinstance(value, bool):
        return b"\x88" if value else b"\x89"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return b"J" + struct.pack("<i", value)
        raw = pickle.encode_long(value)  # type: ignore[attr-defined]
        return (b"\x8a" + bytes([len(raw)]) if len(raw) < 256 else b"\x8b" + struct.pack("<I", len(raw))) + raw
    if isinstance(value, float):
        return b"G" + struct.pack(">d", value)
    if isinstance(value, str):
        return text(value)
    if isinstance(value, bytes):
        return b"B" + struct.pack("<I", len(value)) + value
    if isinstance(value, dict):
        return b"}(" + b"".join(literal(k) + literal(v) for k, v in value.items()) + b"u"
    if isinstance(value, tuple):
        return b"(" + b"".join(map(literal, value)) + b"t"
    raise TypeError(value)


def as_zip(pickled: bytes, storages: dict[str, bytes] | None = None) -> bytes:
    """A ``torch.save`` zip in memory holding ``pickled`` (and a 16-float storage ``0``)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        for key, raw in (storages if storages is not None else {"0": bytes(64)}).items():
            archive.writestr(f"archive/data/{key}", raw)
    return out.getvalue()


def read_zip(pickled: bytes) -> object:
    return read_pytorch_buffer(memoryview(as_zip(pickled)))


def storage(numel: int = 16, kind: str = "FloatStorage") -> bytes:
    """torch's persistent id of storage ``0``."""
    return b"(" + text("storage") + glob("torch", kind) + text("0") + text("cpu") + literal(numel) + b"tQ"


def rebuild_v2(size: int = 16) -> bytes:
    """``_rebuild_tensor_v2(storage 0, 0, (size,), (1,), False, OrderedDict())``."""
    hooks = glob("collections", "OrderedDict") + b")R"
    return glob("torch._utils", "_rebuild_tensor_v2") + b"(" + storage() + literal(0) + literal((size,)) + literal((1,)) + b"\x89" + hooks + b"tR"


# --- the attacks of the campaign, each refused ---------------------------------------------------


def test_build_cannot_give_an_allowlisted_callable_an_array_interface() -> None:
    # {"step": _rebuild_tensor} with BUILD setting __array_interface__ on the function: the
    # optimizer converter's np.asarray(step) read the marker (any address: a crash or a leak).
    state = literal({"__array_interface__": array_interface()})
    attack = b"\x80\x02}(" + text("step") + glob("torch._utils", "_rebuild_tensor") + state + b"bu."
    with pytest.raises(PyTorchReadError, match="read-only"):
        read_zip(attack)


def test_an_allowlisted_callable_is_never_a_result() -> None:
    attack = b"\x80\x02}(" + text("step") + glob("torch._utils", "_rebuild_tensor_v2") + b"u."
    with pytest.raises(PyTorchReadError, match="allowlisted callable torch._utils._rebuild_tensor_v2 itself"):
        read_zip(attack)
    with pytest.raises(PyTorchReadError, match="itself"):
        unpickle_allowing(attack, {})


def test_a_stand_in_class_is_never_a_result() -> None:
    attack = b"\x80\x02}(" + text("args") + glob("argparse", "Namespace") + b"u."
    with pytest.raises(PyTorchReadError, match="class argparse.Namespace itself"):
        read_zip(attack)


def test_build_cannot_give_a_stand_in_class_attributes_its_instances_would_show() -> None:
    # BUILD(Namespace, (None, {"__array_interface__": ...})), then an instance: numpy would read
    # the class attribute through the instance.
    slots = b"(N" + literal({"__array_interface__": array_interface()}) + b"t"
    attack = b"\x80\x02" + glob("argparse", "Namespace") + b"q\x00" + slots + b"b0}(" + text("args") + b"h\x00)\x81u."
    with pytest.raises(PyTorchReadError, match="read-only"):
        read_zip(attack)


def test_a_pickled_ordered_dict_takes_no_attributes_from_build() -> None:
    state = literal({"state_dict": "x", "__array_interface__": array_interface(), "_metadata": {"": {"version": 1}}})
    attack = b"\x80\x02}(" + text("sd") + glob("collections", "OrderedDict") + b")R" + state + b"bu."
    for result in (unpickle_allowing(attack, {}), read_zip(attack)):
        ordered = result["sd"]  # type: ignore[index]
        assert isinstance(ordered, collections.OrderedDict)
        assert not hasattr(ordered, "state_dict") and not hasattr(ordered, "__array_interface__")
        assert np.asarray(ordered).dtype == object  # a dict, not a view of any memory


def test_a_real_state_dicts_metadata_attribute_still_loads(tmp_path: Any) -> None:
    torch = pytest.importorskip("torch")
    torch.save({"model": torch.nn.Linear(2, 3).state_dict()}, tmp_path / "m.pt")
    model = read_pytorch_object(tmp_path / "m.pt")["model"]  # type: ignore[index]
    assert type(model) is collections.OrderedDict and list(model) == ["weight", "bias"]


@pytest.mark.parametrize("other", [memoryview(b"x"), types.SimpleNamespace(), np.zeros(2), collections.deque()], ids=lambda o: type(o).__name__)
def test_a_result_holding_any_other_object_is_refused(other: object) -> None:
    # No opcode reaches such an object through today's allowlist; the walk refuses it anyway.
    with pytest.raises(PyTorchReadError, match="neither data nor a stand-in"):
        pytorch_reader._check_result({"x": [(1, other)]})


def test_a_stand_in_class_refuses_attribute_writes_whatever_sets_them() -> None:
    namespace = pytorch_reader.pickled_class("argparse", "Namespace")
    for name in ("__array_interface__", "__setstate__", "type_name"):
        with pytest.raises(AttributeError, match="read-only"):
            setattr(namespace, name, 1)
        with pytest.raises(AttributeError, match="read-only"):
            delattr(namespace, name)


def test_rebuild_tensor_takes_torchs_four_parameters_not_the_readers_dtype() -> None:
    # The reader's internal dtype parameter was reachable: a string dtype over an untyped storage
    # ended in an AttributeError traceback while the tensor was materialised.
    untyped = storage(64, "UntypedStorage")
    call = glob("torch._utils", "_rebuild_tensor") + b"(" + untyped + literal(0) + literal((4,)) + literal((1,)) + text("float32") + b"tR"
    with pytest.raises(PyTorchReadError, match=r"malformed pickle \(TypeError: .*4 positional arguments"):
        read_zip(b"\x80\x02}(" + text("t") + call + b"u.")


def test_rebuild_tensor_v3_takes_a_torch_dtype_marker_only() -> None:
    untyped = storage(64, "UntypedStorage")
    args = untyped + literal(0) + literal((4,)) + literal((1,)) + b"\x89" + glob("collections", "OrderedDict") + b")R"
    for dtype in (text("float32"), literal(10**300), b"}"):
        call = glob("torch._utils", "_rebuild_tensor_v3") + b"(" + args + dtype + b"tR"
        with pytest.raises(PyTorchReadError, match="not one of torch's dtypes"):
            read_zip(b"\x80\x02}(" + text("t") + call + b"u.")


@pytest.mark.parametrize(
    "number",
    [b"\x8b" + struct.pack("<I", 2080) + b"\x01" * 2080, b"L" + b"9" * 5001 + b"L\n", b"I" + b"9" * 400 + b"\n"],
    ids=["LONG4", "LONG text", "INT text"],
)
def test_an_integer_of_more_than_309_digits_is_refused_before_unpickling(number: bytes) -> None:
    with pytest.raises(PyTorchReadError, match="more than 309 digits"):
        read_zip(b"\x80\x02}(" + text("n") + number + b"u.")


def test_an_integer_of_309_digits_is_data() -> None:
    assert read_zip(b"\x80\x02}(" + text("n") + literal(10**308) + b"u.") == {"n": 10**308}


def test_numpy_scalar_dtypes_are_number_types_only() -> None:
    def scalar(name: str, data: bytes) -> bytes:
        dtype = glob("numpy", "dtype") + b"(" + text(name) + b"\x89\x88tR" + b"(" + literal(3) + text("<") + b"tb"
        return b"\x80\x02}(" + text("x") + glob("numpy.core.multiarray", "scalar") + b"(" + dtype + literal(data) + b"tRu."

    assert read_zip(scalar("f8", struct.pack("<d", 1.5))) == {"x": 1.5}
    for name in ("O", "V8", "(2,)f8", "S8", "M8"):
        with pytest.raises(PyTorchReadError, match="malformed numpy dtype"):
            read_zip(scalar(name, bytes(8)))


def test_a_long_or_controlled_global_name_is_quoted_as_a_short_escaped_excerpt() -> None:
    name = "\x1b]0;owned\x07" + "x" * 10_000
    with pytest.raises(PyTorchReadError) as caught:
        read_zip(b"\x80\x02}(" + text("a") + glob("os", name) + b"u.")
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message and len(message) < 600


def test_a_malformed_pickle_quotes_no_more_than_an_excerpt_of_itself() -> None:
    secret = "S" * 5000
    with pytest.raises(PyTorchReadError, match="malformed pickle") as caught:
        read_zip(b"\x80\x02S" + secret.encode() + b"\n.")  # a STRING without quotes: pickletools quotes it
    assert secret[:200] not in str(caught.value)



# A tuple nested 200,000 deep (one TUPLE1 byte per level) used as a dict key, a set item or a
# frozenset item: hashing it recursed in C until the stack overflowed.
DEEP_TUPLE = b"N" + b"\x85" * 200_000
HASHED = {
    "dict key": b"\x80\x04}" + DEEP_TUPLE + b"Ns.",
    "set item": b"\x80\x04\x8f(" + DEEP_TUPLE + b"\x90.",
    "frozenset item": b"\x80\x04(" + DEEP_TUPLE + b"\x91.",
}
_LOAD_IN_A_CHILD = """
import sys
from burnpack.errors import PyTorchReadError
from burnpack.interop.pytorch import read_pytorch_object, unpickle_allowing
try:
    unpickle_allowing(open(sys.argv[1], "rb").read(), {})
except PyTorchReadError as exc:
    print("refused:", exc)
try:
    read_pytorch_object(sys.argv[2])
except PyTorchReadError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize("pickled", HASHED.values(), ids=HASHED.keys())
def test_a_tuple_nested_too_deep_to_hash_is_refused_before_unpickling(tmp_path: Any, pickled: bytes) -> None:
    (tmp_path / "bare.pkl").write_bytes(pickled)
    (tmp_path / "m.pt").write_bytes(as_zip(pickled))
    # In a child: the failure this guards against is the interpreter's death, not an exception.
    child = subprocess.run([sys.executable, "-c", _LOAD_IN_A_CHILD, str(tmp_path / "bare.pkl"), str(tmp_path / "m.pt")],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.count("refused: the pickle nests tuples more than 1000 deep") == 2, child.stdout


@pytest.mark.parametrize(
    "tuple_1001_deep",
    [
        b"N" + b"\x85" * 600 + b"q\x00" + b"0h\x00" + b"\x85" * 401,  # half, memoised, fetched, nested on
        b"N" + b"\x85" * 600 + b"\x94" + b"0" + b"(" * 401 + b"h\x00" + b"t" * 401,  # MEMOIZE, MARK ... TUPLE
        b"N" + b"\x85" * 999 + b"2\x86\x85",  # DUP: a pair of two 999-deep tuples, the pair 1000, one more
        b"N" + (b"\x95" + struct.pack("<Q", 1) + b"\x85") * 1001,  # each level in a frame of its own
    ],
    ids=["memo", "memoize and mark", "dup", "frames"],
)
def test_tuple_nesting_is_followed_through_the_memo_and_marks(tuple_1001_deep: bytes) -> None:
    with pytest.raises(PyTorchReadError, match="nests tuples more than 1000 deep"):
        unpickle_allowing(b"\x80\x04}" + tuple_1001_deep + b"Ns.", {})


def test_tuples_nested_1000_deep_are_data() -> None:
    assert unpickle_allowing(b"\x80\x04}" + b"N" + b"\x85" * 1000 + b"Ns.", {}) is not None


# --- generated pickles ---------------------------------------------------------------------------

DCP_GLOBALS = dcp_reader._dcp_globals()
ALLOWED_TABLE = pytorch_reader._allowed_globals(pytorch_reader._storage_arg)
ALLOWED = sorted({*ALLOWED_TABLE, *DCP_GLOBALS})
NAMES = [*ALLOWED, ("os", "system"), ("builtins", "getattr"), ("copyreg", "_reconstructor")]
CALLABLES = [  # the allowlisted functions and classes: what BUILD attacks
    i for i, (table, key) in enumerate((DCP_GLOBALS if key in DCP_GLOBALS else ALLOWED_TABLE, key) for key in ALLOWED)
    if callable(table[key])
]
NAME = st.one_of(st.integers(0, len(NAMES) - 1), st.sampled_from(CALLABLES))
ATTRIBUTES = [
    "__array_interface__", "__array_struct__", "__array__", "state_dict", "param_groups", "__class__",
    "__dict__", "__call__", "__setstate__", "__code__", "__defaults__", "__kwdefaults__", "__wrapped__",
    "_function", "name", "key", "dtype", "storage", "shape", "stride", "offset", "state", "type_name",
    "numpy_name", "label", "items", "keys", "__getitem__", "__len__", "__iter__", "__reduce__", "order",
]  # fmt: skip
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
    st.sampled_from([10**308, -(10**308), 10**309, 2**64 - 1]),
    st.text(max_size=12), st.binary(max_size=12), st.sampled_from(ATTRIBUTES),
    st.sampled_from(["latin1", "torch.float32", "torch.strided", "cpu", "f8", "<", "storage", "0"]),
)  # fmt: skip
SLOT = st.integers(0, 1 << 16)  # taken modulo the slots made so far
REFS = st.lists(SLOT, max_size=4)

# Statements that make an object (stored in the next memo slot) ...
MAKE = st.one_of(
    st.tuples(st.just("global"), NAME),
    st.tuples(st.just("stack_global"), NAME),
    st.tuples(st.just("value"), VALUES),
    st.tuples(st.just("empty"), st.sampled_from([b"}", b"]", b")", b"\x8f"])),
    st.tuples(st.just("tuple"), REFS),
    st.tuples(st.just("list"), REFS),
    st.tuples(st.just("frozenset"), REFS),
    st.tuples(st.just("call"), SLOT, REFS),
    st.tuples(st.just("call_global"), st.sampled_from(CALLABLES), REFS),
    st.tuples(st.just("newobj_global"), st.sampled_from(CALLABLES), REFS),
    st.tuples(st.just("newobj"), SLOT, REFS),
    st.tuples(st.just("newobj_ex"), SLOT, REFS),
    st.tuples(st.just("obj"), SLOT, REFS),
    st.tuples(st.just("inst"), NAME, REFS),
    st.tuples(st.just("storage"), st.integers(0, 20), st.sampled_from(["FloatStorage", "UntypedStorage", "LongStorage"])),
    st.tuples(st.just("tensor"), st.integers(0, 16)),
)  # fmt: skip
# ... and statements that change one (any slot, whatever it holds).
STATE = st.one_of(
    st.dictionaries(st.sampled_from(ATTRIBUTES), SLOT, max_size=3).map(lambda d: ("dict", d)),
    st.dictionaries(st.sampled_from(ATTRIBUTES), SLOT, max_size=3).map(lambda d: ("slots", d)),
    SLOT.map(lambda s: ("ref", s)),
)
BUILD = st.tuples(st.just("build"), SLOT, STATE)
CHANGES = ("build", "setitem", "append", "appends", "additems")
CHANGE = st.one_of(
    BUILD,
    st.tuples(st.just("setitem"), SLOT, SLOT, SLOT),
    st.tuples(st.just("append"), SLOT, SLOT),
    st.tuples(st.just("appends"), SLOT, REFS),
    st.tuples(st.just("additems"), SLOT, REFS),
)
MADE_AND_BUILT = st.tuples(st.just("made"), MAKE, STATE)
"""BUILD on every kind of object, right after it is made."""
GLOBALS = st.lists(
    st.one_of(st.tuples(st.sampled_from(["global", "stack_global"]), NAME), st.tuples(st.just("made"), st.tuples(st.just("global"), NAME), STATE)),
    min_size=1, max_size=6,
)  # fmt: skip
PROGRAMS = st.tuples(st.builds(lambda a, b: a + b, GLOBALS, st.lists(st.one_of(MAKE, CHANGE, MADE_AND_BUILT), min_size=2, max_size=20)), REFS)
"""Statements, then the slots the result lists."""


def emit(program: tuple[list[tuple[Any, ...]], list[int]]) -> bytes:
    """The protocol-4 pickle of ``program``: each making statement memoised in the next slot
    (then given the state it carries, if any, by BUILD), each change applied to a slot (then
    popped); the result is a list of the chosen slots, in a dict."""
    statements, chosen = program
    out = bytearray(b"\x80\x04")
    made = 0

    def get(slot: int) -> bytes:
        return b"h" + bytes([slot % made])

    def gets(slots: list[int]) -> bytes:
        return b"".join(get(s) for s in slots) if made else b""

    def state(form: str, value: Any) -> bytes:
        if form == "ref":
            return get(value)
        items = b"}(" + b"".join(text(k) + get(v) for k, v in value.items()) + b"u"
        return items if form == "dict" else b"N" + items + b"\x86"

    def make(kind: str, *args: Any) -> bytes:
        if kind in ("global", "stack_global", "inst"):
            module, name = NAMES[args[0]]
            if kind == "inst":
                return b"(" + gets(args[1]) + f"i{module}\n{name}\n".encode()
            return glob(module, name) if kind == "global" else text(module) + text(name) + b"\x93"
        if kind == "value":
            return literal(args[0])
        if kind == "empty":
            return cast(bytes, args[0])
        if kind in ("tuple", "list", "frozenset"):
            return b"(" + gets(args[0]) + {"tuple": b"t", "list": b"l", "frozenset": b"\x91"}[kind]
        if kind in ("call_global", "newobj_global"):
            module, name = NAMES[args[0]]
            return glob(module, name) + b"(" + gets(args[1]) + (b"tR" if kind == "call_global" else b"t\x81")
        if kind in ("call", "newobj", "newobj_ex"):
            return get(args[0]) + b"(" + gets(args[1]) + b"t" + {"call": b"R", "newobj": b"\x81", "newobj_ex": b"}\x92"}[kind]
        if kind == "obj":
            return b"(" + get(args[0]) + gets(args[1]) + b"o"
        if kind == "storage":
            return storage(*args)
        return rebuild_v2(*args)

    def change(kind: str, target: int, *args: Any) -> bytes:
        if kind == "build":
            body = state(*args[0]) + b"b"
        elif kind == "setitem":
            body = get(args[0]) + get(args[1]) + b"s"
        elif kind == "append":
            body = get(args[0]) + b"a"
        else:
            body = b"(" + gets(args[0]) + (b"e" if kind == "appends" else b"\x90")
        return get(target) + body + b"0"

    for kind, *args in statements:
        if kind in CHANGES:
            if made:
                out += change(kind, *args)
            continue
        statement, given = args if kind == "made" else ((kind, *args), None)
        if made == 0 and statement[0] not in ("global", "stack_global", "value", "empty", "storage", "tensor", "call_global", "newobj_global"):
            continue  # it needs a slot to refer to
        out += make(*statement) + b"q" + bytes([made]) + b"0"
        made += 1
        if given is not None:
            out += change("build", made - 1, given)
        if made == 256:  # one-byte memo indices
            break
    out += b"}(" + text("r") + b"(" + (gets(chosen) if made else b"") + b"lu."
    return bytes(out)


def snapshot(value: object) -> object:
    """What a pickle could change on an allowlisted object: a function's attributes, defaults and
    code; a class's namespace (each class of its MRO that is the reader's); a stand-in's slots."""
    if isinstance(value, types.FunctionType):
        return (dict(value.__dict__), value.__defaults__, value.__kwdefaults__, value.__code__)
    if isinstance(value, type):
        return [dict(vars(c)) for c in value.__mro__ if c.__module__ == pytorch_reader.__name__]
    if isinstance(value, pytorch_reader._Frozen):
        return [(s, object.__getattribute__(value, s)) for c in type(value).__mro__ for s in getattr(c, "__slots__", ())]
    return value


SHARED = [
    pytorch_reader._Frozen, pytorch_reader._Stated, pytorch_reader.PickledObject, pytorch_reader._OrderedDict,
    pytorch_reader._NumpyDtype, pytorch_reader._TensorRef, pytorch_reader._Storage, pytorch_reader._StorageType,
    pytorch_reader._Allowed, type(pytorch_reader._Frozen), *pytorch_reader._MARKERS.values(),
]  # fmt: skip


def assert_data_or_frozen(root: object) -> None:
    """Every object reachable from ``root`` is plain data (numpy arrays and scalars included) or
    one of the reader's stand-ins, and that stand-in refuses new attributes; nothing is callable."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        assert not callable(value), f"a callable in a result: {value!r}"
        if type(value) in (type(None), bool, int, float, complex, str, bytes, bytearray, np.ndarray) or isinstance(value, np.generic):
            continue
        if type(value) in (dict, collections.OrderedDict, pytorch_reader._OrderedDict):
            stack += [*dict.keys(value), *dict.values(value)]  # type: ignore[arg-type]
            assert not getattr(value, "__dict__", None), f"attributes on a dict: {vars(value)}"
            if type(value) is pytorch_reader._OrderedDict:
                assert_refuses_attributes(value)
            continue
        if type(value) in (list, tuple, set, frozenset):
            stack += list(value)  # type: ignore[call-overload]
            continue
        assert isinstance(value, pytorch_reader._Frozen), f"neither data nor a stand-in: {type(value)}"
        assert not hasattr(value, "__dict__")
        assert_refuses_attributes(value)
        if isinstance(value, pytorch_reader._Stated):
            try:
                stack.append(object.__getattribute__(value, "state"))
            except AttributeError:
                pass


def assert_refuses_attributes(value: object) -> None:
    for name in ("__array_interface__", "state_dict", "__class__"):
        with pytest.raises(AttributeError):
            setattr(value, name, 1)


def load_everywhere(program: tuple[list[tuple[Any, ...]], list[int]], tables: list[tuple[Any, object]], results: list[object]) -> None:
    """Grow ``program`` statement by statement, keeping each one that some reader unpickles (one
    that fails would end the load of every later one), then unpickle the grown program with each
    slot as the result, and with the chosen slots; each as DCP's metadata and as a ``torch.save``
    zip. Records the tables of allowlisted objects each load was handed and every object an
    unpickling returned."""
    real_globals, real_unpickle = pytorch_reader._allowed_globals, pytorch_reader._unpickle

    def spy_globals(*args: Any) -> Any:
        table = real_globals(*args)
        tables.append((table, {key: snapshot(value) for key, value in table.items()}))
        return table

    def spy_unpickle(*args: Any, **kwargs: Any) -> object:
        result = real_unpickle(*args, **kwargs)
        results.append(result)
        return result

    extra = dcp_reader._dcp_globals()
    tables.append((extra, {key: snapshot(value) for key, value in extra.items()}))

    def load(pickled: bytes) -> bool:
        loaded = False
        reads: list[Callable[[], object]] = [lambda: unpickle_allowing(pickled, extra), lambda: read_zip(pickled)]
        for read in reads:
            try:
                results.append(read())
                loaded = True
            except PyTorchReadError:
                pass
        return loaded

    statements, chosen = program
    kept: list[tuple[Any, ...]] = []
    with patch.object(pytorch_reader, "_allowed_globals", spy_globals), patch.object(pytorch_reader, "_unpickle", spy_unpickle):
        for statement in statements:
            if load(emit((kept + [statement], []))):
                kept.append(statement)
        for slot in range(len(kept)):
            load(emit((kept, [slot])))
        load(emit(program=(kept, chosen)))


def check_program(program: tuple[list[tuple[Any, ...]], list[int]]) -> None:
    shared = [snapshot(value) for value in SHARED]
    tables: list[tuple[Any, object]] = []
    results: list[object] = []
    load_everywhere(program, tables, results)
    for result in results:
        assert_data_or_frozen(result)
    for table, before in tables:
        assert {key: snapshot(value) for key, value in table.items()} == before
    assert [snapshot(value) for value in SHARED] == shared


@pytest.mark.parametrize("made", ["global", "call_global", "newobj_global"])
@pytest.mark.parametrize("form", ["none", "dict", "slots", "ref"])
def test_build_on_every_allowlisted_object_and_on_what_it_makes_changes_nothing(made: str, form: str) -> None:
    """Each allowlisted global, and what calling it with no arguments (REDUCE, NEWOBJ) makes, in
    the result as it is, or given by BUILD every attribute of ``ATTRIBUTES`` (an
    ``__array_interface__`` as the value; as instance dict or as slot state), or a pickled
    ``OrderedDict`` as its state (a class's own ``__setstate__`` would take it for ``self``)."""
    ordered = NAMES.index(("collections", "OrderedDict"))
    values = [("value", array_interface()), ("call_global", ordered, [])]
    state = {"none": None, "ref": ("ref", 1)}.get(form, (form, dict.fromkeys(ATTRIBUTES, 0)))
    for index in range(len(ALLOWED)):
        statement = (made, index) if made == "global" else (made, index, [])
        check_program(([*values, statement if state is None else ("made", statement, state)], [2, 1]))


def test_build_on_a_stand_in_class_cannot_make_its_instances_setstate_take_another_object() -> None:
    # Namespace.__setstate__ looked up on the class is a plain function: called with an
    # OrderedDict as ``self``, it would set an attribute on the OrderedDict.
    ordered = glob("collections", "OrderedDict") + b")Rq\x00"
    attack = b"\x80\x02" + ordered + b"0" + glob("argparse", "Namespace") + b"h\x00b0}(" + text("sd") + b"h\x00u."
    with pytest.raises(PyTorchReadError, match="read-only"):
        unpickle_allowing(attack, {})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(program=PROGRAMS)
def test_every_unpickled_result_is_data_or_a_frozen_stand_in_and_no_allowlisted_object_changes(
    program: tuple[list[tuple[Any, ...]], list[int]],
) -> None:
    check_program(program)


def test_generated_programs_load_often_enough_to_test_something() -> None:
    """Guards the property test: a good share of generated pickles load, holding stand-ins,
    tensors and containers changed by BUILD / SETITEM / APPEND."""
    loaded = 0
    runs = 100

    @settings(max_examples=runs, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(program=PROGRAMS)
    def run(program: tuple[list[tuple[Any, ...]], list[int]]) -> None:
        nonlocal loaded
        results: list[object] = []
        load_everywhere(program, [], results)
        loaded += any(isinstance(r, dict) and r.get("r") for r in results)  # type: ignore[union-attr]

    run()
    assert loaded > runs // 10
