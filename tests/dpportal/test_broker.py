"""The embedded broker's messages appear whole (dpportal/broker.py): kombu's filesystem channel creates
the message file and then writes into it, so a polling consumer could take an empty file, fail to decode
it and stop consuming. These tests watch the queue folder at the moment a message is written."""

from __future__ import annotations

import os

import pytest
from kombu import Connection
from kombu.transport import filesystem

from dpportal import broker


def _connection(tmp_path, transport):
    folder = tmp_path / "queue"
    folder.mkdir(exist_ok=True)
    opts = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(tmp_path / "processed"),
        "store_processed": False,
        "control_folder": str(tmp_path / "control"),
    }  # exchange files; kombu's default is ./control
    (tmp_path / "processed").mkdir(exist_ok=True)
    return Connection("filesystem://", transport=transport, transport_options=opts), folder


def _visible(folder, queue):
    """What a consumer of ``queue`` would pick up now: its message files and their sizes."""
    return {n: os.path.getsize(folder / n) for n in os.listdir(folder) if n.partition(".")[2] == f"{queue}.msg"}


def test_a_message_round_trips_through_the_settings_transport(tmp_path, settings):
    if settings.CELERY_BROKER_URL == "filesystem://":  # the embedded default uses this module's transport
        assert settings.CELERY_BROKER_TRANSPORT == "dpportal.broker:Transport"
    conn, _ = _connection(tmp_path, broker.Transport)
    with conn:
        q = conn.SimpleQueue("jobs")
        q.put({"release": 7})
        msg = q.get(timeout=2)
        assert msg.payload == {"release": 7}
        msg.ack()
        q.close()


def test_no_consumer_can_see_a_message_before_it_is_complete(tmp_path, monkeypatch):
    conn, folder = _connection(tmp_path, broker.Transport)
    seen = []
    real_replace = os.replace

    def watching_replace(src, dst):
        seen.append((_visible(folder, "jobs"), os.path.getsize(src)))  # the moment before the message appears
        return real_replace(src, dst)

    monkeypatch.setattr(broker.os, "replace", watching_replace)
    with conn:
        conn.default_channel._put("jobs", {"release": 7, "pad": "x" * 1000})
    assert seen and seen[0][0] == {} and seen[0][1] > 1000  # nothing visible; the partial file is complete
    assert list(_visible(folder, "jobs").values())[0] == seen[0][1]
    assert not [n for n in os.listdir(folder) if n.endswith(".partial")]


def test_kombus_own_channel_shows_an_empty_message_while_it_writes(tmp_path, monkeypatch):
    """The broken variant this module replaces: at the moment kombu's channel locks its new file (before
    writing), a consumer listing the folder already finds the message, empty."""
    conn, folder = _connection(tmp_path, filesystem.Transport)
    seen = []
    real_lock = filesystem.lock

    def watching_lock(f, flags):
        seen.append(_visible(folder, "jobs"))
        return real_lock(f, flags)

    monkeypatch.setattr(filesystem, "lock", watching_lock)
    with conn:
        conn.default_channel._put("jobs", {"release": 7})
    assert seen and list(seen[0].values()) == [0]


@pytest.mark.parametrize("bad", ["", '{"trunc'])
def test_an_empty_or_torn_file_is_what_kills_kombus_consumer(tmp_path, bad):
    """Why the partial file matters: kombu's consumer decodes whatever it moved away, and raises."""
    conn, folder = _connection(tmp_path, broker.Transport)
    (folder / "1_x.jobs.msg").write_text(bad)
    with conn, pytest.raises(ValueError):
        conn.default_channel._get("jobs")
