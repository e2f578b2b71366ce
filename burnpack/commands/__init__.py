"""The ``burnpack`` subcommands that are command-line only (``pack``, ``diff``, ``inspect``...).

Library modules (``burnpack.core.spec``, ``burnpack.core.diff``...) hold the logic; the modules here parse
arguments, print, and turn failures into the one error style of :mod:`burnpack.commands.common`.
"""
