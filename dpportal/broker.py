"""The embedded broker: kombu's filesystem transport, with messages that appear whole.

kombu's ``filesystem`` channel (5.x) writes a message by opening ``<time>_<uuid>.<queue>.msg`` in the
queue folder and then writing the payload into it; a consumer polling the folder can pick the file up
between the two, move it away and read zero bytes. The JSON decoder then raises inside the consumer
loop, the worker stops consuming and the message is gone: its job stays "queued" although a worker is
running. Seen once in the suite (``tests/e2e/test_jobs_live.py``, polling every 50 ms,
the fast worker's consumer died on a draw's message). Here a message is written under a name no consumer
matches (``.<uuid>.partial``) and renamed to its queue name when complete: a rename within one folder is
atomic, so a consumer sees the whole message or none. Selected by ``CELERY_BROKER_TRANSPORT`` when no
broker URL is configured (dpportal/settings.py); Redis is unaffected.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        """Put ``payload`` on ``queue``: written in full under a name consumers skip, then renamed."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{uuid.uuid4()}.partial")
        try:
            with open(partial, "wb") as f:
                f.write(dumps(payload).encode())
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
