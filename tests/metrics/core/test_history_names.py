"""The name of a history in a kind's section (metrics/core/history_names.py): the external id when no other history
of the study has that name, else DATASET/EXTERNAL_ID; a name even the datasets cannot tell apart is refused."""

from __future__ import annotations

import pytest

from metrics.core.history_names import history_names


def test_unique_ids_are_the_names():
    keys = [("A", "c-001"), ("A", "c-002"), ("B", "c-003")]
    assert history_names(keys) == {key: key[1] for key in keys}


def test_an_id_of_two_datasets_is_named_by_its_dataset_in_both():
    assert history_names([("A", "c-001"), ("B", "c-001"), ("B", "c-002"), ("A", "c-001")]) == {
        ("A", "c-001"): "A/c-001", ("B", "c-001"): "B/c-001", ("B", "c-002"): "c-002"}


def test_an_id_that_is_another_historys_qualified_name_is_qualified_too():
    # c in A and B become A/c and B/c; the id "A/c" of Z would meet A/c, so it is Z/A/c
    assert history_names([("A", "c"), ("B", "c"), ("Z", "A/c")]) == {
        ("A", "c"): "A/c", ("B", "c"): "B/c", ("Z", "A/c"): "Z/A/c"}


def test_names_are_left_as_they_are_when_named_again():
    named = history_names([("A", "c"), ("B", "c"), ("Z", "A/c"), ("A", "d")])
    assert history_names((dataset, name) for (dataset, _id), name in named.items()) == {
        (dataset, name): name for (dataset, _id), name in named.items()}


def test_a_name_the_datasets_cannot_tell_apart_is_refused_naming_them():
    # "b/c" of A and "c" of A/b both qualify to A/b/c (their ids are shared with dataset X)
    keys = [("A", "b/c"), ("X", "b/c"), ("A/b", "c"), ("X", "c")]
    with pytest.raises(ValueError, match=r"'A/b/c' \(dataset 'A', dataset 'A/b'\); rename one of the datasets"):
        history_names(keys)
