"""``burnpack diff`` and ``burnpack view`` read a URL as a .bpk, as ``load`` does."""

from __future__ import annotations

import json

import numpy as np

import burnpack
from burnpack.cli.main import main


def test_diff_reads_a_url_as_a_pack(http_server, tmp_path, capsys):
    burnpack.save({"w": np.ones(3, np.float32)}, tmp_path / "a.bpk")
    http_server.files["/b.bpk"] = burnpack.save_bytes({"w": np.array([1, 2, 1], np.float32)})
    assert main(["diff", str(tmp_path / "a.bpk"), http_server.url("/b.bpk"), "--json"]) == 1
    changed = json.loads(capsys.readouterr().out)["changed"]
    assert [(c["name"], c["elements_differ"]) for c in changed] == [("w", 1)]
