"""QFloat tensors: Burn's quantized byte layout, dequantizing it and quantizing as Burn's CPU backends do.

The public path of ``burnpack.core.quant``, where the container layer keeps it."""

from .core.quant import *  # noqa: F403
from .core.quant import __all__ as __all__
