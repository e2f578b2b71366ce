"""The container: everything that reads and writes one ``.bpk`` file, below the record layer.

From the bottom up (``tests/test_layers.py`` holds the same ranks and checks them):

1. support — bytes in and out and the helpers every layer uses: ``paths``, ``source`` (local
   byte sources), ``remote`` (URLs), ``sidefile`` (bounded JSON side files), ``atomic``
   (atomic replacement), ``patterns``, ``display``, ``progress``, ``limits`` (what every reader
   refuses beyond, and the one wording that lifts it);
2. model — what a file holds: ``dtypes``, ``frameworks``, ``metadata``, ``legacy``, ``table``,
   ``tensor``, ``slices``, ``strict``, and ``quant``;
3. ``plan`` — the one read plan;
4. ``reader`` and ``writer`` (neither imports the other);
5. tools over whole packs: ``dump``, ``diff``, ``spec``, and ``torch`` (the PyTorch bridge).

``_lazy`` gives every package facade its on-first-use attributes. Users reach ``quant``,
``dtypes``, ``remote`` and ``torch`` as ``burnpack.quant`` and so on: thin modules beside the
facade re-export them. Below this layer: the codec (``burnpack.codec``) and the exceptions
(``burnpack.errors``).
"""
