"""The name of a history in a study kind's section (a conversation with sessions: each kind's histories or
trajectories): in the section's report keys, its study bundle's rows and the pages that show one history (each
kind's docs say where; the kinds' loaders apply the rule, docs/architecture.md#study-kinds).

A conversation is (dataset, external id): two datasets may both have ``c-001``. A history is named by its external
id, so that a study whose ids are unique keeps the names it always had; when two histories of the study would have
the same name, each is named ``DATASET/EXTERNAL_ID`` (as ``benchmark.Conversation`` prints itself). The kinds'
loaders name their rows with it, so the bundle's rows carry the names its recompute keys by; applied again to names
it made, it leaves them as they are.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


def history_names(keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(dataset, external id) -> the history's name, for every history of a study (``keys``; repeats are one).
    A name two histories would share is qualified by its dataset, until no two share one; ValueError names the
    histories when even their qualified names meet (a dataset name with a "/" in it can make them meet)."""
    names = {key: key[1] for key in keys}
    while True:
        holders: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key, name in names.items():
            holders[name].append(key)
        bare = [key for shared in holders.values() if len(shared) > 1 for key in shared if names[key] == key[1]]
        if not bare:
            break
        for dataset, external_id in bare:
            names[(dataset, external_id)] = f"{dataset}/{external_id}"
    clashes = sorted(name for name, shared in holders.items() if len(shared) > 1)
    if clashes:
        said = "; ".join(f"{name!r} ({', '.join(f'dataset {d!r}' for d, _ in sorted(holders[name]))})"
                         for name in clashes)
        raise ValueError(f"two histories of the study have one name: {said}; rename one of the datasets")
    return names
