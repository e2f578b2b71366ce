"""The ``burnpack`` command line: every subcommand, the record and interop ones included.

``main`` parses the arguments and reports failures (``BurnpackError``, ``OSError`` and
``CommandError`` only, one line each); ``common`` holds the one error style and the rule for
outputs; ``batch`` answers requests line by line; ``diff``, ``inspect``, ``files``, ``pack``,
``view``, ``records`` (``checkpoint inspect``) and ``interop`` (``convert``,
``convert-checkpoint``) parse arguments and print. The logic lives in the layers below.
"""
