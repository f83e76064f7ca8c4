"""The name of a history in a study kind's section (a conversation with sessions: each kind's histories or
trajectories): in the section's report keys, its study bundle's rows and the pages that show one history (each
kind's docs say where; the kinds' loaders apply the rule, docs/architecture.md#study-kinds).

A conversation is (dataset, external id): two datasets may both have ``c-001``. A history is named by its external
id, so that a study whose ids are unique keeps the names it always had; when two histories of the study would have
the same name, each is named ``DATASET/EXTERNAL_ID`` (as ``benchmark.Conversation`` prints itself). The kinds'
loaders name their rows with it, so the bundle's rows carry the names its recompute keys by; applied again to names
it made, it leaves them as they are.

A dataset's own name may hold a "/": in a qualified name it is written ``%2F`` (and a "%" ``%25``), so the first "/"
of a qualified name ends its dataset and no two histories can share one (``b/c`` of ``A`` is ``A/b/c``, ``c`` of
``A/b`` is ``A%2Fb/c``). A dataset without either character is written as it is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


def history_names(keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(dataset, external id) -> the history's name, for every history of a study (``keys``; repeats are one).
    A name two histories would share is qualified by its dataset, until no two share one. The loop ends: a qualified
    name is never shared (its dataset, written without a "/", and its id are the history's key), so each pass
    qualifies at least one bare name, and only bare names are left to clash."""
    names = {key: key[1] for key in keys}
    while True:
        holders: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key, name in names.items():
            holders[name].append(key)
        bare = [key for shared in holders.values() if len(shared) > 1 for key in shared if names[key] == key[1]]
        if not bare:
            break
        for dataset, external_id in bare:
            names[(dataset, external_id)] = f"{_dataset_written(dataset)}/{external_id}"
    return names


def _dataset_written(dataset: str) -> str:
    """A dataset's name as a qualified name's first part: "%" as ``%25`` and "/" as ``%2F`` (in this order, so that
    no two names are written alike), anything else as it is."""
    return dataset.replace("%", "%25").replace("/", "%2F")
