"""The worker writes RocksDB and the changelogs itself (stream.tables.TableMap); its key and
value bytes must be exactly faust's, or faust's recovery, standbys and web reads would
not find them. Checked against faust's own table serializers, for any id."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stream.app  # noqa: F401  (builds the app and its tables)
from stream import topology
from stream.tables import encode_key, store_key, store_value

pytestmark = pytest.mark.unit

_ids = st.text(min_size=1, max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(key=st.tuples(_ids, _ids) | st.tuples(_ids) | st.tuples(_ids, st.integers(0, 2**40)), value=_json)
def test_store_bytes_are_fausts_own(key, value) -> None:
    for table in (*topology.tables.values(), topology.journal):
        store = table.data
        assert store_key(key) == store._encode_key(encode_key(key))
        assert store_value(value) == store._encode_value(value)
