"""The topics the worker uses are the ones the chart and `topics create` name, and with
``CG_CREATE_TOPICS=false`` the worker's faust app declares none (no create ACL needed)."""

from __future__ import annotations

import pytest

from stream.kafka_clients import leader_topic, state_topic
from stream.settings import Settings
from stream.worker.app import create_app

pytestmark = pytest.mark.unit


def test_the_leader_topic_name_is_the_one_faust_uses():
    s = Settings(app_id="guard-x")
    app = create_app(s)
    assert leader_topic(s) == app._leader_assignor._leader_topic_name == "guard-x-__assignor-__leader"
    assert state_topic(s) == "guard-x-state"


@pytest.mark.parametrize("create", [True, False])
def test_create_topics_false_turns_faust_topic_declaration_off(create):
    app = create_app(Settings(create_topics=create))
    assert app.conf.topic_allow_declare is create
