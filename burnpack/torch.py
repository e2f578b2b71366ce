"""PyTorch convenience functions shaped like ``safetensors.torch``.

The public path of ``burnpack.core.torch``, where the container layer keeps it."""

from .core.torch import *  # noqa: F403
from .core.torch import __all__ as __all__
