"""The generator checks every number a vector's description states against the vector's file."""

from __future__ import annotations

import pytest

from conformance.generate import build_corpus, check_claims
from conformance.model import Content, Desc


def test_every_vector_of_the_corpus_has_what_its_description_claims():
    for case in build_corpus().readers:
        if not case.runtime:
            check_claims(case.id, case.description, *case.build())


@pytest.mark.parametrize(
    "description, problem",
    [
        ("pre-alignment file whose 10 + M is 256", "10 \\+ M 256.*has 216"),
        ("the first 12 bytes of a valid file", "file length 12"),
        ("two tensors back to back", "tensor count 2"),
    ],
)
def test_a_description_that_misstates_its_file_fails_generation(description, problem):
    data = b"NRUB\x01\x00" + (206).to_bytes(4, "little") + bytes(206 + 12)
    content = Content(tensors={"a": Desc("F32", [3], (0, 12))})
    with pytest.raises(AssertionError, match=problem):
        check_claims("legacy/x", description, data, content)


def test_the_pre_alignment_file_aligned_by_chance_is_in_the_corpus():
    cases = {case.id: case for case in build_corpus().readers}
    data, content = cases["legacy/prealignment_metadata_end_256"].build()
    assert 10 + int.from_bytes(data[6:10], "little") == 256 and len(content.tensors) == 1
