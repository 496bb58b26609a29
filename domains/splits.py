"""Which accepted tasks are for training and which are held out: one rule, used by the published
dataset and τ²-bench packages and by every reader of an output folder (the trainer, `toolscale eval`).
"""

from __future__ import annotations

import random

SPLITS = ("train", "test")
TEST_FRACTION = 0.1


def assign_splits(task_ids: dict[str, list[str]], seed: int, test_fraction: float = TEST_FRACTION) -> dict[str, str]:
    """{task id: "train" | "test"}, stratified by domain: per domain a seeded shuffle of its sorted
    ids sends round(n * test_fraction) of them (at least one when the domain has two) to test."""
    splits = {}
    for domain, ids in sorted(task_ids.items()):
        ordered = sorted(ids)
        random.Random(f"toolscale-split:{seed}:{domain}").shuffle(ordered)
        n_test = round(len(ordered) * test_fraction) if len(ordered) > 1 else 0
        n_test = min(max(n_test, 1 if len(ordered) > 1 and test_fraction > 0 else 0), len(ordered) - 1)
        splits.update({task_id: "test" if i < n_test else "train" for i, task_id in enumerate(ordered)})
    return splits
