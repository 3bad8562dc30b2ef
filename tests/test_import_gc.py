"""core/import_gc.py: the collector off while TileLang imports, what the import made frozen, the collector on again."""

from __future__ import annotations

import gc

import pytest
from tilelang_churn.core import import_gc


def test_the_block_runs_without_the_collector_and_leaves_what_it_made_frozen():
    frozen_before = gc.get_freeze_count()
    with import_gc.collector_off():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]  # tracked objects, as an import makes
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + len(made)


def test_a_raise_in_the_block_still_turns_the_collector_on_and_an_off_collector_stays_off():
    with pytest.raises(ImportError), import_gc.collector_off():
        raise ImportError("no TileLang here")
    assert gc.isenabled()
    gc.disable()
    try:
        with import_gc.collector_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
