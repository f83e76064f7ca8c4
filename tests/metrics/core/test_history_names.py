"""The name of a history in a kind's section (metrics/core/history_names.py): the external id when no other history
of the study has that name, else DATASET/EXTERNAL_ID, the dataset's "/" written %2F, so that no two histories ever
share a name."""

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


def test_a_dataset_name_with_a_slash_is_written_so_that_no_two_names_meet():
    # "b/c" of A and "c" of A/b would both be A/b/c (their ids are shared with dataset X): the dataset's "/" is %2F
    keys = [("A", "b/c"), ("X", "b/c"), ("A/b", "c"), ("X", "c"), ("A%2Fb", "c"), ("50%", "c")]
    assert history_names(keys) == {
        ("A", "b/c"): "A/b/c", ("X", "b/c"): "X/b/c", ("A/b", "c"): "A%2Fb/c", ("X", "c"): "X/c",
        ("A%2Fb", "c"): "A%252Fb/c", ("50%", "c"): "50%25/c"}


@pytest.mark.parametrize("seed", range(200))
def test_no_two_histories_share_a_name_and_names_are_kept_when_named_again(seed):
    """Random keys over a small alphabet of "/", "%" and letters, so that ids, datasets and qualified names meet."""
    import random

    draw = random.Random(seed)
    word = lambda: "".join(draw.choice("ab/%2F") for _ in range(draw.randint(1, 4)))  # noqa: E731
    keys = {(word(), word()) for _ in range(draw.randint(1, 12))}
    named = history_names(keys)
    assert sorted(named) == sorted(keys) and len(set(named.values())) == len(keys)
    assert all(name == external_id or name.endswith("/" + external_id) for (_d, external_id), name in named.items())
    assert history_names((dataset, name) for (dataset, _id), name in named.items()) == {
        (dataset, name): name for (dataset, _id), name in named.items()}
