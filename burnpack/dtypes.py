"""Element types: Burn's ``DType`` ↔ numpy / torch / safetensors, element sizes, Debug rendering and the
short names people read (``F32``, ``QFloat(Q8S block 32 F16)``).

The public path of ``burnpack.core.dtypes``, where the container layer keeps it."""

from .core.dtypes import *  # noqa: F403
from .core.dtypes import __all__ as __all__
