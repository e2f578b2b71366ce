"""The container: everything that reads and writes one ``.bpk`` file, below the record layer.

From the bottom up (``tests/test_layers.py`` holds the same ranks and checks them):

1. support — bytes in and out and the helpers every layer uses: ``paths``, ``source`` (local
   byte sources), ``burnpack.remote`` (URLs; public beside the facade), ``sidefile`` (bounded JSON side files), ``atomic``
   (atomic replacement), ``patterns``, ``display``, ``progress``;
2. model — what a file holds: ``burnpack.dtypes`` (public beside the facade), ``frameworks``, ``metadata``, ``legacy``, ``table``,
   ``tensor``, ``slices``, ``strict``, and ``burnpack.quant`` (public beside the facade);
3. ``plan`` — the one read plan;
4. ``reader`` and ``writer`` (neither imports the other);
5. tools over whole packs: ``dump``, ``diff``, ``spec``, and ``burnpack.torch``.

The CBOR codec below it (``burnpack.codec._cbor``, ``burnpack.codec._generated``) and the exceptions
(``burnpack.errors``) stay beside the package facade.
"""
